#include "evaluator/cpu/host_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "evaluator/cpu/elf_symbols.h"
#include "evaluator/cpu/source_rewrite.h"
#include "evaluator/sandbox/sandbox.h"

namespace kerneleval::cpu {
namespace {

namespace fs = std::filesystem;

constexpr char kPreludeHeader[] = "kerneleval_cpu_prelude.h";
constexpr char kAbiHeader[] = "kerneleval_cpu_abi.h";
// Included in place of CUB's headers (source_rewrite.h: RewriteCubIncludes).
constexpr char kCubHeader[] = "kerneleval_cpu_cub.h";
constexpr int kSandboxFailedExit = 120;
constexpr int kExecFailedExit = 127;
// The signal a compile's supervisor gets when the process that started it
// dies (PR_SET_PDEATHSIG): it then kills its process group (RunSandboxed).
constexpr int kSupervisorParentDied = SIGUSR1;

// Async-signal-safe: the supervisor, g++ and every pass g++ started.
void KillOwnProcessGroup(int) { ::kill(0, SIGKILL); }

std::string ReadFileOrEmpty(const std::string& path, size_t limit = SIZE_MAX) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::string data;
  char buffer[65536];
  while (in && data.size() < limit) {
    in.read(buffer, static_cast<std::streamsize>(std::min(sizeof(buffer), limit - data.size())));
    data.append(buffer, static_cast<size_t>(in.gcount()));
  }
  return data;
}

absl::Status WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string Hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// 64-bit FNV-1a: a cache key only (entries are compared in full on a hit).
uint64_t Fnv1a(std::string_view data, uint64_t hash = 0xcbf29ce484222325ull) {
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::string ResolveCompiler(const std::string& compiler) {
  if (compiler.find('/') != std::string::npos) return compiler;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    std::string candidate = absl::StrCat(dir, "/", compiler);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Waits for `pid` until `deadline`; returns the wait status, or nullopt on
// timeout (the child is still running).
std::optional<int> WaitUntil(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  for (;;) {
    int status = 0;
    const pid_t rc = ::waitpid(pid, &status, WNOHANG);
    if (rc == pid) {
      if (pidfd >= 0) ::close(pidfd);
      return status;
    }
    if (rc < 0 && errno != EINTR) {
      if (pidfd >= 0) ::close(pidfd);
      return 0;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      if (pidfd >= 0) ::close(pidfd);
      return std::nullopt;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(left, 2)));
    }
  }
}

// An exclusive flock on `path` (created), waited for up to `wait_seconds`;
// without it after that, the build goes on unlocked. The holder removes the
// file as it lets go: a process waiting on it then finds the entry (or
// builds, the entry missing), and a later one finds the entry first.
class BuildLock {
 public:
  BuildLock(std::string path, double wait_seconds) : path_(std::move(path)) {
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(wait_seconds));
    while (true) {
      fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (fd_ < 0) return;
      while (!(held_ = ::flock(fd_, LOCK_EX | LOCK_NB) == 0) && errno == EWOULDBLOCK &&
             std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      if (!held_ || IsStillThePath()) return;
      // Locked a file its holder removed as it let go (another process may
      // hold the one now at the path): lock the path's file instead, or two
      // would build the same program (red team rt12 #5).
      held_ = false;
      ::close(fd_);
      fd_ = -1;
    }
  }
  BuildLock(const BuildLock&) = delete;
  BuildLock& operator=(const BuildLock&) = delete;
  ~BuildLock() {
    if (held_) ::unlink(path_.c_str());
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  // The open file is the one at path_ (not removed, nor replaced).
  bool IsStillThePath() const {
    struct stat open_file {};
    struct stat at_path {};
    return ::fstat(fd_, &open_file) == 0 && ::stat(path_.c_str(), &at_path) == 0 &&
           open_file.st_dev == at_path.st_dev && open_file.st_ino == at_path.st_ino;
  }

  std::string path_;
  int fd_ = -1;
  bool held_ = false;
};

// What the compiled `object` holds that the host build refuses, and the
// load-time code of the linked `library` beyond what g++ links into every
// library of this build (HostCompiler::Build says which), described for
// the submitter ("init_array: build_table"); empty if none.
std::string UnexpectedLoadTimeCode(std::string_view object, std::string_view library,
                                   bool interleaved) {
  absl::StatusOr<std::vector<std::string>> refused = RefusedObjectContents(object);
  if (!refused.ok()) return absl::StrCat("unreadable: ", refused.status().message());
  if (!refused->empty()) return absl::StrJoin(*refused, ", ");
  absl::StatusOr<LoadTimeFunctions> found = ReadLoadTimeFunctions(library);
  if (!found.ok()) return absl::StrCat("unreadable: ", found.status().message());
  // Removes one occurrence of each allowed name; what is left is unexpected.
  auto unexpected = [](std::vector<std::string> names, std::vector<std::string> allowed) {
    std::vector<std::string> left;
    for (std::string& name : names) {
      auto at = std::find(allowed.begin(), allowed.end(), name);
      if (at != allowed.end()) {
        allowed.erase(at);
      } else {
        left.push_back(std::move(name));
      }
    }
    return left;
  };
  std::vector<std::string> allowed_init = {"frame_dummy"};
  if (interleaved) allowed_init.emplace_back("_sub_I_00099_0");
  std::vector<std::string> parts;
  for (const auto& [what, names] :
       {std::pair{"init_array", unexpected(found->init_array, allowed_init)},
        std::pair{"fini_array", unexpected(found->fini_array, {"__do_global_dtors_aux"})},
        std::pair{"preinit_array", found->preinit_array},
        std::pair{".init/.fini", found->in_init_sections},
        std::pair{"indirect", found->indirect}}) {
    if (!names.empty()) parts.push_back(absl::StrCat(what, ": ", absl::StrJoin(names, ", ")));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace

absl::StatusOr<HostCompiler> HostCompiler::Create(HostCompilerOptions options) {
  const std::string compiler = ResolveCompiler(options.compiler);
  if (compiler.empty() || ::access(compiler.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("host compiler ", options.compiler, " not found (the CPU backend needs g++)"));
  }
  options.compiler = fs::weakly_canonical(compiler).string();
  for (const char* header : {kPreludeHeader, kAbiHeader, kCubHeader}) {
    if (!fs::exists(fs::path(options.prelude_dir) / header)) {
      return absl::FailedPreconditionError(absl::StrCat("CPU backend prelude ", header,
                                                        " not found in '", options.prelude_dir,
                                                        "' (set KERNELEVAL_CPU_PRELUDE_DIR)"));
    }
  }
  if (!fs::exists(fs::path(options.cuda_include_dir) / "cuda_fp16.h")) {
    return absl::FailedPreconditionError(
        absl::StrCat("CUDA headers (cuda_fp16.h) not found in '", options.cuda_include_dir, "'"));
  }
  // -mfma on a host without FMA would build libraries that fault (SIGILL).
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("fma")) options.contract_multiply_add = false;
  std::error_code ec;
  fs::create_directories(fs::path(options.cache_dir) / "lib", ec);
  fs::create_directories(fs::path(options.cache_dir) / "work", ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the cache directory ", options.cache_dir, ": ", ec.message()));
  }
  options.prelude_dir = fs::canonical(options.prelude_dir).string();
  options.cuda_include_dir = fs::canonical(options.cuda_include_dir).string();
  options.cache_dir = fs::canonical(options.cache_dir).string();
  HostCompiler compiler_object(std::move(options));
  const HostCompilerOptions& o = compiler_object.options_;
  struct stat st {};
  ::stat(o.compiler.c_str(), &st);
  compiler_object.fingerprint_ = absl::StrCat(
      "compiler ", o.compiler, " ", st.st_size, " ", st.st_mtime, "\nflags ",
      absl::StrJoin(compiler_object.CommonFlags(), " "), "\nprelude ",
      Hex64(Fnv1a(ReadFileOrEmpty((fs::path(o.prelude_dir) / kPreludeHeader).string()))),
      Hex64(Fnv1a(ReadFileOrEmpty((fs::path(o.prelude_dir) / kAbiHeader).string()))),
      Hex64(Fnv1a(ReadFileOrEmpty((fs::path(o.prelude_dir) / kCubHeader).string()))), "\n",
      // What is checked after a build (a library cached before a check
      // was added would be found without it): weak references (2026-12-06).
      "checks weak-references load-time-code exports-runner-entries code-in-text init-sections "
      "crt-hooks\n");
  return compiler_object;
}

std::vector<std::string> HostCompiler::CommonFlags() const {
  std::vector<std::string> flags = {"-std=c++20",
                                    options_.optimization,
                                    "-fPIC",
                                    "-fvisibility=hidden",
                                    "-fno-exceptions",
                                    "-fno-rtti",
                                    "-fno-math-errno",
                                    "-fdiagnostics-color=never",
                                    "-fno-diagnostics-show-caret",
                                    "-fmax-errors=20",
                                    "-w",
                                    "-isystem",
                                    options_.cuda_include_dir};
  // libcu++'s host-compatible headers (<cuda/std/limits>, <cuda/atomic>):
  // CUDA 13 keeps CCCL under include/cccl (source_rewrite.cc says which).
  const fs::path cccl = fs::path(options_.cuda_include_dir) / "cccl";
  std::error_code ec;
  if (fs::is_directory(cccl, ec)) flags.insert(flags.end(), {"-isystem", cccl.string()});
  // A frame larger than the rest of its fiber's stack probes each page and
  // faults on the guard page; it wrote into the neighbouring fibers' stacks
  // (96 KiB of local arrays on a 64 KiB stack passed).
  flags.push_back("-fstack-clash-protection");
  if (options_.contract_multiply_add) flags.insert(flags.end(), {"-mfma", "-ffp-contract=fast"});
  // Both builds take the same branches and calls, but for the interleaved
  // build's instrumentation: g++ fuses a multiply and an add only within one
  // basic block and where the product has no other use, so a check's branch
  // or a memcpy through memory in one build alone fused a product in the
  // other only, and a kernel could tell the builds apart by a rounding
  // (session 37). ThreadSanitizer's calls add no branch; the alignment and
  // bounds checks become branches after g++ has fused (its sanopt pass), and
  // stay in the interleaved build only (in the timed one they took a
  // shared-memory histogram's runs to 1.7x).
  //
  // Every memcpy, memmove and memset a call (in the interleaved build to the
  // prelude's wrappers, linked with --wrap below): g++ expanded those of
  // sizes it could bound after the instrumentation, unseen by the race
  // check.
  flags.insert(flags.end(), {"-fno-builtin-memcpy", "-fno-builtin-memmove", "-fno-builtin-memset"});
  // A shift by the width or more and an out-of-range float to integer
  // conversion end the run: a GPU and x86 answer them differently. The
  // prelude's handlers (section 10b) name the line; UBSan's runtime is not
  // linked (the link step has no -fsanitize). They recover: the toolkit's
  // headers may do them and mend the result; only the submission's are
  // reported.
  flags.push_back("-fsanitize=shift-exponent,float-cast-overflow");
  if (options_.interleave_stores) {
    flags.insert(flags.end(), {"-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0",
                               "--param=tsan-distinguish-volatile=1"});
    // A load or store through a pointer not aligned to its type ends the
    // run, as a GPU faults on it ("misaligned address"); x86 does not care,
    // so float4 loads of rows that start anywhere passed (red team,
    // 2026-12-04). So does a subscript past an array's length (a static
    // __shared__ tile indexed by too many threads overwrote the runtime's
    // thread-local data: SIGABRT, no line). Subscripts recover, as above.
    flags.insert(flags.end(), {"-fsanitize=alignment,bounds", "-fno-sanitize-recover=alignment"});
  }
  return flags;
}

std::vector<std::string> HostCompiler::ReadablePaths() const {
  std::vector<std::string> paths = {"/usr/bin",
                                    "/usr/lib",
                                    "/usr/libexec",
                                    "/usr/include",
                                    "/usr/lib64",
                                    "/lib",
                                    "/lib64",
                                    "/bin",
                                    "/etc/ld.so.cache",
                                    "/dev/null",
                                    options_.prelude_dir,
                                    options_.cuda_include_dir};
  // A compiler outside /usr (e.g. /opt/gcc-13/bin/g++): its whole prefix.
  const fs::path prefix = fs::path(options_.compiler).parent_path().parent_path();
  if (!prefix.empty() && prefix != "/usr" && prefix != "/") paths.push_back(prefix.string());
  return paths;
}

absl::StatusOr<HostCompiler::Outcome> HostCompiler::RunSandboxed(
    const std::vector<std::string>& args, const std::string& work_dir,
    const std::vector<std::string>& extra_readable, uint64_t max_file_bytes) {
  sandbox::FilesystemPolicy policy;
  policy.read_only = ReadablePaths();
  policy.read_only.insert(policy.read_only.end(), extra_readable.begin(), extra_readable.end());
  policy.read_write = {work_dir};
  const std::string log_path = (fs::path(work_dir) / "compiler.log").string();

  std::vector<std::string> argv_strings = {options_.compiler};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(argv_strings.size() + 1);
  for (std::string& a : argv_strings) argv.push_back(a.data());
  argv.push_back(nullptr);
  // A fixed environment: no inherited variables reach the compiler.
  std::vector<std::string> env_strings = {"PATH=/usr/bin:/bin", "LC_ALL=C", "LANG=C",
                                          absl::StrCat("TMPDIR=", work_dir),
                                          absl::StrCat("HOME=", work_dir)};
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(options_.timeout_seconds));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return absl::ResourceExhaustedError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    // The worker is single-threaded, so the child may allocate before exec.
    //
    // This child supervises the compile: a group of its own (a timeout
    // kills g++, cc1plus, as and ld with it), the sandbox, then g++ in a
    // child of its own, whose exit status it passes on. When the worker
    // dies first (killed by the server, or a builder the engine cancels),
    // the kernel signals it (PR_SET_PDEATHSIG) and it kills its whole
    // group: a parent-death signal reaches g++ only, and the cc1plus it
    // started ran on to its CPU limit (60 s) after its worker was gone.
    ::setpgid(0, 0);
    ::signal(kSupervisorParentDied, KillOwnProcessGroup);
    ::prctl(PR_SET_PDEATHSIG, kSupervisorParentDied);
    if (::getppid() != parent) ::_exit(kSandboxFailedExit);
    const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log_fd < 0 || null_fd < 0 || ::chdir(work_dir.c_str()) != 0) ::_exit(kSandboxFailedExit);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::close_range(3, ~0u, 0);
    const rlim_t cpu_seconds = static_cast<rlim_t>(options_.timeout_seconds) + 5;
    const rlimit cpu{cpu_seconds, cpu_seconds};
    ::setrlimit(RLIMIT_CPU, &cpu);
    const rlimit file_size{max_file_bytes, max_file_bytes};
    ::setrlimit(RLIMIT_FSIZE, &file_size);
    // Both mechanisms where both work, as for kernels: with Landlock alone
    // every other file still exists for stat(), and `#include` or
    // `__has_include` of a host path told whether it exists ("Permission
    // denied" against "No such file").
    if (absl::Status s = sandbox::RestrictFilesystemUsing(
                             policy, sandbox::FilesystemMechanism::kLandlockAndMountNamespace)
                             .status();
        !s.ok()) {
      const std::string message = absl::StrCat("sandbox (file system): ", s.message(), "\n");
      (void)!::write(2, message.data(), message.size());
      ::_exit(kSandboxFailedExit);
    }
    // A new root (mount namespace) leaves the old working directory behind.
    if (::chdir(work_dir.c_str()) != 0) ::_exit(kSandboxFailedExit);
    if (absl::Status s = sandbox::RestrictSyscalls(sandbox::SyscallProfile::kCompiler); !s.ok()) {
      const std::string message = absl::StrCat("sandbox (system calls): ", s.message(), "\n");
      (void)!::write(2, message.data(), message.size());
      ::_exit(kSandboxFailedExit);
    }
    const pid_t supervisor = ::getpid();
    const pid_t compiler = ::fork();
    if (compiler < 0) ::_exit(kSandboxFailedExit);
    if (compiler == 0) {
      ::signal(kSupervisorParentDied, SIG_DFL);
      // Should the supervisor alone die (the OOM killer), g++ goes too.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != supervisor) ::_exit(kSandboxFailedExit);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(kExecFailedExit);
    }
    int compiler_status = 0;
    pid_t waited;
    while ((waited = ::waitpid(compiler, &compiler_status, 0)) < 0 && errno == EINTR) {
    }
    if (waited != compiler) ::_exit(kSandboxFailedExit);  // never a success unseen
    ::_exit(WIFEXITED(compiler_status) ? WEXITSTATUS(compiler_status)
                                       : 128 + WTERMSIG(compiler_status));
  }
  ::setpgid(pid, pid);
  const std::optional<int> status = WaitUntil(pid, deadline);
  Outcome outcome;
  if (!status) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    int ignored;
    ::waitpid(pid, &ignored, 0);
    outcome.exit_status = -1;
  } else {
    ::kill(-pid, SIGKILL);  // nothing of the compile outlives it
    outcome.exit_status = WIFEXITED(*status) ? WEXITSTATUS(*status) : 128 + WTERMSIG(*status);
  }
  outcome.log = ReadFileOrEmpty(log_path, options_.max_log_bytes);
  if (outcome.exit_status == kSandboxFailedExit) {
    return absl::FailedPreconditionError(
        absl::StrCat("the host compiler could not be sandboxed: ", outcome.log));
  }
  if (outcome.exit_status == kExecFailedExit) {
    return absl::FailedPreconditionError(
        absl::StrCat("the host compiler ", options_.compiler, " could not be started"));
  }
  return outcome;
}

void HostCompiler::PreparePrecompiledPrelude() {
  pch_tried_ = true;
  if (!options_.precompiled_prelude) return;
  const std::string dir =
      (fs::path(options_.cache_dir) / absl::StrCat("pch-", Hex64(Fnv1a(fingerprint_)))).string();
  const std::string gch = (fs::path(dir) / absl::StrCat(kPreludeHeader, ".gch")).string();
  std::error_code ec;
  if (fs::exists(gch, ec)) {
    pch_dir_ = dir;
    return;
  }
  const std::string work =
      (fs::path(options_.cache_dir) / "work" / absl::StrCat("pch-", ::getpid())).string();
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  std::vector<std::string> args = CommonFlags();
  const std::string output = (fs::path(work) / absl::StrCat(kPreludeHeader, ".gch")).string();
  args.insert(args.end(),
              {"-x", "c++-header", (fs::path(options_.prelude_dir) / kPreludeHeader).string(), "-o",
               output});
  absl::StatusOr<Outcome> outcome = RunSandboxed(args, work, {}, options_.max_prelude_bytes);
  if (outcome.ok() && outcome->exit_status == 0) {
    fs::create_directories(dir, ec);
    fs::rename(output, gch, ec);  // atomic: a concurrent worker may win, same bytes
    if (!ec || fs::exists(gch)) pch_dir_ = dir;
  }
  fs::remove_all(work, ec);
}

absl::StatusOr<HostCompileResult> HostCompiler::Compile(std::string_view translation_unit) {
  if (!pch_tried_) PreparePrecompiledPrelude();
  const std::string key = absl::StrCat(fingerprint_, "pch ", pch_dir_.empty() ? "no" : "yes",
                                       "\n---\n", std::string(translation_unit));
  const std::string entry_dir = (fs::path(options_.cache_dir) / "lib" / Hex64(Fnv1a(key))).string();
  const std::string library = (fs::path(entry_dir) / "lib.so").string();
  const std::string key_path = (fs::path(entry_dir) / "key").string();
  std::error_code ec;
  HostCompileResult result;
  const auto found = [&] {
    if (!fs::exists(library, ec) || ReadFileOrEmpty(key_path) != key) return false;
    fs::last_write_time(key_path, fs::file_time_type::clock::now(), ec);  // recently used
    result.success = true;
    result.cache_hit = true;
    result.library_path = library;
    return true;
  };
  if (found()) return result;
  // One build of a program at a time among the processes sharing the
  // cache: a later one waits for it (a builder the engine left building at
  // its deadline, and the worker's first run of that program), then finds
  // its entry.
  const BuildLock lock(
      (fs::path(options_.cache_dir) / "work" / absl::StrCat(Hex64(Fnv1a(key)), ".lock")).string(),
      options_.timeout_seconds);
  if (found()) return result;

  const auto start = std::chrono::steady_clock::now();
  const std::string work =
      (fs::path(options_.cache_dir) / "work" / absl::StrCat(::getpid(), "-", ++work_counter_))
          .string();
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", work, ": ", ec.message()));
  const std::string source_path = (fs::path(work) / "tu.cc").string();
  if (absl::Status s = WriteFile(source_path, translation_unit); !s.ok()) return s;
  std::vector<std::string> args = CommonFlags();
  std::vector<std::string> readable;
  if (!pch_dir_.empty()) {
    args.insert(args.end(), {"-I", pch_dir_});
    readable.push_back(pch_dir_);
  }
  args.insert(args.end(), {"-I", options_.prelude_dir});
  // g++ links a sanitizer's runtime whenever its -fsanitize is given
  // (ThreadSanitizer's unconditionally, --no-as-needed): both builds compile
  // and link in two steps, the hooks and handlers being the prelude's.
  args.insert(args.end(), {"-c", "tu.cc", "-o", "tu.o"});
  absl::StatusOr<Outcome> outcome = RunSandboxed(args, work, readable, options_.max_library_bytes);
  if (outcome.ok() && outcome->exit_status == 0) {
    std::vector<std::string> link_args = {"tu.o"};
    if (options_.interleave_stores) {
      // The prelude's __wrap_memcpy, __wrap_memmove and __wrap_memset
      // (section 5c) see the library's copies and fills for the race check.
      link_args.push_back("-Wl,--wrap=memcpy,--wrap=memmove,--wrap=memset");
    }
    // Only the runner's entry points are exported; every other name the
    // library defines binds within it. A definition the submission gave
    // default visibility (`extern "C" __device__ __attribute__((visibility(
    // "default"))) int getpid() { return 0; }`, which NVRTC accepts with a
    // warning) was interposable: the loader bound its calls to libc's
    // getpid, so one line reached any libc function, and the kernel kept
    // its answer only where the call did not return its own 0, as on a GPU
    // (sweep 43, a03).
    if (absl::Status s = WriteFile((fs::path(work) / "exports.map").string(),
                                   "{ global: kerneleval_cpu_*; local: *; };\n");
        !s.ok()) {
      fs::remove_all(work, ec);
      return s;
    }
    // -z text: no relocation in a read-only or executable section (a data
    // object placed in .init holding a function's address, sweep 44).
    link_args.insert(link_args.end(), {"-shared", "-Wl,-z,defs", "-Wl,-z,text",
                                       "-Wl,--version-script=exports.map", "-o", "lib.so"});
    outcome = RunSandboxed(link_args, work, readable, options_.max_library_bytes);
  }
  if (!outcome.ok()) {
    fs::remove_all(work, ec);
    return outcome.status();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (outcome->exit_status == -1) {
    // The source's fault (template or constexpr bombs): a compile failure.
    fs::remove_all(work, ec);
    result.success = false;
    result.log =
        absl::StrCat("the host compile did not finish within ", options_.timeout_seconds, " s");
    return result;
  }
  // Messages name the user's file; the machine's paths are shortened.
  std::string log = absl::StrReplaceAll(
      outcome->log, {{absl::StrCat(work, "/"), ""},
                     {absl::StrCat(options_.prelude_dir, "/"), "<kerneleval-cpu>/"},
                     {absl::StrCat(options_.cuda_include_dir, "/"), "<cuda>/"}});
  if (outcome->exit_status != 0) {
    fs::remove_all(work, ec);
    result.success = false;
    // cc1plus or as killed by SIGXFSZ: g++ itself reports an internal error.
    if (outcome->exit_status == 128 + SIGXFSZ ||
        absl::StrContains(outcome->log, "File size limit exceeded")) {
      absl::StrAppend(&log, "\na file the compile writes (assembly, object, library) exceeds ",
                      options_.max_library_bytes >> 20, " MiB (a large initialised array?)");
    } else if (outcome->exit_status > 128) {
      absl::StrAppend(&log, "\nthe host compiler was killed by signal ", outcome->exit_status - 128,
                      " (CPU time or memory limit?)");
    }
    result.log = std::move(log);
    return result;
  }
  // The library's bytes, for the checks below.
  const std::string library_bytes = ReadFileOrEmpty((fs::path(work) / "lib.so").string());
  // A weak reference to a name the library does not define: the builds
  // define different names (the interleaved one ThreadSanitizer's hooks,
  // section 5b of the prelude), so `&__tsan_init == nullptr` told the timed
  // build from the correctness one, and a histogram racing only in the
  // timed build (whose threads never interleave) passed (session 33).
  // A name the runner's libraries define (`__cxa_pure_virtual`, of an
  // abstract class) resolves alike in both, the same runner binary loading
  // either build; of those that resolve to nothing, honest libraries refer
  // weakly to the linker's own alone.
  std::vector<std::string> weak;
  if (absl::StatusOr<std::vector<std::string>> names = UndefinedWeakSymbols(library_bytes);
      names.ok()) {
    for (std::string& name : *names) {
      if (name != "__gmon_start__" && name != "_ITM_deregisterTMCloneTable" &&
          name != "_ITM_registerTMCloneTable" && ::dlsym(RTLD_DEFAULT, name.c_str()) == nullptr) {
        weak.push_back(std::move(name));
      }
    }
  } else {
    weak.push_back(absl::StrCat("? (", names.status().message(), ")"));
  }
  if (!weak.empty()) {
    fs::remove_all(work, ec);
    result.success = false;
    absl::StrAppend(&log, log.empty() ? "" : "\n", "weak references to names the program does ",
                    "not define (", absl::StrJoin(weak, ", "),
                    "): the CPU backend's correctness and timed builds define different names, "
                    "so such a reference tells them apart; refused");
    result.log = std::move(log);
    return result;
  }
  // Code that runs when a runner loads the library: a GPU runs none. A
  // `__device__` function with `__attribute__((constructor))` or a
  // `__device__` function pointer in section ".init_array" (NVRTC accepts
  // both) built a 65536-entry table at load, outside every sample, and the
  // globals as loaded, restored before each timed run, kept it (sweep 43,
  // a01: 2.75-2.95x against 1.19-1.69x for the same table built every run).
  // Allowed: what g++ links into every library (crtbeginS.o's frame_dummy
  // and __do_global_dtors_aux) and, in the interleaved build,
  // ThreadSanitizer's module constructor (`_sub_I_00099_0`, calling the
  // prelude's __tsan_init); each once, so a function of the same name
  // adds an entry and is refused too.
  if (std::string load_time =
          UnexpectedLoadTimeCode(ReadFileOrEmpty((fs::path(work) / "tu.o").string()), library_bytes,
                                 options_.interleave_stores);
      !load_time.empty()) {
    fs::remove_all(work, ec);
    result.success = false;
    absl::StrAppend(&log, log.empty() ? "" : "\n", "code that runs when the program is loaded (",
                    load_time,
                    "): a constructor, a destructor, an .init_array or .fini_array entry, code "
                    "or data placed in .init, .fini or a text section, a definition of a hook "
                    "the C runtime's start-up code calls, or an indirect function's resolver; a "
                    "GPU runs none of it, so the CPU backend refuses it");
    result.log = std::move(log);
    return result;
  }
  // The entry is published whole, by renaming its directory into place:
  // several processes build into one cache (the worker, the backend's
  // builders, other backends), and a rename onto an entry that another
  // process published first fails instead of replacing a library a runner
  // may be loading (its sandbox allows that file alone).
  const std::string staged = (fs::path(work) / "entry").string();
  fs::create_directories(staged, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", staged, ": ", ec.message()));
  fs::rename(fs::path(work) / "lib.so", fs::path(staged) / "lib.so", ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot stage the library: ", ec.message()));
  if (absl::Status s = WriteFile((fs::path(staged) / "key").string(), key); !s.ok()) return s;
  result.success = true;
  result.log = std::move(log);
  if (PublishEntry(staged, entry_dir, key)) {
    result.library_path = library;
    fs::remove_all(work, ec);
  } else {
    // A colliding entry (another key with the same hash): keep this object
    // beside the work files instead of caching it.
    result.library_path = (fs::path(staged) / "lib.so").string();
  }
  TrimCache();
  return result;
}

bool HostCompiler::PublishEntry(const std::string& staged, const std::string& entry_dir,
                                const std::string& key) {
  std::error_code ec;
  const fs::path key_path = fs::path(entry_dir) / "key";
  for (int attempt = 0; attempt < 2; ++attempt) {
    fs::rename(staged, entry_dir, ec);  // onto nothing, or an empty directory
    if (!ec) return true;
    // Published by another process meanwhile: the same program, built alike.
    if (fs::exists(fs::path(entry_dir) / "lib.so", ec) &&
        ReadFileOrEmpty(key_path.string()) == key) {
      return true;
    }
    // An entry without its key (a process that ended while publishing it
    // file by file, as before entries were published whole): replaced.
    if (fs::exists(key_path, ec)) return false;
    fs::remove_all(entry_dir, ec);
  }
  return false;
}

void HostCompiler::TrimCache() {
  struct Entry {
    fs::file_time_type used;
    fs::path dir;
    uint64_t bytes;
  };
  std::error_code ec;
  std::vector<Entry> entries;
  uint64_t total_bytes = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(options_.cache_dir) / "lib", ec)) {
    std::error_code size_ec;
    const uintmax_t bytes = fs::file_size(entry.path() / "lib.so", size_ec);
    entries.push_back({fs::last_write_time(entry.path() / "key", ec), entry.path(),
                       size_ec ? 0 : static_cast<uint64_t>(bytes)});
    total_bytes += entries.back().bytes;
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.used < b.used; });
  // Oldest first, until both bounds hold (the newest entry always stays).
  size_t kept = entries.size();
  for (size_t i = 0; i + 1 < entries.size(); ++i) {
    if (kept <= options_.max_cache_entries && total_bytes <= options_.max_cache_bytes) break;
    fs::remove_all(entries[i].dir, ec);
    total_bytes -= entries[i].bytes;
    --kept;
  }
}

}  // namespace kerneleval::cpu
