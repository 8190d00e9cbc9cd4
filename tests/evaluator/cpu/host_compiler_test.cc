// HostCompiler (evaluator/cpu/host_compiler.h): what a submission's compile
// may read and write, and what the cache keeps.
#include "evaluator/cpu/host_compiler.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "evaluator/cpu/cpu_worker.h"
#include "tests/support/scoped_temp_dir.h"

namespace kerneleval::cpu {
namespace {

namespace fs = std::filesystem;

class HostCompilerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(temp_dir_.ok()); }

  // No precompiled prelude: each test's cache is new, and building one
  // takes ~10 s.
  HostCompilerOptions Options() const {
    HostCompilerOptions options;
    options.prelude_dir = DefaultPreludeDir();
    options.cuda_include_dir = DefaultCudaIncludeDir();
    options.cache_dir = (dir_ / "cache").string();
    options.precompiled_prelude = false;
    return options;
  }

  // The size of every cached library [bytes], and how many there are.
  std::pair<uintmax_t, int> CachedLibraries() const {
    uintmax_t bytes = 0;
    int count = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_ / "cache" / "lib", ec)) {
      bytes += fs::file_size(entry.path() / "lib.so", ec);
      ++count;
    }
    return {bytes, count};
  }

  test_support::ScopedTempDir temp_dir_{"kerneleval-host-compiler-test"};
  fs::path dir_ = temp_dir_.path();
};

TEST_F(HostCompilerTest, AHugeInitialisedArrayIsACompileFailureAndIsNotKept) {
  // 32 MiB of initialised data from a few bytes of source; a 900 MB one
  // was kept in the cache (512 entries of it would fill a disk).
  HostCompilerOptions options = Options();
  options.max_library_bytes = 8 << 20;
  absl::StatusOr<HostCompiler> compiler = HostCompiler::Create(options);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  absl::StatusOr<HostCompileResult> result =
      compiler->Compile("char big[32 << 20] = {1};\nextern \"C\" char* Big() { return big; }\n");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->success);
  EXPECT_NE(result->log.find("exceeds 8 MiB"), std::string::npos) << result->log;
  EXPECT_EQ(CachedLibraries().second, 0);
  // A small one still compiles and is kept.
  result = compiler->Compile("extern \"C\" int Answer() { return 42; }\n");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->success) << result->log;
  EXPECT_EQ(CachedLibraries().second, 1);
}

TEST_F(HostCompilerTest, TheCacheKeepsAtMostItsBytesNewestFirst) {
  HostCompilerOptions options = Options();
  options.max_cache_bytes = 1;  // below any library: only the newest stays
  absl::StatusOr<HostCompiler> compiler = HostCompiler::Create(options);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  std::string newest;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<HostCompileResult> result =
        compiler->Compile(absl::StrCat("extern \"C\" int Answer() { return ", i, "; }\n"));
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_TRUE(result->success) << result->log;
    newest = result->library_path;
  }
  EXPECT_EQ(CachedLibraries().second, 1);
  EXPECT_TRUE(fs::exists(newest));
}

// Compilers sharing a cache (the worker and the compile stage's builders
// are processes of their own) build one program once: those that come
// while it builds wait for it (an flock per key) and find it built. Each
// compiler runs in a child process: HostCompiler forks and sandboxes its
// compiler, which needs a single-threaded process (host_compiler.h).
TEST_F(HostCompilerTest, CompilersSharingACacheBuildAProgramOnce) {
  constexpr int kCompilers = 3;
  // ~0.5-1 s of g++'s constant evaluation: the others arrive while it builds.
  const std::string source =
      "constexpr unsigned Spin(unsigned n) { unsigned x = 1; "
      "for (unsigned i = 0; i < n; ++i) x = x * 1664525u + i; return x; }\n"
      "constexpr unsigned kSpun1 = Spin(250000u), kSpun2 = Spin(249999u), "
      "kSpun3 = Spin(249998u);\n"
      "extern \"C\" unsigned Spun() { return kSpun1 ^ kSpun2 ^ kSpun3; }\n";
  // A child's exit status: what its compile did.
  enum : int { kBuilt = 0, kCacheHit = 1, kFailed = 2 };
  const HostCompilerOptions options = Options();
  std::vector<pid_t> children;
  for (int i = 0; i < kCompilers; ++i) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      absl::StatusOr<HostCompiler> compiler = HostCompiler::Create(options);
      absl::StatusOr<HostCompileResult> result =
          compiler.ok() ? compiler->Compile(source) : compiler.status();
      ::_exit(!result.ok() || !result->success ? kFailed : result->cache_hit ? kCacheHit : kBuilt);
    }
    children.push_back(pid);
  }
  int built = 0;
  for (const pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "compiler process ended by a signal";
    ASSERT_NE(WEXITSTATUS(status), kFailed) << "a compile failed";
    built += WEXITSTATUS(status) == kBuilt;
  }
  EXPECT_EQ(built, 1) << "compilers sharing the cache built the same program again";
  EXPECT_EQ(CachedLibraries().second, 1);
}

// The processes (other than this one) whose environment holds `entry`
// exactly: a compile's g++ and its passes have TMPDIR set to their work
// directory, under this test's own directory.
std::vector<pid_t> ProcessesWithEnvironmentEntry(const std::string& entry) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string name = proc.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (pid == ::getpid()) continue;
    std::ifstream in(proc.path() / "environ", std::ios::binary);
    std::string variable;
    while (std::getline(in, variable, '\0')) {
      if (variable.rfind(entry, 0) == 0) {
        found.push_back(pid);
        break;
      }
    }
  }
  return found;
}

// A worker (or a compile-stage builder) killed while it compiles takes its
// whole compile with it: g++ died with it, but the cc1plus g++ had started
// ran on to its CPU limit (timeout + 5 s) with nobody waiting for it.
TEST_F(HostCompilerTest, NothingOfACompileOutlivesTheProcessThatStartedIt) {
  // ~25 s of g++'s constant evaluation (each Spin ~0.3 s): it is killed
  // long before.
  std::string source =
      "constexpr unsigned Spin(unsigned n) { unsigned x = 1; "
      "for (unsigned i = 0; i < n; ++i) x = x * 1664525u + i; return x; }\n";
  std::string spun = "extern \"C\" unsigned Spun() { return 0";
  for (int i = 0; i < 80; ++i) {
    absl::StrAppend(&source, "constexpr unsigned kSpun", i, " = Spin(", 250000 - i, "u);\n");
    absl::StrAppend(&spun, " ^ kSpun", i);
  }
  absl::StrAppend(&source, spun, "; }\n");
  const HostCompilerOptions options = Options();
  const pid_t worker = ::fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    absl::StatusOr<HostCompiler> compiler = HostCompiler::Create(options);
    if (compiler.ok()) (void)compiler->Compile(source);
    ::_exit(0);
  }
  // TMPDIR=<cache>/work/<pid>-<n>: this test's compiles only.
  const std::string tmpdir = absl::StrCat("TMPDIR=", (dir_ / "cache" / "work").string(), "/");
  bool compiling = false;
  for (int i = 0; i < 400 && !compiling; ++i) {  // up to 20 s
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (const pid_t pid : ProcessesWithEnvironmentEntry(tmpdir)) {
      std::ifstream comm(absl::StrCat("/proc/", pid, "/comm"));
      std::string name;
      std::getline(comm, name);
      compiling = compiling || name == "cc1plus";
    }
  }
  ::kill(worker, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(worker, &status, 0), worker);
  ASSERT_TRUE(compiling) << "no cc1plus of this test's compile was seen";
  std::vector<pid_t> left = ProcessesWithEnvironmentEntry(tmpdir);
  for (int i = 0; i < 100 && !left.empty(); ++i) {  // up to 5 s
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = ProcessesWithEnvironmentEntry(tmpdir);
  }
  for (const pid_t pid : left) ::kill(pid, SIGKILL);  // not to burn the CI's CPU
  EXPECT_TRUE(left.empty()) << left.size()
                            << " process(es) of the compile outlived the process that started it";
}

TEST_F(HostCompilerTest, AHostFilesExistenceIsNotVisibleToTheSource) {
  // With Landlock alone, every file outside the policy still existed for
  // the compiler: `__has_include` of one was true ("Permission denied" on
  // #include), of a missing one false: an oracle over the host's files.
  const fs::path secret = dir_ / "secret.txt";
  std::ofstream(secret) << "secret";
  absl::StatusOr<HostCompiler> compiler = HostCompiler::Create(Options());
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  absl::StatusOr<HostCompileResult> result = compiler->Compile(absl::StrCat(
      "#if __has_include(\"", secret.string(), "\") || __has_include(\"/etc/passwd\")\n",
      "#error a host file is visible\n#endif\nextern \"C\" int Answer() { return 42; }\n"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->success) << result->log;
}

}  // namespace
}  // namespace kerneleval::cpu
