#include "evaluator/process/worker_process.h"

#include <fcntl.h>
#include <google/protobuf/wrappers.pb.h>
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "evaluator/process/framing.h"
#include "tests/support/gvisor_like/gvisor_like_seccomp.h"

namespace kerneleval::process {
namespace {

static_assert(std::is_nothrow_move_constructible_v<WorkerProcess>);
static_assert(std::is_nothrow_move_assignable_v<WorkerProcess>);
static_assert(!std::is_copy_constructible_v<WorkerProcess>);

WorkerProcess StartTestWorker() {
  IgnoreSigpipe();
  WorkerOptions options;
  options.binary = KERNELEVAL_TEST_WORKER;
  options.mode = "test";
  auto worker = WorkerProcess::Start(options);
  EXPECT_TRUE(worker.ok()) << worker.status();
  return std::move(*worker);
}

google::protobuf::StringValue Text(const std::string& s) {
  google::protobuf::StringValue v;
  v.set_value(s);
  return v;
}

absl::Time In(double seconds) { return absl::Now() + absl::Seconds(seconds); }

TEST(WorkerProcessTest, RoundTripsMessagesSmallAndLarge) {
  WorkerProcess worker = StartTestWorker();
  for (const std::string& text : {std::string("a"), std::string(), std::string(3 << 20, 'x')}) {
    google::protobuf::StringValue reply;
    ASSERT_TRUE(worker.Call(Text(text), &reply, In(20)).ok());
    EXPECT_EQ(reply.value(), text);
  }
  EXPECT_TRUE(worker.Alive());
}

// A message over the limit is refused with both sizes (WriteMessage checks
// it against protobuf's 2 GiB, which a test need not allocate).
TEST(FramingTest, AMessageOverTheLimitIsRefusedWithItsSize) {
  const google::protobuf::StringValue message = Text(std::string(1000, 'x'));
  const uint64_t bytes = message.ByteSizeLong();
  EXPECT_TRUE(CheckMessageSize(message, bytes).ok());
  const absl::Status refused = CheckMessageSize(message, bytes - 1);
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_NE(refused.message().find(absl::StrCat("a message of ", bytes,
                                                " bytes exceeds the wire's limit of ", bytes - 1)),
            std::string::npos)
      << refused;
  EXPECT_TRUE(CheckMessageSize(message).ok());
  static_assert(kMaxMessageBytes < kMaxFrameBytes);
}

TEST(WorkerProcessTest, CrashIsUnavailableAndNamesTheSignal) {
  WorkerProcess worker = StartTestWorker();
  google::protobuf::StringValue reply;
  const absl::Status status = worker.Call(Text("crash"), &reply, In(20));
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find("SIGSEGV"), std::string_view::npos) << status;
  EXPECT_EQ(worker.term_signal(), SIGSEGV);
  EXPECT_FALSE(worker.Alive());
}

TEST(WorkerProcessTest, ExitStatusIsReported) {
  WorkerProcess worker = StartTestWorker();
  google::protobuf::StringValue reply;
  const absl::Status status = worker.Call(Text("exit"), &reply, In(20));
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_NE(status.message().find("exited with status 7"), std::string_view::npos) << status;
}

TEST(WorkerProcessTest, HangIsKilledAtTheDeadline) {
  WorkerProcess worker = StartTestWorker();
  google::protobuf::StringValue reply;
  const absl::Time start = absl::Now();
  const absl::Status status = worker.Call(Text("hang"), &reply, In(0.3));
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_FALSE(worker.Alive());
  EXPECT_EQ(worker.term_signal(), SIGKILL);
}

// `gvisor_like`: where the descriptor cannot be executed (gVisor), the path
// is, only while it is the file first started: a worker whose binary was
// replaced does not start rather than run another binary.
void CheckWorkersRunTheBinaryFirstStarted(bool gvisor_like) {
  // As a linker or an upgrade does: a new file renamed over the path.
  IgnoreSigpipe();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("kerneleval-binary-", ::getpid());
  std::filesystem::create_directories(dir);
  const std::filesystem::path binary = dir / "worker";
  std::filesystem::copy_file(KERNELEVAL_TEST_WORKER, binary);
  WorkerOptions options;
  options.binary = binary.string();
  options.mode = "test";
  auto round_trip = [&] {
    absl::StatusOr<WorkerProcess> worker = WorkerProcess::Start(options);
    if (!worker.ok()) return worker.status();
    google::protobuf::StringValue reply;
    if (absl::Status s = worker->Call(Text("hello"), &reply, In(20)); !s.ok()) return s;
    return reply.value() == "hello" ? absl::OkStatus() : absl::DataLossError(reply.value());
  };
  EXPECT_TRUE(round_trip().ok());
  if (gvisor_like) {
    // A working worker, another file: run from its path, it would answer.
    std::filesystem::copy_file(KERNELEVAL_TEST_WORKER, dir / "new");
  } else {
    std::ofstream replacement(dir / "new", std::ios::binary);
    replacement << "not an executable";
  }
  std::filesystem::permissions(dir / "new", std::filesystem::perms::owner_all);
  std::filesystem::rename(dir / "new", binary);
  const absl::Status again = round_trip();
  if (gvisor_like) {
    EXPECT_FALSE(again.ok()) << "a worker ran the replaced binary";
  } else {
    EXPECT_TRUE(again.ok()) << again;
  }
  std::filesystem::remove_all(dir);
}

// Whether this process can execute an O_PATH descriptor (not under gVisor).
bool DescriptorsCanBeExecuted() {
  const int self = ::open("/proc/self/exe", O_PATH | O_CLOEXEC);
  // argv[0] alone: the child execs this test binary asking for no test, and
  // exits 0 at once.
  const pid_t child = ::fork();
  if (child == 0) {
    char name[] = "worker_process_test";
    char filter[] = "--gtest_filter=-*";
    char* argv[] = {name, filter, nullptr};
    char* envp[] = {nullptr};
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, STDOUT_FILENO);
    ::syscall(__NR_execveat, self, "", argv, envp, AT_EMPTY_PATH);
    ::_exit(errno == EACCES || errno == ENOSYS ? 42 : 43);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(self);
  return !(WIFEXITED(status) && WEXITSTATUS(status) == 42);
}

TEST(WorkerProcessTest, WorkersRunTheBinaryFirstStartedEvenWhenThePathGetsANewOne) {
  if (!DescriptorsCanBeExecuted()) {
    GTEST_SKIP() << "descriptors cannot be executed here (gVisor?): "
                    "WhereADescriptorCannotBeExecutedAReplacedBinaryIsNotStarted covers it";
  }
  CheckWorkersRunTheBinaryFirstStarted(/*gvisor_like=*/false);
}

TEST(WorkerProcessTest, WhereADescriptorCannotBeExecutedAReplacedBinaryIsNotStarted) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!testing::LoadGvisorLikeFilter()) ::_exit(2);
    CheckWorkersRunTheBinaryFirstStarted(/*gvisor_like=*/true);
    ::_exit(::testing::Test::HasFailure() ? 1 : 0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 2) << "the seccomp filter could not be loaded";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the child's failures above";
}

TEST(WorkerProcessTest, AScriptWrappingTheWorkerStarts) {
  // A site's wrapper (valgrind, a sandbox) around the worker: run from a
  // descriptor, a script needs that descriptor to survive the exec.
  IgnoreSigpipe();
  const std::filesystem::path script = std::filesystem::temp_directory_path() /
                                       absl::StrCat("kerneleval-wrapper-", ::getpid(), ".sh");
  {
    std::ofstream out(script);
    out << "#!/bin/sh\nexec " << KERNELEVAL_TEST_WORKER << " \"$@\"\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  WorkerOptions options;
  options.binary = script.string();
  options.mode = "test";
  absl::StatusOr<WorkerProcess> worker = WorkerProcess::Start(options);
  ASSERT_TRUE(worker.ok()) << worker.status();
  google::protobuf::StringValue reply;
  const absl::Status status = worker->Call(Text("wrapped"), &reply, In(20));
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(reply.value(), "wrapped");
  std::filesystem::remove(script);
}

// Where a descriptor cannot be executed (gVisor, which about half of the
// lent GPU machines run, answers execveat(fd, "", AT_EMPTY_PATH) with
// EACCES), a worker still starts, from its path: every worker exited 127 at
// once before, and no backend could start there. A child process takes
// gVisor's answers (tests/support/gvisor_like) and starts a worker.
TEST(WorkerProcessTest, AWorkerStartsWhereADescriptorCannotBeExecuted) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (!testing::LoadGvisorLikeFilter()) ::_exit(2);
    // The filter works: a descriptor of this very binary cannot be executed.
    const int self = ::open("/proc/self/exe", O_PATH | O_CLOEXEC);
    char* no_args[] = {nullptr};
    if (::syscall(__NR_execveat, self, "", no_args, no_args, AT_EMPTY_PATH) == 0 ||
        errno != EACCES) {
      ::_exit(3);
    }
    IgnoreSigpipe();
    WorkerOptions options;
    options.binary = KERNELEVAL_TEST_WORKER;
    options.mode = "test";
    absl::StatusOr<WorkerProcess> worker = WorkerProcess::Start(options);
    if (!worker.ok()) ::_exit(4);
    google::protobuf::StringValue reply;
    const bool answered = worker->Call(Text("hello"), &reply, In(20)).ok();
    ::_exit(answered && reply.value() == "hello" ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_NE(WEXITSTATUS(status), 2) << "the seccomp filter could not be loaded";
  ASSERT_NE(WEXITSTATUS(status), 3) << "the filter did not refuse execveat";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the worker did not start or answer (4: Start failed)";
}

TEST(WorkerProcessTest, MissingBinaryIsAClearError) {
  WorkerOptions options;
  options.binary = "/nonexistent/kerneleval-worker";
  const auto worker = WorkerProcess::Start(options);
  ASSERT_FALSE(worker.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(worker.status()));
}

// The server blocks SIGTERM, SIGINT and SIGHUP to wait for them; a worker
// starts with none blocked.
TEST(WorkerProcessTest, AWorkerStartsWithNoSignalBlocked) {
  sigset_t blocked;
  sigset_t old;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGHUP);
  sigaddset(&blocked, SIGTERM);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &blocked, &old), 0);
  WorkerProcess worker = StartTestWorker();
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, &old, nullptr), 0);
  google::protobuf::StringValue reply;
  ASSERT_TRUE(worker.Call(Text("a"), &reply, In(20)).ok());  // it has exec'd
  std::ifstream status(absl::StrCat("/proc/", worker.pid(), "/status"));
  std::string line;
  std::string sig_blk;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) sig_blk = line;
  }
  EXPECT_EQ(sig_blk, "SigBlk:\t0000000000000000");
}

// The backend's settings win over what the server inherited (an inherited
// CUDA_LAUNCH_BLOCKING=1 came first and won: getenv returns the first).
TEST(WorkerProcessTest, ExtraEnvironmentReplacesOrRemovesInheritedVariables) {
  ASSERT_EQ(::setenv("KERNELEVAL_TEST_REPLACED", "inherited", 1), 0);
  ASSERT_EQ(::setenv("KERNELEVAL_TEST_REMOVED", "inherited", 1), 0);
  ASSERT_EQ(::setenv("KERNELEVAL_TEST_KEPT", "inherited", 1), 0);
  IgnoreSigpipe();
  WorkerOptions options;
  options.binary = KERNELEVAL_TEST_WORKER;
  options.mode = "test";
  options.extra_env = {"KERNELEVAL_TEST_REPLACED=given", "KERNELEVAL_TEST_REMOVED",
                       "KERNELEVAL_TEST_ADDED=given"};
  auto worker = WorkerProcess::Start(options);
  ::unsetenv("KERNELEVAL_TEST_REPLACED");
  ::unsetenv("KERNELEVAL_TEST_REMOVED");
  ::unsetenv("KERNELEVAL_TEST_KEPT");
  ASSERT_TRUE(worker.ok()) << worker.status();
  google::protobuf::StringValue reply;
  ASSERT_TRUE(worker->Call(Text("a"), &reply, In(20)).ok());  // it has exec'd
  std::ifstream environ_file(absl::StrCat("/proc/", worker->pid(), "/environ"));
  std::vector<std::string> ours;
  for (std::string entry; std::getline(environ_file, entry, '\0');) {
    if (entry.rfind("KERNELEVAL_TEST_", 0) == 0) ours.push_back(entry);
  }
  std::sort(ours.begin(), ours.end());
  EXPECT_EQ(ours, (std::vector<std::string>{"KERNELEVAL_TEST_ADDED=given",
                                            "KERNELEVAL_TEST_KEPT=inherited",
                                            "KERNELEVAL_TEST_REPLACED=given"}));
}

TEST(WorkerProcessTest, DestructorKillsTheChild) {
  pid_t pid;
  {
    WorkerProcess worker = StartTestWorker();
    pid = worker.pid();
    ASSERT_GT(pid, 0);
  }
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: no such process
}

}  // namespace
}  // namespace kerneleval::process
