#include "evaluator/process/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>

#include "absl/strings/str_cat.h"
#include "evaluator/process/framing.h"

extern char** environ;

namespace kerneleval::process {
namespace {

void SetLimit(int resource, uint64_t value) {
  rlimit limit{value, value};
  ::setrlimit(resource, &limit);
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigabbrev_np(sig);
    return absl::StrCat("killed by signal ", sig, " (SIG", name ? name : "?", ")");
  }
  return "ended";
}

}  // namespace

void IgnoreSigpipe() { ::signal(SIGPIPE, SIG_IGN); }

std::string DefaultWorkerBinary() {
  if (const char* env = std::getenv("KERNELEVAL_WORKER"); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto beside = self.parent_path() / "kerneleval-worker";
    if (std::filesystem::exists(beside, ec)) return beside.string();
  }
#ifdef KERNELEVAL_BUILD_WORKER_PATH
  return KERNELEVAL_BUILD_WORKER_PATH;
#else
  return "kerneleval-worker";
#endif
}

namespace {

// The worker binary's file, opened once per path by this process and
// executed from that descriptor ever after (fexecve): workers started later
// run the same binary as the first, even when the file at the path was
// replaced meanwhile (an upgrade or a rebuild under a running server; a
// worker started while the linker was writing it failed with "Bad file
// descriptor" or "not executable"). Descriptors stay open for the process's
// life: a handful of paths at most.
absl::StatusOr<int> BinaryDescriptor(const std::string& binary) {
  static std::mutex mutex;
  static std::map<std::string, int>* descriptors = new std::map<std::string, int>();
  std::lock_guard lock(mutex);
  if (auto it = descriptors->find(binary); it != descriptors->end()) return it->second;
  if (::access(binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("worker binary ", binary, " is not executable: ", std::strerror(errno)));
  }
  const int opened = ::open(binary.c_str(), O_PATH | O_CLOEXEC);
  // Above the channel's number, which the child dup2()s over before exec.
  const int fd = opened < 0 ? -1 : ::fcntl(opened, F_DUPFD_CLOEXEC, kWorkerChannelFd + 1);
  if (fd < 0) {
    const int error = errno;
    if (opened >= 0) ::close(opened);
    return absl::FailedPreconditionError(
        absl::StrCat("worker binary ", binary, " cannot be opened: ", std::strerror(error)));
  }
  ::close(opened);
  (*descriptors)[binary] = fd;
  return fd;
}

}  // namespace

absl::StatusOr<WorkerProcess> WorkerProcess::Start(const WorkerOptions& options) {
  const std::string binary = options.binary.empty() ? DefaultWorkerBinary() : options.binary;
  absl::StatusOr<int> binary_descriptor = BinaryDescriptor(binary);
  if (!binary_descriptor.ok()) return binary_descriptor.status();
  const int binary_fd = *binary_descriptor;
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return absl::ResourceExhaustedError(absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  // Everything the child needs is prepared before fork: between fork and exec
  // only async-signal-safe calls are allowed (the parent is multithreaded).
  std::vector<std::string> args = {binary, options.mode};
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // extra_env replaces inherited variables of its names (getenv returns the
  // first match: an inherited CUDA_LAUNCH_BLOCKING=1 ahead of the backend's
  // =0 would have won); a bare NAME removes the variable.
  auto name_of = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string_view inherited(*e);
    const bool replaced =
        std::any_of(options.extra_env.begin(), options.extra_env.end(),
                    [&](const std::string& extra) { return name_of(extra) == name_of(inherited); });
    if (!replaced) env_strings.emplace_back(inherited);
  }
  for (size_t i = 0; i < options.extra_env.size(); ++i) {
    const std::string& extra = options.extra_env[i];
    // The last entry of a name wins.
    const bool overridden = std::any_of(
        options.extra_env.begin() + static_cast<std::ptrdiff_t>(i) + 1, options.extra_env.end(),
        [&](const std::string& later) { return name_of(later) == name_of(extra); });
    if (!overridden && extra.find('=') != std::string::npos) env_strings.push_back(extra);
  }
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* binary_path = binary.c_str();
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return absl::ResourceExhaustedError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::setpgid(0, 0);  // own group: Kill() reaches grandchildren (host compilers)
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(fds[1], kWorkerChannelFd);  // dup2 clears FD_CLOEXEC on the copy
    if (options.address_space_bytes) SetLimit(RLIMIT_AS, options.address_space_bytes);
    SetLimit(RLIMIT_CORE, 0);
    SetLimit(RLIMIT_FSIZE, options.max_file_bytes);
    SetLimit(RLIMIT_NOFILE, options.max_open_files);
    ::signal(SIGPIPE, SIG_DFL);
    // The server blocks the signals it waits for (SIGTERM, SIGINT, SIGHUP);
    // a worker starts with none blocked, as any process would.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Not close-on-exec for this exec: the kernel refuses to run a script
    // (a wrapper worker) from a descriptor that would be gone by then.
    ::fcntl(binary_fd, F_SETFD, 0);
    ::fexecve(binary_fd, argv.data(), envp.data());
    // A kernel (or gVisor, which half of the lent GPU machines run) that
    // cannot execute an O_PATH descriptor: the path, as any launcher would,
    // while it is still the file first started (a binary replaced since, by
    // an upgrade or a rebuild, is not mixed in: the worker does not start).
    struct stat pinned, at_path;
    if (::fstat(binary_fd, &pinned) == 0 && ::stat(binary_path, &at_path) == 0 &&
        pinned.st_dev == at_path.st_dev && pinned.st_ino == at_path.st_ino) {
      ::fcntl(binary_fd, F_SETFD, FD_CLOEXEC);
      ::execve(binary_path, argv.data(), envp.data());
    }
    ::_exit(127);
  }
  ::close(fds[1]);
  ::setpgid(pid, pid);  // also from the parent, to win the race with Kill()
  return WorkerProcess(pid, fds[0]);
}

WorkerProcess::WorkerProcess(WorkerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      fd_(std::exchange(other.fd_, -1)),
      exit_description_(std::move(other.exit_description_)),
      term_signal_(other.term_signal_) {}

WorkerProcess& WorkerProcess::operator=(WorkerProcess&& other) noexcept {
  if (this != &other) {
    Kill();
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
    exit_description_ = std::move(other.exit_description_);
    term_signal_ = other.term_signal_;
  }
  return *this;
}

WorkerProcess::~WorkerProcess() { Kill(); }

void WorkerProcess::Reap(bool block) noexcept {
  if (pid_ <= 0) return;
  int status = 0;
  const pid_t rc = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (rc == pid_) {
    exit_description_ = DescribeWaitStatus(status);
    term_signal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    pid_ = -1;
  } else if (rc < 0 && errno == ECHILD) {
    pid_ = -1;
  }
}

void WorkerProcess::Kill() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    const int already = term_signal_;
    Reap(/*block=*/true);
    (void)already;
  }
}

bool WorkerProcess::Alive() noexcept {
  Reap(/*block=*/false);
  return pid_ > 0;
}

absl::Status WorkerProcess::DiedError(const absl::Status& cause) {
  // Give the kernel a moment to deliver the exit status after the socket closed.
  for (int i = 0; i < 200 && pid_ > 0; ++i) {
    Reap(/*block=*/false);
    if (pid_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (pid_ > 0) {
    ::kill(-pid_, SIGKILL);
    Reap(/*block=*/true);
  }
  return absl::UnavailableError(absl::StrCat(
      "worker ", exit_description_.empty() ? std::string(cause.message()) : exit_description_));
}

absl::Status WorkerProcess::Send(const google::protobuf::MessageLite& message) {
  if (fd_ < 0) return absl::FailedPreconditionError("worker is not running");
  absl::Status s = WriteMessage(fd_, message);
  if (!s.ok()) return DiedError(s);
  return s;
}

absl::Status WorkerProcess::Receive(google::protobuf::MessageLite* message, absl::Time deadline) {
  if (fd_ < 0) return absl::FailedPreconditionError("worker is not running");
  absl::Status s = ReadMessage(fd_, message, deadline);
  if (absl::IsUnavailable(s) || absl::IsDataLoss(s)) return DiedError(s);
  return s;
}

absl::Status WorkerProcess::Call(const google::protobuf::MessageLite& request,
                                 google::protobuf::MessageLite* reply, absl::Time deadline) {
  if (absl::Status s = Send(request); !s.ok()) return s;
  absl::Status s = Receive(reply, deadline);
  if (absl::IsDeadlineExceeded(s)) Kill();
  return s;
}

}  // namespace kerneleval::process
