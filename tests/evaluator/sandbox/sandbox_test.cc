// The sandbox, exercised in forked children (its restrictions are
// irrevocable): files outside the policy cannot be read, inside can; the
// seccomp profiles refuse sockets, processes and ptrace.
#include "evaluator/sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "tests/support/gvisor_like/gvisor_like_seccomp.h"

namespace kerneleval::sandbox {
namespace {

namespace fs = std::filesystem;

std::string RandomToken() {
  std::random_device device;
  std::mt19937_64 rng(device());
  return "token-" + std::to_string(rng()) + "-" + std::to_string(rng());
}

// Runs `body` in a forked child; returns the raw wait status.
int RunInChild(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

// A fresh directory tree per test: allowed/ (read-only in the policy),
// writable/ (read-write), secret/ (outside the policy), each with a file.
class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kerneleval-sandbox-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    token_ = RandomToken();
    for (const char* dir : {"allowed", "writable", "secret"}) {
      fs::create_directories(root_ / dir);
      std::ofstream(root_ / dir / "file.txt") << token_;
    }
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  FilesystemPolicy Policy() const {
    return {.read_only = {(root_ / "allowed").string()},
            .read_write = {(root_ / "writable").string()}};
  }

  // Reads a whole file; empty on failure, with errno left as the failure.
  static std::string Read(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return "";
    char buffer[256];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    ::close(fd);
    return n > 0 ? std::string(buffer, n) : "";
  }

  // The child's checks for one mechanism; exit codes name the failed check.
  int CheckPolicy(FilesystemMechanism mechanism) const {
    absl::StatusOr<FilesystemMechanism> applied = RestrictFilesystemUsing(Policy(), mechanism);
    if (!applied.ok()) {
      std::fprintf(stderr, "%s\n", applied.status().ToString().c_str());
      return 10;
    }
    if (Read(root_ / "allowed" / "file.txt") != token_) return 11;
    if (!Read(root_ / "secret" / "file.txt").empty()) return 12;
    if (!Read("/etc/passwd").empty()) return 13;
    if (Read(root_ / "writable" / "file.txt") != token_) return 14;
    std::ofstream(root_ / "writable" / "new.txt") << "x";
    if (Read(root_ / "writable" / "new.txt") != "x") return 15;
    const int fd = ::open((root_ / "allowed" / "new.txt").c_str(), O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) return 16;
    if (::open((root_ / "allowed" / "file.txt").c_str(), O_WRONLY) >= 0) return 17;
    // Relative walks out of an allowed directory reach nothing either.
    if (::chdir((root_ / "allowed").c_str()) != 0) return 18;
    if (!Read("../secret/file.txt").empty()) return 19;
    return 0;
  }

  fs::path root_;
  std::string token_;
};

TEST_F(SandboxTest, ProbeDescribesThisKernel) {
  const Capabilities capabilities = Probe();
  EXPECT_EQ(capabilities.root, ::geteuid() == 0);
  const std::string description = DescribeCapabilities(capabilities);
  EXPECT_NE(description.find("file-system sandbox"), std::string::npos) << description;
  std::printf("sandbox capabilities: %s\n", description.c_str());
}

TEST_F(SandboxTest, LandlockAllowsOnlyThePolicy) {
  if (Probe().landlock_abi == 0) GTEST_SKIP() << "kernel without Landlock";
  const int status = RunInChild([&] { return CheckPolicy(FilesystemMechanism::kLandlock); });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(SandboxTest, MountNamespaceFallbackAllowsOnlyThePolicy) {
  const Capabilities capabilities = Probe();
  if (!capabilities.root && !capabilities.user_namespaces) {
    GTEST_SKIP() << "neither root nor user namespaces: the fallback cannot apply here";
  }
  const int status = RunInChild([&] {
    if (int rc = CheckPolicy(FilesystemMechanism::kMountNamespace); rc != 0) return rc;
    // The mount namespace hides files outright: not even their metadata.
    struct stat st {};
    if (::stat((root_ / "secret" / "file.txt").c_str(), &st) == 0) return 20;
    if (::stat("/proc/self/environ", &st) == 0) return 21;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(SandboxTest, LayeredMechanismHidesAndGuards) {
  const Capabilities capabilities = Probe();
  const int status = RunInChild([&] {
    absl::StatusOr<FilesystemMechanism> applied =
        RestrictFilesystemUsing(Policy(), FilesystemMechanism::kLandlockAndMountNamespace);
    if (!applied.ok()) return 10;
    const bool both =
        capabilities.landlock_abi > 0 && (capabilities.root || capabilities.user_namespaces);
    if (both && *applied != FilesystemMechanism::kLandlockAndMountNamespace) return 11;
    if (Read(root_ / "allowed" / "file.txt") != token_) return 12;
    if (!Read(root_ / "secret" / "file.txt").empty()) return 13;
    struct stat st {};
    if (*applied != FilesystemMechanism::kLandlock &&
        ::stat((root_ / "secret" / "file.txt").c_str(), &st) == 0) {
      return 14;
    }
    // Landlock still applies inside the namespace: the read-only mount's
    // directory cannot gain a file even where the bind mount would allow it.
    if (::open((root_ / "allowed" / "new.txt").c_str(), O_CREAT | O_WRONLY, 0644) >= 0) return 15;
    std::ofstream(root_ / "writable" / "new.txt") << "x";
    if (Read(root_ / "writable" / "new.txt") != "x") return 16;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(SandboxTest, AutoPicksAMechanismAndNeverNone) {
  const int status = RunInChild([&] { return CheckPolicy(FilesystemMechanism::kAuto); });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(SandboxTest, FilesCanBeAllowedOneByOne) {
  const int status = RunInChild([&] {
    FilesystemPolicy policy{.read_only = {(root_ / "secret" / "file.txt").string()}};
    if (!RestrictFilesystem(policy).ok()) return 10;
    if (Read(root_ / "secret" / "file.txt") != token_) return 11;
    if (!Read(root_ / "allowed" / "file.txt").empty()) return 12;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(SandboxTest, RefusesRelativePathsAndThreads) {
  EXPECT_EQ(RestrictFilesystem({.read_only = {"relative/dir"}}).code(),
            absl::StatusCode::kInvalidArgument);
  const int status = RunInChild([&] {
    std::thread sleeper([] { ::sleep(2); });
    const absl::Status s = RestrictFilesystem(Policy());
    sleeper.detach();
    return s.code() == absl::StatusCode::kFailedPrecondition ? 0 : 1;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(SandboxTest, FailsClosedWhenNoMechanismWorks) {
  // Under the seccomp profile neither Landlock nor mount(2) is available: the
  // call must report an error instead of returning unrestricted.
  const int status = RunInChild([&] {
    if (!RestrictSyscalls(SyscallProfile::kKernel).ok()) return 10;
    const absl::Status s = RestrictFilesystem(Policy());
    if (s.ok()) return 11;
    if (s.message().find("no file-system sandbox") == std::string_view::npos) return 12;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// ------------------------------------------------------------------ seccomp

int ExpectEperm(long rc) { return rc == -1 && errno == EPERM ? 0 : 1; }

TEST(SyscallsTest, KernelProfileRefusesSocketsAndProcessesWithEperm) {
  const int status = RunInChild([] {
    if (!RestrictSyscalls(SyscallProfile::kKernel).ok()) return 10;
    if (ExpectEperm(::socket(AF_INET, SOCK_STREAM, 0))) return 11;
    if (ExpectEperm(::socket(AF_UNIX, SOCK_STREAM, 0))) return 12;
    int pair[2];
    if (ExpectEperm(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair))) return 13;
    if (ExpectEperm(::fork())) return 14;  // glibc's fork is clone without CLONE_THREAD
    if (ExpectEperm(::kill(::getppid(), 0))) return 15;
    if (ExpectEperm(::unshare(CLONE_NEWUSER))) return 16;
    // Threads still work, and so does signalling oneself.
    int value = 0;
    std::thread([&] { value = 1; }).join();
    if (value != 1) return 17;
    if (::kill(::getpid(), 0) != 0) return 18;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SyscallsTest, KernelCodeProfileRefusesSharedMemoryAndSignalsSentLater) {
  const int status = RunInChild([] {
    if (!RestrictSyscalls(SyscallProfile::kKernelCode).ok()) return 10;
    if (ExpectEperm(::memfd_create("hoard", 0))) return 11;
    if (ExpectEperm(::shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600))) return 12;
    if (ExpectEperm(::msgget(IPC_PRIVATE, IPC_CREAT | 0600))) return 13;
    if (ExpectEperm(::semget(IPC_PRIVATE, 1, IPC_CREAT | 0600))) return 14;
    sigevent event{};
    event.sigev_notify = SIGEV_SIGNAL;
    event.sigev_signo = SIGCONT;
    timer_t timer;
    if (ExpectEperm(::timer_create(CLOCK_MONOTONIC, &event, &timer))) return 15;
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return 16;
    if (ExpectEperm(::fcntl(pipe_fds[0], F_SETSIG, SIGCONT))) return 17;
    if (ExpectEperm(::fcntl(pipe_fds[0], F_SETOWN, ::getpid()))) return 18;
    // Stopping itself (it would hold its worker until the deadline); the
    // signals are ignored first so that a regression fails rather than
    // stops this child (SIGSTOP cannot be ignored; its rule is the same).
    ::signal(SIGTTIN, SIG_IGN);
    ::signal(SIGTSTP, SIG_IGN);
    if (ExpectEperm(::kill(::getpid(), SIGTTIN))) return 22;
    if (ExpectEperm(::raise(SIGTSTP) != 0 ? -1 : 0)) return 23;  // tgkill
    // ... also with bits above the 32 the kernel reads set.
    if (ExpectEperm(::syscall(SYS_kill, ::getpid(), SIGTTIN | (1L << 32)))) return 27;
    if (ExpectEperm(::syscall(SYS_fcntl, pipe_fds[0], F_SETSIG | (1L << 32), SIGCONT))) return 28;
    // Other processes (pid 1 exists everywhere): scheduling, priority of the
    // uid or group, process groups and sessions, I/O priority,
    // capabilities. Its own scheduling is fine.
    if (ExpectEperm(::getpriority(PRIO_PROCESS, 1))) return 24;
    if (ExpectEperm(::setpriority(PRIO_USER, 0, 19))) return 29;
    if (ExpectEperm(::getpriority(PRIO_PGRP, 0))) return 30;
    errno = 0;
    if (::getpriority(PRIO_PROCESS, 0) == -1 && errno != 0) return 31;
    cpu_set_t cpus;
    if (ExpectEperm(::sched_getaffinity(1, sizeof(cpus), &cpus))) return 25;
    if (::sched_getaffinity(0, sizeof(cpus), &cpus) != 0) return 26;
    if (ExpectEperm(::getpgid(1))) return 32;
    if (::getpgid(0) < 0) return 33;
    if (ExpectEperm(::syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0))) return 34;
    // Shared anonymous memory (kept by its shmem object when dropped from
    // the page tables); private anonymous memory is fine.
    void* shared =
        ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared != MAP_FAILED || errno != EPERM) return 35;
    void* own =
        ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (own == MAP_FAILED) return 36;
    // A priority-inheritance futex on a word naming pid 1 (ESRCH or not
    // tells whether a pid exists), and ioctl's F_SETOWN.
    uint32_t futex_word = 1;
    if (ExpectEperm(
            ::syscall(SYS_futex, &futex_word, 6 /* FUTEX_LOCK_PI */, 0, nullptr, nullptr, 0))) {
      return 37;
    }
    const int owner = ::getpid();
    if (ExpectEperm(::ioctl(pipe_fds[0], FIOSETOWN, &owner))) return 38;
    // The host's free memory and process count (moved by other evaluations).
    struct sysinfo host {};
    if (ExpectEperm(::sysinfo(&host))) return 39;
    // State of a shared inode (group members passed answers through read
    // locks on the host's /dev/null, their stdio): locks, mode, owner,
    // times, extended attributes.
    const int null_fd = ::open("/dev/null", O_RDWR);
    if (null_fd < 0) return 40;
    if (ExpectEperm(::flock(null_fd, LOCK_SH | LOCK_NB))) return 41;
    struct flock lock {};
    lock.l_type = F_RDLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = 123456;
    lock.l_len = 1;
    if (ExpectEperm(::fcntl(null_fd, F_SETLK, &lock))) return 42;
    if (ExpectEperm(::fcntl(null_fd, F_GETLK, &lock))) return 43;
    if (ExpectEperm(::fcntl(null_fd, F_OFD_GETLK, &lock))) return 44;
    if (ExpectEperm(::fchmod(null_fd, 0666))) return 45;
    if (ExpectEperm(::fchown(null_fd, ::getuid(), ::getgid()))) return 46;
    if (ExpectEperm(::futimens(null_fd, nullptr))) return 47;
    char attribute[16];
    if (ExpectEperm(::fgetxattr(null_fd, "user.x", attribute, sizeof attribute))) return 48;
    // Calls by number, also those newer than Debian 12's libseccomp names:
    // fchmodat2 (452, named: EPERM), setxattrat (463), file_setattr (469).
    int code = 49;
    for (const long number : {452L, 463L, 469L}) {
      errno = 0;
      if (::syscall(number, AT_FDCWD, "/dev/null", 0, 0, 0, 0) != -1 ||
          (errno != ENOSYS && errno != EPERM)) {
        return code;
      }
      ++code;
    }
    // The rest of fcntl, threads and kKernel's rules still apply as before.
    if (::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK) != 0) return 19;
    if (::fcntl(null_fd, F_GETFL) < 0) return 52;
    int value = 0;
    std::thread([&] { value = 1; }).join();
    if (value != 1) return 20;
    if (ExpectEperm(::fork())) return 21;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SyscallsTest, DenyNewThreadsStopsThreadsButNotThoseRunning) {
  const int status = RunInChild([] {
    std::atomic<int> ticks{0};
    std::atomic<bool> stop{false};
    std::thread running([&] {
      while (!stop) ++ticks;
    });
    auto result = [&] {
      if (!RestrictSyscalls(SyscallProfile::kKernelCode).ok()) return 10;
      if (!DenyNewThreads().ok()) return 11;
      pthread_t thread;
      const int rc = ::pthread_create(
          &thread, nullptr, [](void*) -> void* { return nullptr; }, nullptr);
      if (rc == 0) return 12;  // a thread was started
      // The running one goes on (waits up to 2 s for a core on a busy machine).
      const int before = ticks.load();
      for (int i = 0; i < 2000 && ticks.load() == before; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      return ticks.load() == before ? 13 : 0;
    }();
    stop = true;
    running.join();
    return result;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SyscallsTest, KernelProfileKillsOnExecve) {
  const int status = RunInChild([] {
    if (!RestrictSyscalls(SyscallProfile::kKernel).ok()) return 10;
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::execve("/bin/true", argv, nullptr);
    return 11;  // execve returned: not killed
  });
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(SyscallsTest, BothProfilesKillOnPtrace) {
  for (SyscallProfile profile : {SyscallProfile::kKernel, SyscallProfile::kCompiler}) {
    const int status = RunInChild([profile] {
      if (!RestrictSyscalls(profile).ok()) return 10;
      ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
      return 11;
    });
    ASSERT_TRUE(WIFSIGNALED(status)) << status;
    EXPECT_EQ(WTERMSIG(status), SIGSYS);
  }
}

// gVisor (about half the lent GPU machines) answers seccomp's action probe
// with EINVAL, so libseccomp refuses SCMP_ACT_KILL_PROCESS: every profile
// failed to load there ("seccomp_rule_add(ptrace): Invalid argument") and no
// compile could run. Under the same answers (tests/support/gvisor_like) each
// profile loads and a refused call still ends the process; Probe still
// reports seccomp.
TEST(SyscallsTest, UnderGvisorsSeccompAnswersTheProfilesLoadAndStillKill) {
  for (SyscallProfile profile :
       {SyscallProfile::kKernel, SyscallProfile::kKernelCode, SyscallProfile::kCompiler}) {
    const int status = RunInChild([profile] {
      if (!testing::LoadGvisorLikeFilter()) return 9;
      seccomp_reset(nullptr, 0);             // forget what libseccomp probed before the filter
      if (seccomp_api_get() >= 3) return 8;  // the answers are not gVisor's
      if (!Probe().seccomp) return 7;
      if (absl::Status s = RestrictSyscalls(profile); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 10;
      }
      ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
      return 11;
    });
    ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 9) << "the filter did not load";
    ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 8) << "libseccomp still sees level 3+";
    ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << "Probe says no seccomp";
    ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 10) << "the profile did not load";
    ASSERT_TRUE(WIFSIGNALED(status)) << "ptrace was not refused: " << status;
    EXPECT_EQ(WTERMSIG(status), SIGSYS);
  }
}

// Where a forbidden call is SIGSYS rather than KILL_PROCESS (gVisor), kernel
// code that set a handler for it lived on; it may not set one (red team
// rt13 #4), under either action.
TEST(SyscallsTest, KernelCodeMayNotCatchSigsys) {
  for (const bool gvisor_like : {false, true}) {
    const int status = RunInChild([gvisor_like] {
      if (gvisor_like) {
        if (!testing::LoadGvisorLikeFilter()) return 9;
        seccomp_reset(nullptr, 0);
      }
      if (!RestrictSyscalls(SyscallProfile::kKernelCode).ok()) return 10;
      struct sigaction action {};
      action.sa_handler = [](int) {};
      if (::sigaction(SIGSYS, &action, nullptr) == 0 || errno != EPERM) return 12;
      // Other signals' handlers are the program's business.
      if (::sigaction(SIGUSR1, &action, nullptr) != 0) return 13;
      ::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
      return 11;
    });
    ASSERT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 12)
        << "a SIGSYS handler was set (gVisor-like: " << gvisor_like << ")";
    ASSERT_TRUE(WIFSIGNALED(status))
        << "exit " << WEXITSTATUS(status) << ", gVisor-like " << gvisor_like;
    EXPECT_EQ(WTERMSIG(status), SIGSYS);
  }
}

TEST(SyscallsTest, CompilerProfileMayForkAndExecButNotConnect) {
  const int status = RunInChild([] {
    if (!RestrictSyscalls(SyscallProfile::kCompiler).ok()) return 10;
    if (ExpectEperm(::socket(AF_INET6, SOCK_DGRAM, 0))) return 11;
    if (ExpectEperm(::kill(-1, 0))) return 12;
    const pid_t child = ::fork();
    if (child < 0) return 13;
    if (child == 0) {
      char* argv[] = {const_cast<char*>("/bin/sh"), const_cast<char*>("-c"),
                      const_cast<char*>("exit 7"), nullptr};
      ::execve("/bin/sh", argv, nullptr);
      ::_exit(99);
    }
    int child_status = 0;
    ::waitpid(child, &child_status, 0);
    if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 7) return 14;
    return 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(SyscallsTest, RootLosesItsCapabilities) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root";
  const int status = RunInChild([] {
    if (!RestrictSyscalls(SyscallProfile::kKernel).ok()) return 10;
    // CAP_CHOWN is gone: chown of a file to another user fails.
    char path[] = "/tmp/kerneleval-cap-XXXXXX";
    const int fd = ::mkstemp(path);
    if (fd < 0) return 11;
    const int rc = ::fchown(fd, 65534, 65534);
    ::close(fd);
    ::unlink(path);
    return rc == 0 ? 12 : 0;
  });
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace kerneleval::sandbox
