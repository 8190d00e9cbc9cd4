#include "evaluator/cpu/runner.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "evaluator/cpu/device_memory.h"
#include "evaluator/cpu/loaded_modules.h"
#include "evaluator/data/dtype.h"
#include "evaluator/process/framing.h"
#include "evaluator/process/worker_process.h"
#include "evaluator/sandbox/sandbox.h"

namespace kerneleval::cpu {
namespace {

constexpr int kChannelFd = 3;
constexpr int kReportFd = 4;
constexpr int kSharedBuffersFd = 5;  // the job's buffers

// ---- Child side.
RunnerReport* child_report = nullptr;

void CopyMessage(const std::string& message) {
  if (!child_report) return;
  const size_t n = std::min(message.size(), sizeof(child_report->message) - 1);
  std::memcpy(child_report->message, message.data(), n);
  child_report->message[n] = '\0';
}

[[noreturn]] void ExitWith(int code, const std::string& message) {
  CopyMessage(message);
  ::_exit(code);
}

void OnKernelFatal(const char* message) {
  CopyMessage(message);
  ::_exit(kKernelErrorExit);
}

constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};

// Set by the first thread whose fault handler runs, and once it has recorded.
std::atomic<bool> fault_claimed{false};
std::atomic<bool> fault_recorded{false};

// Records where a fault happened, then restores the default actions:
// returning re-executes the faulting instruction, which ends the process with
// the same signal. Only the first faulting thread records. Every thread of a
// grid that writes past a buffer faults at about the same time, and with
// SA_RESETHAND a second thread's fault took the default action while the
// first was still recording, so the process died without a report (CI,
// 2026-12-07: "out-of-bounds access?" with no buffer named). A later thread
// now waits until the first has recorded, then returns to its own fault,
// which ends the process too.
void OnFault(int signal, siginfo_t* info, void*) {
  if (fault_claimed.exchange(true)) {
    const timespec pause_1ms{0, 1000000};
    while (!fault_recorded.load()) ::nanosleep(&pause_1ms, nullptr);  // async-signal-safe
    return;
  }
  if (child_report) {
    child_report->fault_address = reinterpret_cast<uint64_t>(info->si_addr);
    child_report->fault_code = info->si_code;
    child_report->fault_in_shared =
        FindDynamicSharedFault(child_report->fault_address, &child_report->fault_shared_offset,
                               &child_report->fault_shared_requested);
    child_report->fault_in_stack =
        FindStackOverflow(child_report->fault_address, &child_report->fault_stack_bytes);
    child_report->fault_signal.store(signal);
  }
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  for (int fault_signal : kFaultSignals) ::sigaction(fault_signal, &default_action, nullptr);
  fault_recorded.store(true);
}

void InstallFaultHandlers() {
  static char alternate_stack[64 << 10];
  stack_t stack{};
  stack.ss_sp = alternate_stack;
  stack.ss_size = sizeof(alternate_stack);
  ::sigaltstack(&stack, nullptr);
  struct sigaction action {};
  action.sa_sigaction = OnFault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int signal : kFaultSignals) ::sigaction(signal, &action, nullptr);
}

struct Library {
  std::unordered_map<std::string, const char* (*)(const kerneleval_cpu_launch*)> launchers;
  // Its writable segments (`__device__` variables): checked for races
  // between blocks, with the case's buffers.
  std::vector<RaceCheckedRange> writable_data;
};

// The writable PT_LOAD segments of the object loaded from `path`.
std::vector<RaceCheckedRange> WritableSegments(const std::string& path) {
  std::vector<RaceCheckedRange> ranges;
  const std::optional<LoadedModule> module =
      FindLoadedModule([&path](const LoadedModule& m) { return m.path == path; });
  if (!module) return ranges;
  for (const LoadedSegment& segment : module->SegmentsOf(PT_LOAD, PF_W)) {
    ranges.push_back({.begin = segment.begin,
                      .end = segment.begin + segment.bytes,
                      .element_bytes = 0,
                      .name = "the program's __device__ data"});
  }
  return ranges;
}

// Sandbox, then load: the library's static initialisers are kernel code too.
Library SandboxAndLoad(const RunnerConfig& config, int channel_fd) {
  sandbox::FilesystemPolicy policy;
  policy.read_only = {config.library_path};
  // Both where both work, as for compiles: Landlock alone refuses opens but
  // not stat(), which would tell kernel code any host file's size and
  // times (put into an output, they reach the verdict's first mismatch);
  // in a mount namespace holding only the library, nothing else exists.
  if (absl::Status s = sandbox::RestrictFilesystemUsing(
                           policy, sandbox::FilesystemMechanism::kLandlockAndMountNamespace)
                           .status();
      !s.ok()) {
    ExitWith(kSetupFailedExit, absl::StrCat("sandbox (file system): ", s.message()));
  }
  if (absl::Status s = sandbox::RestrictSyscalls(sandbox::SyscallProfile::kKernelCode); !s.ok()) {
    ExitWith(kSetupFailedExit, absl::StrCat("sandbox (system calls): ", s.message()));
  }
  InstallFaultHandlers();
  const kerneleval_cpu_runtime* runtime = InstallDeviceRuntime(config.runtime, OnKernelFatal);
  // Every thread of this process is started: kernel code gets none of its
  // own (one could work between the measured runs, or a thousand exhaust
  // the host's pids).
  if (absl::Status s = sandbox::DenyNewThreads(); !s.ok()) {
    ExitWith(kSetupFailedExit, absl::StrCat("sandbox (threads): ", s.message()));
  }
  // From here on the submission's code runs in this process: whatever
  // happens after this frame is the kernel's doing, not the harness's.
  if (!process::WriteFrame(channel_fd, kLoadingFrame).ok()) ::_exit(kSetupFailedExit);
  void* handle = ::dlopen(config.library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = ::dlerror();
    ExitWith(kLoadFailedExit, error ? error : "dlopen failed");
  }
  auto init = reinterpret_cast<uint32_t (*)(const kerneleval_cpu_runtime*)>(
      ::dlsym(handle, "kerneleval_cpu_init"));
  if (!init || init(runtime) != KERNELEVAL_CPU_ABI_VERSION) {
    ExitWith(kLoadFailedExit, "the compiled library does not match the runtime's ABI");
  }
  Library library;
  for (size_t i = 0; i < config.kernel_names.size(); ++i) {
    auto launcher = reinterpret_cast<const char* (*)(const kerneleval_cpu_launch*)>(
        ::dlsym(handle, absl::StrCat("kerneleval_cpu_launch_", i).c_str()));
    if (!launcher) ExitWith(kLoadFailedExit, "a kernel launcher is missing from the library");
    library.launchers[config.kernel_names[i]] = launcher;
  }
  library.writable_data = WritableSegments(config.library_path);
  return library;
}

// The buffers of one plan on one case or input set: a region of the worker's
// memfd (the worker fills and reads them).
class PlanMemory {
 public:
  PlanMemory(const internal::ResolvedPlan& plan, int fd, uint64_t region_offset) : plan_(&plan) {
    const SharedBufferLayout layout = LayoutFor(plan);
    for (int i = 0; i < plan.buffers_size(); ++i) {
      const internal::BufferSpec& spec = plan.buffers(i);
      const size_t bytes = spec.elements() * data::DTypeSize(spec.dtype());
      absl::StatusOr<GuardedBuffer> buffer = GuardedBuffer::MapShared(
          fd, region_offset + layout.offsets[static_cast<size_t>(i)], bytes);
      if (!buffer.ok()) {
        ExitWith(kSetupFailedExit, absl::StrCat("buffer '", spec.name(), "' (", bytes,
                                                " bytes): ", buffer.status().message()));
      }
      entries_.push_back(Entry{&spec, *std::move(buffer)});
    }
    for (size_t i = 0; i < entries_.size(); ++i) by_name_[entries_[i].spec->name()] = i;
  }

  // The buffers as the race check names them, then `more`.
  std::vector<RaceCheckedRange> RaceCheckedRanges(const std::vector<RaceCheckedRange>& more) const {
    std::vector<RaceCheckedRange> ranges;
    for (const Entry& e : entries_) {
      const auto begin = reinterpret_cast<uint64_t>(e.buffer.data());
      ranges.push_back({.begin = begin,
                        .end = begin + e.buffer.size(),
                        .element_bytes = static_cast<uint32_t>(data::DTypeSize(e.spec->dtype())),
                        .name = e.spec->name()});
    }
    ranges.insert(ranges.end(), more.begin(), more.end());
    return ranges;
  }

  void Register(RunnerReport* report) const {
    uint32_t count = 0;
    for (const Entry& e : entries_) {
      if (count == RunnerReport::kMaxBuffers) break;
      RunnerReport::BufferRange& range = report->buffers[count++];
      range.begin = reinterpret_cast<uint64_t>(e.buffer.data());
      range.end = range.begin + e.buffer.size();
      std::snprintf(range.name, sizeof(range.name), "%s", e.spec->name().c_str());
    }
    report->buffer_count = count;
  }

  void Run(const Library& library, RunnerReport* report) {
    std::vector<kerneleval_cpu_arg> args;
    for (int l = 0; l < plan_->launches_size(); ++l) {
      const internal::ResolvedLaunch& launch = plan_->launches(l);
      report->launch_index.store(l);
      args.assign(static_cast<size_t>(launch.args_size()), kerneleval_cpu_arg{});
      for (int a = 0; a < launch.args_size(); ++a) {
        const internal::KernelArg& arg = launch.args(a);
        kerneleval_cpu_arg& out = args[static_cast<size_t>(a)];
        switch (arg.value_case()) {
          case internal::KernelArg::kBuffer: {
            auto it = by_name_.find(arg.buffer());
            if (it == by_name_.end()) {
              ExitWith(kSetupFailedExit, absl::StrCat("unknown buffer ", arg.buffer()));
            }
            out.kind = KERNELEVAL_CPU_ARG_POINTER;
            out.pointer = entries_[it->second].buffer.data();
            break;
          }
          case internal::KernelArg::kScalar:
            out.kind = KERNELEVAL_CPU_ARG_INTEGER;
            out.integer = arg.scalar();
            break;
          case internal::KernelArg::kReal:
            out.kind = KERNELEVAL_CPU_ARG_REAL;
            out.real = arg.real();
            break;
          default:
            ExitWith(kSetupFailedExit, "a kernel argument without a value");
        }
      }
      auto dim = [](const google::protobuf::RepeatedField<uint32_t>& v, int i) {
        return i < v.size() ? v[i] : 1u;
      };
      kerneleval_cpu_launch config{};
      config.grid = {dim(launch.grid(), 0), dim(launch.grid(), 1), dim(launch.grid(), 2)};
      config.block = {dim(launch.block(), 0), dim(launch.block(), 1), dim(launch.block(), 2)};
      config.dynamic_shared_bytes = launch.dynamic_shared_bytes();
      config.arg_count = static_cast<uint32_t>(args.size());
      config.args = args.data();
      auto launcher = library.launchers.find(launch.kernel());
      if (launcher == library.launchers.end()) {
        ExitWith(kSetupFailedExit, absl::StrCat("no launcher for kernel ", launch.kernel()));
      }
      if (const char* error = launcher->second(&config)) {
        ExitWith(LastGridRaced() ? kKernelRaceExit : kKernelErrorExit,
                 absl::StrCat("launch ", l, " (", launch.kernel(),
                              "): ", std::string(error, strnlen(error, 1024))));
      }
    }
    report->launch_index.store(-1);
  }

 private:
  struct Entry {
    const internal::BufferSpec* spec;
    GuardedBuffer buffer;
  };
  const internal::ResolvedPlan* plan_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> by_name_;
};

std::string SignalName(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  return absl::StrCat("signal ", signal, " (SIG", abbreviation ? abbreviation : "?", ")");
}

std::string DescribeFault(const RunnerReport& report) {
  const uint64_t address = report.fault_address;
  if (report.fault_in_shared) {
    return absl::StrFormat(
        "at byte %d of dynamic shared memory, past the %d bytes the launch asked for (the third "
        "<<<>>> value of its @launch)",
        report.fault_shared_offset, report.fault_shared_requested);
  }
  if (report.fault_in_stack) {
    return absl::StrFormat(
        "a stack overflow: a GPU thread's local variables (arrays, recursion) took more than "
        "the %d KiB of stack each thread of this launch has on the CPU backend (%d MiB shared "
        "by the threads of up to %d blocks, at most %d KiB each)",
        report.fault_stack_bytes >> 10, kFiberStackBudgetBytes >> 20, kMaxPoolThreads,
        kMaxFiberStackBytes >> 10);
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint32_t count = std::min<uint32_t>(report.buffer_count, RunnerReport::kMaxBuffers);
  for (uint32_t i = 0; i < count; ++i) {
    const RunnerReport::BufferRange& b = report.buffers[i];
    std::string name(b.name, strnlen(b.name, sizeof(b.name)));
    if (address >= b.end && address < b.end + page + 16) {
      return absl::StrFormat("at byte %d past the end of buffer '%s' (%d bytes)", address - b.end,
                             name, b.end - b.begin);
    }
    if (address < b.begin && address + 2 * page >= b.begin) {
      return absl::StrFormat("%d bytes before the start of buffer '%s'", b.begin - address, name);
    }
  }
  if (address < 65536) return absl::StrFormat("near a null pointer (address 0x%x)", address);
  return absl::StrFormat(
      "at address 0x%x, outside every buffer: a wild pointer, or a stack overflow (large local "
      "arrays, deep recursion)?",
      address);
}

}  // namespace

absl::StatusOr<RunnerProcess> RunnerProcess::Start(const std::string& worker_binary,
                                                   const RunnerConfig& config,
                                                   const google::protobuf::MessageLite& job,
                                                   int shared_buffers_fd) {
  const int report_fd = ::memfd_create("kerneleval-runner-report", MFD_CLOEXEC);
  if (report_fd < 0 || ::ftruncate(report_fd, sizeof(RunnerReport)) != 0) {
    if (report_fd >= 0) ::close(report_fd);
    return absl::ResourceExhaustedError(absl::StrCat("memfd: ", std::strerror(errno)));
  }
  void* page =
      ::mmap(nullptr, sizeof(RunnerReport), PROT_READ | PROT_WRITE, MAP_SHARED, report_fd, 0);
  if (page == MAP_FAILED) {
    ::close(report_fd);
    return absl::ResourceExhaustedError(absl::StrCat("mmap: ", std::strerror(errno)));
  }
  auto* report = new (page) RunnerReport();
  report->case_index.store(-1);
  report->launch_index.store(-1);
  report->fault_signal.store(0);
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    ::munmap(page, sizeof(RunnerReport));
    ::close(report_fd);
    return absl::ResourceExhaustedError(absl::StrCat("socketpair: ", std::strerror(errno)));
  }
  // Everything exec needs is prepared before fork.
  std::vector<std::string> args = {worker_binary, "cpu-runner"};
  for (std::string& a : config.ToArgs()) args.push_back(std::move(a));
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};  // no inherited environment
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    ::munmap(page, sizeof(RunnerReport));
    ::close(report_fd);
    return absl::ResourceExhaustedError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kSetupFailedExit);
    // fd 3 (the engine's channel in the worker) becomes this runner's
    // channel, fd 4 the report, stdio goes nowhere, the rest closes.
    const int null_fd = ::open("/dev/null", O_RDWR);
    // Out of the way of the numbers about to be assigned.
    const int shared = shared_buffers_fd >= 0 ? ::fcntl(shared_buffers_fd, F_DUPFD, 10) : -1;
    ::dup2(fds[1], kChannelFd);
    ::dup2(report_fd, kReportFd);
    if (shared >= 0) {
      ::dup2(shared, kSharedBuffersFd);
      ::fcntl(kSharedBuffersFd, F_SETFD, 0);
    }
    if (null_fd >= 0) {
      ::dup2(null_fd, 0);
      ::dup2(null_fd, 1);
      ::dup2(null_fd, 2);
    }
    ::close_range(shared_buffers_fd >= 0 ? kSharedBuffersFd + 1 : kReportFd + 1, ~0u, 0);
    // dup2 onto the same number keeps FD_CLOEXEC: clear it explicitly.
    ::fcntl(kChannelFd, F_SETFD, 0);
    ::fcntl(kReportFd, F_SETFD, 0);
    ::execve(argv[0], argv.data(), envp);
    ::_exit(kSetupFailedExit);
  }
  ::close(fds[1]);
  ::close(report_fd);
  RunnerProcess runner(pid, fds[0], report);
  if (absl::Status s = process::WriteMessage(runner.fd(), job); !s.ok()) {
    runner.Wait(absl::Seconds(1));
    return absl::InternalError(
        absl::StrCat("cannot start the runner (", worker_binary, "): ", s.message()));
  }
  return runner;
}

RunnerProcess::RunnerProcess(RunnerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      fd_(std::exchange(other.fd_, -1)),
      report_(std::exchange(other.report_, nullptr)),
      wait_status_(other.wait_status_) {}

RunnerProcess& RunnerProcess::operator=(RunnerProcess&& other) noexcept {
  if (this != &other) {
    Close();
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
    report_ = std::exchange(other.report_, nullptr);
    wait_status_ = other.wait_status_;
  }
  return *this;
}

RunnerProcess::~RunnerProcess() { Close(); }

void RunnerProcess::Close() noexcept {
  Kill();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (report_) ::munmap(report_, sizeof(RunnerReport));
  report_ = nullptr;
}

void RunnerProcess::Kill() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  wait_status_ = status;
  pid_ = -1;
}

void RunnerProcess::Continue() noexcept {
  if (pid_ > 0) ::kill(pid_, SIGCONT);
}

bool RunnerProcess::PauseAndWaitStopped(absl::Duration timeout) noexcept {
  if (pid_ <= 0) return false;
  ::kill(pid_, SIGSTOP);
  // Polled rather than blocking: a child that was already stopped reports
  // no new stop, and a blocking waitpid would then never return.
  const absl::Time deadline = absl::Now() + timeout;
  // A SIGCONT arriving before the stop completes cancels it (the process
  // then runs on, and its own checks in the caller catch that it ran):
  // SIGSTOP again now and then.
  constexpr absl::Duration kStopAgainAfter = absl::Milliseconds(50);
  absl::Time stop_again = absl::Now() + kStopAgainAfter;
  for (;;) {
    int status = 0;
    const pid_t rc = ::waitpid(pid_, &status, WNOHANG | WUNTRACED);
    if (rc == pid_) {
      if (WIFSTOPPED(status)) return true;
      wait_status_ = status;  // it ended
      pid_ = -1;
      return false;
    }
    if (rc < 0 && errno != EINTR) return false;
    if (rc == 0 && ReadProcState() == 'T') return true;  // stopped before
    const absl::Time now = absl::Now();
    if (now >= deadline) return false;
    if (now >= stop_again) {
      ::kill(pid_, SIGSTOP);
      stop_again = now + kStopAgainAfter;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(10));
  }
}

char RunnerProcess::ReadProcState() const noexcept {
  // /proc/PID/stat: "pid (comm) S ..."; comm may hold spaces and parentheses,
  // so the state is the first field after the last ')'.
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid_));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return '?';
  char buffer[512];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer) - 1);
  ::close(fd);
  if (n <= 0) return '?';
  buffer[n] = '\0';
  const char* paren = std::strrchr(buffer, ')');
  return paren && paren[1] == ' ' ? paren[2] : '?';
}

absl::StatusOr<absl::Duration> RunnerProcess::CpuTime() const {
  if (pid_ <= 0) return absl::FailedPreconditionError("the runner has ended");
  clockid_t clock;
  if (const int rc = ::clock_getcpuclockid(pid_, &clock); rc != 0) {
    return absl::InternalError(absl::StrCat("clock_getcpuclockid: ", std::strerror(rc)));
  }
  timespec now{};
  if (::clock_gettime(clock, &now) != 0) {
    return absl::InternalError(absl::StrCat("clock_gettime: ", std::strerror(errno)));
  }
  return absl::DurationFromTimespec(now);
}

absl::StatusOr<absl::Duration> RunnerProcess::MainThreadCpuTime() const {
  if (pid_ <= 0) return absl::FailedPreconditionError("the runner has ended");
  // schedstat: "<ns on a CPU> <ns waiting for one> <timeslices>".
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", static_cast<int>(pid_),
                static_cast<int>(pid_));
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  char buffer[128];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer) - 1);
  ::close(fd);
  if (n <= 0) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  buffer[n] = '\0';
  char* end = nullptr;
  const unsigned long long nanoseconds = std::strtoull(buffer, &end, 10);
  if (end == buffer) return absl::UnavailableError(absl::StrCat("cannot parse ", path));
  return absl::Nanoseconds(static_cast<int64_t>(nanoseconds));
}

absl::StatusOr<uint64_t> RunnerProcess::ResidentBytes() const {
  if (pid_ <= 0) return absl::FailedPreconditionError("the runner has ended");
  std::ifstream statm(absl::StrCat("/proc/", pid_, "/statm"));
  uint64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) {
    return absl::InternalError(absl::StrCat("cannot read /proc/", pid_, "/statm"));
  }
  return resident_pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

int RunnerProcess::Wait(absl::Duration timeout) noexcept {
  if (pid_ <= 0) return wait_status_;
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t rc = ::waitpid(pid_, &status, WNOHANG);
    if (rc == pid_) {
      wait_status_ = status;
      pid_ = -1;
      return wait_status_;
    }
    if (rc < 0 && errno != EINTR) {
      // No status to be had: never to be taken for a clean exit (the
      // worker reads a runner's buffers only after one).
      pid_ = -1;
      wait_status_ = SIGKILL;
      return wait_status_;
    }
    if (absl::Now() >= deadline) {
      Kill();
      return wait_status_;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

std::string DescribeRunnerEnd(int wait_status, const RunnerReport& report) {
  std::string message(report.message, strnlen(report.message, sizeof(report.message)));
  if (WIFEXITED(wait_status)) {
    const int code = WEXITSTATUS(wait_status);
    switch (code) {
      case 0:
        return {};
      case kKernelErrorExit:
      case kKernelRaceExit:
        return message;
      case kLoadFailedExit:
        return absl::StrCat("the compiled kernel could not be loaded: ", message);
      case kSetupFailedExit:
        return absl::StrCat("the runner stopped: ",
                            message.empty() ? "its channel broke" : message);
      default:
        return absl::StrCat("the kernel code ended the process (exit status ", code, ")");
    }
  }
  if (!WIFSIGNALED(wait_status)) return "the runner ended abnormally";
  const int signal = WTERMSIG(wait_status);
  std::string text = absl::StrCat("killed by ", SignalName(signal));
  const bool recorded = report.fault_signal.load() == signal;
  switch (signal) {
    case SIGSEGV:
    case SIGBUS:
      if (recorded && report.fault_in_stack) {
        absl::StrAppend(&text, ": ", DescribeFault(report));
        break;
      }
      absl::StrAppend(&text, ": out-of-bounds access?");
      if (recorded) absl::StrAppend(&text, " (", DescribeFault(report), ")");
      break;
    case SIGFPE:
      absl::StrAppend(&text, ": integer division by zero?");
      break;
    case SIGILL:
      // g++ plants a trap where it proves the code undefined, such as a
      // division by a zero it can see. (Misaligned accesses trapped here too
      // until 2026-12-05; the prelude's handlers name them and their line
      // now.)
      absl::StrAppend(&text,
                      ": code the host compiler proved undefined (an integer division by zero "
                      "or a null pointer dereference it can see)");
      break;
    case SIGABRT:
      // A kernel writing past a __shared__ array (thread-local storage here)
      // or a local one overwrites what the runtime keeps beside it, which
      // then aborts (a sweep's 256-float tile indexed by 512 threads).
      absl::StrAppend(&text,
                      ": abort() (memory the runtime keeps overwritten: a write past a "
                      "__shared__ or local array? else std::terminate or a failed host assert)");
      break;
    case SIGSYS:
      absl::StrAppend(&text, ": a system call the sandbox forbids");
      break;
    case SIGKILL:
      absl::StrAppend(&text, " (memory limit?)");
      break;
    case SIGXCPU:
      absl::StrAppend(&text, ": CPU time limit");
      break;
    default:
      break;
  }
  return text;
}

namespace {

// Maps every region of `plans` from the worker's memfd, before the sandbox
// and the kernel's code, and closes it: only the data pages between guards
// are shared.
std::vector<std::unique_ptr<PlanMemory>> MapRegions(
    const std::vector<const internal::ResolvedPlan*>& plans) {
  const std::vector<uint64_t> offsets = RegionOffsets(plans);
  std::vector<std::unique_ptr<PlanMemory>> regions;
  for (size_t r = 0; r < plans.size(); ++r) {
    regions.push_back(std::make_unique<PlanMemory>(*plans[r], kSharedBuffersFd, offsets[r]));
  }
  ::close(kSharedBuffersFd);
  return regions;
}

int RunCasesInRunner(int channel_fd, RunnerReport* report, const RunnerConfig& config,
                     const internal::RunRequest& request) {
  std::vector<const internal::ResolvedPlan*> plans;
  for (const internal::Case& c : request.cases()) plans.push_back(&c.plan());
  std::vector<std::unique_ptr<PlanMemory>> cases = MapRegions(plans);
  const Library library = SandboxAndLoad(config, channel_fd);
  for (size_t c = 0; c < cases.size(); ++c) {
    report->case_index.store(static_cast<int32_t>(c));
    const internal::Case& one = request.cases(static_cast<int>(c));
    SetCaseSchedule(one.block_schedule() > 0 ? one.block_schedule() - 1 : c,
                    one.thread_schedule() > 0 ? one.thread_schedule() - 1 : c, one.shape_index());
    SetRaceCheckedMemory(cases[c]->RaceCheckedRanges(library.writable_data));
    StartRunAfresh();
    cases[c]->Register(report);
    cases[c]->Run(library, report);
    report->buffer_count = 0;
  }
  if (!process::WriteFrame(channel_fd, kRunDoneFrame).ok()) return kSetupFailedExit;
  return 0;
}

int TimeProgramInRunner(int channel_fd, RunnerReport* report, const RunnerConfig& config,
                        const internal::TimingRequest& request) {
  if (request.programs_size() != 1) return kSetupFailedExit;
  const std::vector<const internal::ResolvedPlan*> plans(
      static_cast<size_t>(request.input_seeds_size()), &request.programs(0).plan());
  std::vector<std::unique_ptr<PlanMemory>> sets = MapRegions(plans);
  const Library library = SandboxAndLoad(config, channel_fd);
  if (!process::WriteFrame(channel_fd, "ready").ok()) return kSetupFailedExit;
  std::string command;
  bool prepared = false;
  for (;;) {
    if (!process::ReadFrame(channel_fd, &command, absl::InfiniteFuture(), 64).ok()) {
      return kSetupFailedExit;
    }
    if (command == "F") break;
    if (command == "P") {
      // The run's own preparation (heap, printf budget, thread-local state),
      // in the sample. The stack fill (~1-1.4 ms for 512 fibers, as much as
      // a small kernel's whole run) is the worker's, from outside, where the
      // stacks' ranges fit the report; the worker restores the device
      // globals.
      const size_t count = FiberStackRanges(report->stack_ranges, RunnerReport::kMaxStackRanges);
      const bool reported = count <= RunnerReport::kMaxStackRanges;
      StartRunAfresh(reported ? StackFill::kLeftToTheCaller : StackFill::kHere);
      report->stack_range_count = reported ? static_cast<uint32_t>(count) : 0;
      prepared = true;
      if (!process::WriteFrame(channel_fd, "p").ok()) return kSetupFailedExit;
      continue;
    }
    if (command.size() < 2 || command[0] != 'R' || !prepared) return kSetupFailedExit;
    prepared = false;
    const size_t set = static_cast<size_t>(std::strtoul(command.c_str() + 1, nullptr, 10));
    if (set >= sets.size()) return kSetupFailedExit;
    report->case_index.store(static_cast<int32_t>(set));
    sets[set]->Register(report);
    sets[set]->Run(library, report);
    if (!process::WriteFrame(channel_fd, "k").ok()) return kSetupFailedExit;
  }
  if (!process::WriteMessage(channel_fd, internal::ProgramTiming()).ok()) return kSetupFailedExit;
  return 0;
}

}  // namespace

SharedBufferLayout LayoutFor(const internal::ResolvedPlan& plan) {
  SharedBufferLayout layout;
  for (const internal::BufferSpec& spec : plan.buffers()) {
    layout.offsets.push_back(layout.set_bytes);
    layout.set_bytes += GuardedDataPagesBytes(spec.elements() * data::DTypeSize(spec.dtype()));
  }
  return layout;
}

std::vector<uint64_t> RegionOffsets(const std::vector<const internal::ResolvedPlan*>& plans) {
  std::vector<uint64_t> offsets = {0};
  for (const internal::ResolvedPlan* plan : plans) {
    offsets.push_back(offsets.back() + LayoutFor(*plan).set_bytes);
  }
  return offsets;
}

std::vector<std::string> RunnerConfig::ToArgs() const {
  std::vector<std::string> args = {
      absl::StrCat("--job=", job == RunnerJob::kRunCases ? "run" : "time"),
      absl::StrCat("--library=", library_path),
      absl::StrCat("--threads=", runtime.threads),
      absl::StrCat("--fiber-stack-bytes=", runtime.fiber_stack_bytes),
      absl::StrCat("--print-budget-bytes=", runtime.print_budget_bytes),
      absl::StrCat("--heap-bytes=", runtime.heap_bytes)};
  for (const std::string& name : kernel_names) args.push_back(absl::StrCat("--kernel=", name));
  return args;
}

RunnerConfig RunnerConfig::FromArgs(int argc, char** argv) {
  RunnerConfig config;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg.substr(0, 2) != "--" || eq == std::string_view::npos) continue;
    const std::string_view name = arg.substr(2, eq - 2);
    const std::string value(arg.substr(eq + 1));
    const uint64_t number = std::strtoull(value.c_str(), nullptr, 10);
    if (name == "job")
      config.job = value == "time" ? RunnerJob::kTimeProgram : RunnerJob::kRunCases;
    if (name == "library") config.library_path = value;
    if (name == "kernel") config.kernel_names.push_back(value);
    if (name == "threads") config.runtime.threads = static_cast<unsigned>(number);
    if (name == "fiber-stack-bytes") config.runtime.fiber_stack_bytes = number;
    if (name == "print-budget-bytes") config.runtime.print_budget_bytes = number;
    if (name == "heap-bytes") config.runtime.heap_bytes = number;
  }
  return config;
}

int CpuRunnerMain(int channel_fd, int argc, char** argv) {
  const RunnerConfig config = RunnerConfig::FromArgs(argc, argv);
  void* page =
      ::mmap(nullptr, sizeof(RunnerReport), PROT_READ | PROT_WRITE, MAP_SHARED, kReportFd, 0);
  if (page == MAP_FAILED) return kSetupFailedExit;
  ::close(kReportFd);
  child_report = static_cast<RunnerReport*>(page);
  if (config.job == RunnerJob::kRunCases) {
    internal::RunRequest request;
    if (!process::ReadMessage(channel_fd, &request, absl::Now() + absl::Seconds(60)).ok()) {
      return kSetupFailedExit;
    }
    return RunCasesInRunner(channel_fd, child_report, config, request);
  }
  internal::TimingRequest request;
  if (!process::ReadMessage(channel_fd, &request, absl::Now() + absl::Seconds(60)).ok()) {
    return kSetupFailedExit;
  }
  return TimeProgramInRunner(channel_fd, child_report, config, request);
}

}  // namespace kerneleval::cpu
