// CompileService with real, sandboxed worker processes: every route to a
// host file is refused without leaking a planted token, compile bombs hit
// the time limit and the worker is replaced, the cache hits, misses and
// survives a restart, bad input is refused.
#include "evaluator/compile/compile_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "tests/support/scoped_temp_dir.h"

namespace kerneleval::compile {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string RandomToken() {
  std::random_device device;
  return "kerneleval_secret_" + std::to_string(device()) + "_" + std::to_string(device());
}

CompileServiceOptions TestOptions() {
  CompileServiceOptions options;
  options.worker_binary = KERNELEVAL_TEST_COMPILE_WORKER;
  options.workers = 2;
  options.timeout = absl::Seconds(60);  // generous: the test machine may be loaded
  return options;
}

CompileJob Job(std::string source, std::vector<std::string> options = {}) {
  CompileJob job;
  job.source = std::move(source);
  for (auto& o : options) job.options.add_options(o);
  return job;
}

// Everything a caller could see of a result, in every encoding.
std::string Everything(const v1::CompileResult& result) {
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(result, &json);
  return result.SerializeAsString() + "\n" + result.DebugString() + "\n" + json;
}

class CompileServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // A secret in the environment the workers inherit: /proc/self/environ
    // must stay out of reach too.
    env_token_ = new std::string(RandomToken());
    ::setenv("KERNELEVAL_TEST_SECRET", env_token_->c_str(), 1);
    absl::StatusOr<std::unique_ptr<CompileService>> service = CompileService::Create(TestOptions());
    ASSERT_TRUE(service.ok()) << service.status();
    service_ = service->release();
  }
  static void TearDownTestSuite() {
    delete service_;
    delete env_token_;
  }

  void SetUp() override { ASSERT_TRUE(temp_dir_.ok()); }

  static v1::CompileResult MustCompile(const CompileJob& job, CompileService* service = nullptr) {
    absl::StatusOr<v1::CompileResult> result = (service ? service : service_)->Compile(job);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : v1::CompileResult();
  }

  static CompileService* service_;
  static std::string* env_token_;
  test_support::ScopedTempDir temp_dir_{"kerneleval-compile-test"};
  fs::path dir_ = temp_dir_.path();
};
CompileService* CompileServiceTest::service_ = nullptr;
std::string* CompileServiceTest::env_token_ = nullptr;

TEST_F(CompileServiceTest, CompilesInASandboxedWorker) {
  EXPECT_THAT(service_->sandbox_description(), HasSubstr("seccomp"));
  const v1::CompileResult r =
      MustCompile(Job("__global__ void add(float* a, const float* b, int n) {\n"
                      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "  if (i < n) a[i] += b[i];\n"
                      "}\n"));
  EXPECT_TRUE(r.success()) << r.log();
  EXPECT_EQ(r.arch(), "sm_90");
  EXPECT_FALSE(r.toolkit_version().empty());
  EXPECT_GT(r.compile_seconds(), 0.0);
  ASSERT_EQ(r.kernels_size(), 1);
  EXPECT_EQ(r.kernels(0).name(), "add(float*, float const*, int)");
  EXPECT_EQ(r.kernels(0).params_size(), 3);
  EXPECT_TRUE(r.cubin().empty());  // not asked for
  EXPECT_TRUE(r.ptx().empty());
}

// NVRTC remembers that a compile of its process issued a warning it can
// suppress and ends every later log with "Remark: The warnings can be
// suppressed with ...": another request's clean compile on the same worker
// carried it (rt7 #7).
TEST_F(CompileServiceTest, NoRemarkLeaksFromAnEarlierCompileOnTheWorker) {
  CompileServiceOptions options = TestOptions();
  options.workers = 1;
  absl::StatusOr<std::unique_ptr<CompileService>> one_worker = CompileService::Create(options);
  ASSERT_TRUE(one_worker.ok()) << one_worker.status();
  const std::string add =
      "extern \"C\" __global__ void add(const float* a, float* c, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) c[i] = a[i];\n"
      "}\n";
  EXPECT_TRUE(MustCompile(Job(add + "// 1\n"), one_worker->get()).success());
  EXPECT_TRUE(MustCompile(Job("#include <cuda_fp16.h>\n" + add), one_worker->get()).success());
  const v1::CompileResult clean = MustCompile(Job(add + "// 2\n"), one_worker->get());
  EXPECT_TRUE(clean.success()) << clean.log();
  EXPECT_EQ(clean.log().find("Remark"), std::string::npos) << clean.log();
}

TEST_F(CompileServiceTest, ErrorLinesPointIntoTheUsersSource) {
  const v1::CompileResult r =
      MustCompile(Job("// 1\n// 2\n// 3\n// 4\n// 5\n"
                      "__global__ void f(float* x) {\n"
                      "  x[0] = undefined_name;\n"
                      "}\n"));
  EXPECT_FALSE(r.success());
  ASSERT_GE(r.diagnostics_size(), 1);
  EXPECT_EQ(r.diagnostics(0).line(), 7u);
  EXPECT_THAT(r.log(), HasSubstr("kernel.cu(7): error"));
}

// Each route a submission could take to read a host file at compile time.
TEST_F(CompileServiceTest, NoRouteReadsAHostFileOrLeaksIt) {
  const std::string token = RandomToken();
  const fs::path secret = dir_ / "secret.h";
  // Valid-looking C++ that an error message would quote if it were read.
  std::ofstream(secret) << token << " = " << token << ";\n#error " << token << "\n";
  ASSERT_TRUE(fs::exists(secret));
  const std::string path = secret.string();
  std::string up;  // "../" enough times to reach / from any working directory
  for (int i = 0; i < 32; ++i) up += "../";

  const std::vector<std::pair<std::string, std::string>> routes = {
      {"absolute include", "#include \"" + path + "\"\n"},
      {"angle include", "#include <" + path + ">\n"},
      {"relative include", "#include \"" + up + path.substr(1) + "\"\n"},
      {"macro-built include", "#define P(x) #x\n#define Q(x) P(x)\n#include Q(" + path + ")\n"},
      {"include_next", "#include_next \"" + path + "\"\n"},
      {"#embed", "const char data[] = {\n#embed \"" + path + "\"\n};\n"},
      {"environment", "#include \"/proc/self/environ\"\n"},
      {"command line", "#include \"/proc/self/cmdline\"\n"},
      {"stdin", "#include \"/dev/stdin\"\n"},
      {"channel fd", "#include \"/proc/self/fd/3\"\n"},
      {"passwd", "#include \"/etc/passwd\"\n"},
      {"pragma include", "#pragma include \"" + path + "\"\n"},
      {"ptx incbin", "__global__ void k() { asm volatile(\".incbin \\\"" + path + "\\\"\"); }\n"},
  };
  for (const auto& [name, source] : routes) {
    const v1::CompileResult r =
        MustCompile(Job(source + "__global__ void kerneleval_route_probe() {}\n"));
    const std::string all = Everything(r);
    EXPECT_THAT(all, Not(HasSubstr(token))) << name << ":\n" << r.log();
    EXPECT_THAT(all, Not(HasSubstr(*env_token_))) << name << ":\n" << r.log();
    EXPECT_THAT(all, Not(HasSubstr("root:x:0"))) << name << ":\n" << r.log();
    EXPECT_THAT(all, Not(HasSubstr("KERNELEVAL_TEST_SECRET"))) << name << ":\n" << r.log();
  }
}

TEST_F(CompileServiceTest, AHiddenFileLooksExactlyLikeAMissingOne) {
  const fs::path secret = dir_ / "exists.h";
  std::ofstream(secret) << "int x;\n";
  auto log_for = [&](const std::string& path) {
    const v1::CompileResult r = MustCompile(Job("#include \"" + path + "\"\n"));
    // The message, with the path (which differs) replaced; the caret line
    // below it moves with the path's length, so it is left out.
    std::string message = r.log().substr(0, r.log().find('\n')) + "|" +
                          (r.diagnostics_size() ? r.diagnostics(0).message() : "");
    for (size_t at; (at = message.find(path)) != std::string::npos;) {
      message.replace(at, path.size(), "P");
    }
    return message;
  };
  const std::string existing = log_for(secret.string());
  EXPECT_EQ(existing, log_for((dir_ / "missing.h").string()));
  EXPECT_EQ(existing, log_for("/etc/passwd"));
  EXPECT_THAT(existing, HasSubstr("cannot open source file"));
  EXPECT_THAT(existing, Not(HasSubstr("denied")));
}

// The same routes through each file-system mechanism alone: every fallback
// holds on its own.
class CompileSandboxMechanismTest
    : public CompileServiceTest,
      public ::testing::WithParamInterface<sandbox::FilesystemMechanism> {};

TEST_P(CompileSandboxMechanismTest, EachMechanismAloneKeepsHostFilesOut) {
  const sandbox::Capabilities capabilities = sandbox::Probe();
  const sandbox::FilesystemMechanism mechanism = GetParam();
  if (mechanism != sandbox::FilesystemMechanism::kMountNamespace &&
      capabilities.landlock_abi == 0) {
    GTEST_SKIP() << "no Landlock";
  }
  if (mechanism != sandbox::FilesystemMechanism::kLandlock && !capabilities.root &&
      !capabilities.user_namespaces) {
    GTEST_SKIP() << "no mount namespace for this user";
  }
  CompileServiceOptions options = TestOptions();
  options.workers = 1;
  options.filesystem_sandbox = mechanism;
  absl::StatusOr<std::unique_ptr<CompileService>> service = CompileService::Create(options);
  ASSERT_TRUE(service.ok()) << service.status();
  EXPECT_EQ((*service)->sandbox_description(),
            std::string(sandbox::MechanismName(mechanism)) + " + seccomp");

  const std::string token = RandomToken();
  const fs::path secret = dir_ / "secret.h";
  std::ofstream(secret) << token << " = " << token << ";\n";
  for (const std::string& source : std::vector<std::string>{
           "#include \"" + secret.string() + "\"\n", "#include \"/proc/self/environ\"\n",
           "#define P(x) #x\n#include P(" + secret.string() + ")\n",
           "#if __has_include(\"" + secret.string() + "\")\n#error visible\n#endif\n"}) {
    const v1::CompileResult r = MustCompile(Job(source), service->get());
    EXPECT_THAT(Everything(r), Not(HasSubstr(token))) << source << r.log();
    EXPECT_THAT(Everything(r), Not(HasSubstr(*env_token_))) << source << r.log();
    EXPECT_THAT(r.log(), Not(HasSubstr("visible"))) << source;
    EXPECT_THAT(r.log(), Not(HasSubstr("denied"))) << source;
  }
  // And compiling still works, headers included.
  const v1::CompileResult ok = MustCompile(
      Job("#include <cuda_fp16.h>\n__global__ void k(__half* x) { x[0] = __float2half(M_PI); }\n"),
      service->get());
  EXPECT_TRUE(ok.success()) << ok.log();
}

INSTANTIATE_TEST_SUITE_P(
    Mechanisms, CompileSandboxMechanismTest,
    ::testing::Values(sandbox::FilesystemMechanism::kLandlock,
                      sandbox::FilesystemMechanism::kMountNamespace,
                      sandbox::FilesystemMechanism::kLandlockAndMountNamespace),
    [](const auto& info) {
      std::string name = sandbox::MechanismName(info.param);
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// The operator's switch for trusted sources on a machine without a usable
// sandbox (the GPU check on gVisor): the workers run without one, and the
// service says so; a host file the sandbox hides is then readable, which is
// why the switch is an explicit environment variable and never the
// default (CompilesInASandboxedWorker: "seccomp" without it).
TEST_F(CompileServiceTest, TheUnsandboxedSwitchForTrustedSourcesSaysWhatItIs) {
  CompileServiceOptions options = TestOptions();
  options.workers = 1;
  options.worker_env = {absl::StrCat(kUnsandboxedCompileVariable, "=1")};
  absl::StatusOr<std::unique_ptr<CompileService>> service = CompileService::Create(options);
  ASSERT_TRUE(service.ok()) << service.status();
  EXPECT_THAT((*service)->sandbox_description(),
              ::testing::StartsWith(std::string(kUnsandboxedDescriptionPrefix) +
                                    kUnsandboxedCompileVariable));
  const std::string token = RandomToken();
  const fs::path header = dir_ / "trusted.h";
  std::ofstream(header) << "#define TRUSTED_VALUE " << token.size() << "\n";
  const v1::CompileResult r =
      MustCompile(Job("#include \"" + header.string() +
                      "\"\n__global__ void k(int* x) { x[threadIdx.x] = TRUSTED_VALUE; }\n"),
                  service->get());
  EXPECT_TRUE(r.success()) << r.log();
  // Any other value is not the switch: sandboxed as ever.
  options.worker_env = {absl::StrCat(kUnsandboxedCompileVariable, "=yes")};
  service = CompileService::Create(options);
  ASSERT_TRUE(service.ok()) << service.status();
  EXPECT_THAT((*service)->sandbox_description(), HasSubstr("seccomp"));
}

TEST_F(CompileServiceTest, HasIncludeSeesNoHostFile) {
  const fs::path secret = dir_ / "present.h";
  std::ofstream(secret) << "#define PRESENT 1\n";
  auto probe = [&](const std::string& path) {
    const v1::CompileResult r = MustCompile(Job(
        "#if __has_include(\"" + path + "\")\n#error visible\n#else\n#error invisible\n#endif\n"));
    return r.log();
  };
  EXPECT_THAT(probe(secret.string()), HasSubstr("invisible"));
  EXPECT_THAT(probe("/etc/passwd"), HasSubstr("invisible"));
  EXPECT_THAT(probe("/proc/self/environ"), HasSubstr("invisible"));
  // A control: the toolkit's headers are visible, so the probe works.
  EXPECT_THAT(probe("cuda_fp16.h"), Not(HasSubstr("invisible")));
}

TEST_F(CompileServiceTest, CudaHeadersAndCubCompile) {
  const v1::CompileResult r =
      MustCompile(Job("#include <cub/block/block_reduce.cuh>\n"
                      "#include <cuda_fp16.h>\n"
                      "__global__ void reduce(const float* in, float* out, int n) {\n"
                      "  using BlockReduce = cub::BlockReduce<float, 256>;\n"
                      "  __shared__ typename BlockReduce::TempStorage tmp;\n"
                      "  int i = blockIdx.x * 256 + threadIdx.x;\n"
                      "  float s = BlockReduce(tmp).Sum(i < n ? in[i] : 0.f);\n"
                      "  if (threadIdx.x == 0) atomicAdd(out, s);\n"
                      "}\n"));
  EXPECT_TRUE(r.success()) << r.log();
  ASSERT_EQ(r.kernels_size(), 1);
  EXPECT_GT(r.kernels(0).static_shared_bytes(), 0u);
}

// Template kernels are instantiated from name expressions; each instance's
// KernelInfo says which expression it is, and the expressions are part of
// the cache key.
TEST_F(CompileServiceTest, NameExpressionsInstantiateTemplateKernels) {
  const std::string source =
      "namespace ops {\n"
      "template <typename T, int kBlock>\n"
      "__global__ void __launch_bounds__(kBlock) scale(const T* x, T* y, int n) {\n"
      "  int i = blockIdx.x * kBlock + threadIdx.x;\n"
      "  if (i < n) y[i] = x[i] * T(2);\n"
      "}\n"
      "}  // namespace ops\n";
  CompileJob plain = Job(source);
  const v1::CompileResult none = MustCompile(plain, service_);
  EXPECT_TRUE(none.success()) << none.log();
  EXPECT_EQ(none.kernels_size(), 0);  // an uninstantiated template has no code

  CompileJob job = Job(source);
  job.options.add_name_expressions("ops::scale<float, 128>");
  job.options.add_name_expressions("ops::scale<double, 256>");
  const v1::CompileResult r = MustCompile(job, service_);
  ASSERT_TRUE(r.success()) << r.log();
  EXPECT_FALSE(r.cache_hit());
  ASSERT_EQ(r.kernels_size(), 2);
  std::map<std::string, const v1::KernelInfo*> by_expression;
  for (const v1::KernelInfo& kernel : r.kernels())
    by_expression[kernel.name_expression()] = &kernel;
  ASSERT_EQ(by_expression.count("ops::scale<float, 128>"), 1u);
  ASSERT_EQ(by_expression.count("ops::scale<double, 256>"), 1u);
  const v1::KernelInfo& f = *by_expression["ops::scale<float, 128>"];
  EXPECT_EQ(f.name(), "void ops::scale<float, 128>(float const*, float*, int)");
  EXPECT_EQ(f.max_threads_per_block(), 128u);
  ASSERT_EQ(f.params_size(), 3);
  EXPECT_EQ(f.params(0).type(), "float const*");
  EXPECT_EQ(f.params(0).name(), "x");
  EXPECT_EQ(by_expression["ops::scale<double, 256>"]->params(1).type(), "double*");

  // The same expressions in another order: the same entry.
  CompileJob reordered = Job(source);
  reordered.options.add_name_expressions("ops::scale<double, 256>");
  reordered.options.add_name_expressions("ops::scale<float, 128>");
  EXPECT_TRUE(MustCompile(reordered, service_).cache_hit());

  // An expression that does not name an instance is the compile's error.
  CompileJob wrong = Job(source);
  wrong.options.add_name_expressions("ops::scale<float, kNope>");
  const v1::CompileResult failed = MustCompile(wrong, service_);
  EXPECT_FALSE(failed.success());
  EXPECT_THAT(failed.log(), HasSubstr("in the template arguments of a launched kernel"));
  // One that could be more than a name never reaches NVRTC.
  CompileJob injected = Job(source);
  injected.options.add_name_expressions("ops::scale<float, 1>; __global__ void k() {}");
  const uint64_t compiles_before = service_->stats().compiles;
  const v1::CompileResult refused = MustCompile(injected, service_);
  EXPECT_FALSE(refused.success());
  EXPECT_THAT(refused.log(), HasSubstr("name expression"));
  EXPECT_EQ(service_->stats().compiles, compiles_before);
}

TEST_F(CompileServiceTest, RefusedOptionsAreVerdictsNamingTheOption) {
  const uint64_t compiles_before = service_->stats().compiles;
  absl::StatusOr<v1::CompileResult> r =
      service_->Compile(Job("__global__ void k() {}\n", {"-I/etc"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->success());
  EXPECT_THAT(r->log(), HasSubstr("\"-I/etc\""));
  EXPECT_THAT(r->log(), HasSubstr("include paths"));
  ASSERT_EQ(r->diagnostics_size(), 1);
  EXPECT_EQ(r->diagnostics(0).severity(), "error");
  EXPECT_EQ(service_->stats().compiles, compiles_before);  // no worker involved

  CompileJob bad_arch = Job("__global__ void k() {}\n");
  bad_arch.options.set_arch("sm90");
  r = service_->Compile(bad_arch);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->success());
  EXPECT_THAT(r->log(), HasSubstr("sm90"));

  // Allowed options reach NVRTC (and a macro from -D is seen).
  const v1::CompileResult ok = MustCompile(
      Job("__global__ void k(float* x) { x[0] = TILE; }\n", {"-DTILE=32", "--use_fast_math"}));
  EXPECT_TRUE(ok.success()) << ok.log();
}

TEST_F(CompileServiceTest, OversizeAndEmptySourcesAreRefused) {
  CompileServiceOptions options = TestOptions();
  options.max_source_bytes = 1000;
  options.prestart_workers = 0;
  absl::StatusOr<std::unique_ptr<CompileService>> small = CompileService::Create(options);
  ASSERT_TRUE(small.ok()) << small.status();
  absl::StatusOr<v1::CompileResult> r =
      (*small)->Compile(Job("__global__ void k() {}\n" + std::string(1000, ' ')));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("limit is 1000 bytes"));
  EXPECT_EQ((*small)->Compile(Job("")).status().code(), absl::StatusCode::kInvalidArgument);
  // The default limit is 1 MiB.
  r = service_->Compile(Job(std::string((1 << 20) + 1, ' ')));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("1 MiB"));
}

TEST_F(CompileServiceTest, CacheHitsMissesAndSurvivesARestart) {
  CompileServiceOptions options = TestOptions();
  options.workers = 1;
  options.cache_dir = (dir_ / "cache").string();
  const CompileJob job =
      Job("__global__ void cached(int* x) { x[0] = " + RandomToken().substr(18, 6) + "; }\n");
  {
    absl::StatusOr<std::unique_ptr<CompileService>> service = CompileService::Create(options);
    ASSERT_TRUE(service.ok()) << service.status();
    // Without a worker: NOT_FOUND before the compile, the cached result after.
    CompileJob known_only = job;
    known_only.without_worker = true;
    EXPECT_TRUE(absl::IsNotFound((*service)->Compile(known_only).status()));
    EXPECT_EQ((*service)->stats().compiles, 0u);
    const v1::CompileResult first = MustCompile(job, service->get());
    EXPECT_TRUE(first.success()) << first.log();
    EXPECT_FALSE(first.cache_hit());
    absl::StatusOr<v1::CompileResult> known = (*service)->Compile(known_only);
    ASSERT_TRUE(known.ok()) << known.status();
    EXPECT_TRUE(known->cache_hit());
    EXPECT_TRUE(known->cubin().empty());  // what the job did not ask for stays out
    CompileJob with_cubin = job;
    with_cubin.want_cubin = true;
    const v1::CompileResult second = MustCompile(with_cubin, service->get());
    EXPECT_TRUE(second.cache_hit());
    EXPECT_EQ(second.compile_seconds(), 0.0);
    EXPECT_FALSE(second.cubin().empty());  // the cache keeps what a later job may want
    EXPECT_EQ(second.kernels_size(), 1);
    // Other options or another arch: a miss.
    CompileJob fast = job;
    fast.options.add_options("--use_fast_math");
    EXPECT_FALSE(MustCompile(fast, service->get()).cache_hit());
    CompileJob other_arch = job;
    other_arch.options.set_arch("sm_80");
    EXPECT_FALSE(MustCompile(other_arch, service->get()).cache_hit());
    // Compile errors are cached too (they are as deterministic).
    const CompileJob broken = Job("__global__ void k() { nope; }\n");
    EXPECT_FALSE(MustCompile(broken, service->get()).cache_hit());
    EXPECT_TRUE(MustCompile(broken, service->get()).cache_hit());
    EXPECT_EQ((*service)->stats().cache_hits, 3u);
  }
  // A new service over the same directory starts warm.
  options.prestart_workers = 0;
  absl::StatusOr<std::unique_ptr<CompileService>> restarted = CompileService::Create(options);
  ASSERT_TRUE(restarted.ok());
  const v1::CompileResult after = MustCompile(job, restarted->get());
  EXPECT_TRUE(after.cache_hit());
  EXPECT_TRUE(after.success());
  EXPECT_EQ((*restarted)->stats().compiles, 0u);
  EXPECT_EQ((*restarted)->stats().workers_started, 0u);
}

TEST_F(CompileServiceTest, IdenticalConcurrentCompilesRunOnce) {
  CompileServiceOptions options = TestOptions();
  absl::StatusOr<std::unique_ptr<CompileService>> service = CompileService::Create(options);
  ASSERT_TRUE(service.ok());
  const CompileJob job = Job("#include <cuda_fp16.h>\n__global__ void once(__half* x) { x[0] = " +
                             std::to_string(std::random_device()() % 100000) + "; }\n");
  std::vector<std::thread> threads;
  std::vector<absl::StatusOr<v1::CompileResult>> results(6, absl::UnknownError("unset"));
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = (*service)->Compile(job); });
  }
  for (auto& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->success()) << r->log();
  }
  const CompileServiceStats stats = (*service)->stats();
  EXPECT_EQ(stats.compiles, 1u);
  EXPECT_EQ(stats.shared_inflight + stats.cache_hits, results.size() - 1);
}

TEST_F(CompileServiceTest, CompileBombHitsTheLimitAndTheWorkerIsReplaced) {
  CompileServiceOptions options = TestOptions();
  options.workers = 1;
  options.timeout = absl::Seconds(3);
  absl::StatusOr<std::unique_ptr<CompileService>> service = CompileService::Create(options);
  ASSERT_TRUE(service.ok());
  // 2^30 statements from 31 macros (NVVM declines to unroll huge loops and
  // EDG bounds constexpr and template recursion, so those finish quickly).
  std::string source = "#define A0 x = x * x + 1.0f;\n";
  for (int i = 1; i <= 30; ++i) {
    source += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + " A" +
              std::to_string(i - 1) + "\n";
  }
  source += "__global__ void bomb(float* p) { float x = p[0]; A30 p[0] = x; }\n";
  const v1::CompileResult bomb = MustCompile(Job(source), service->get());
  EXPECT_FALSE(bomb.success());
  EXPECT_EQ(bomb.log(), "compile exceeded the 3 s limit");
  EXPECT_FALSE(bomb.cache_hit());
  EXPECT_EQ((*service)->stats().timeouts, 1u);
  // The next compile succeeds on a fresh worker.
  const v1::CompileResult next = MustCompile(Job("__global__ void fine() {}\n"), service->get());
  EXPECT_TRUE(next.success()) << next.log();
  EXPECT_EQ((*service)->stats().workers_started, 2u);
}

TEST_F(CompileServiceTest, WorkersAreReplacedAfterMaxJobs) {
  CompileServiceOptions options = TestOptions();
  options.workers = 1;
  options.cache = false;
  options.max_jobs_per_worker = 2;
  absl::StatusOr<std::unique_ptr<CompileService>> service = CompileService::Create(options);
  ASSERT_TRUE(service.ok()) << service.status();
  for (int i = 0; i < 5; ++i) {
    const v1::CompileResult result = MustCompile(
        Job(absl::StrCat("__global__ void k", i, "(float* p) { p[0] = ", i, ".0f; }\n")),
        service->get());
    EXPECT_TRUE(result.success()) << result.log();
  }
  // Retired after the 2nd and the 4th compile; the 5th ran on the third worker.
  const CompileServiceStats stats = (*service)->stats();
  EXPECT_EQ(stats.compiles, 5u);
  EXPECT_EQ(stats.workers_retired, 2u);
  EXPECT_EQ(stats.worker_deaths, 0u);
  EXPECT_EQ(stats.workers_started, 3u);
}

TEST_F(CompileServiceTest, CompileErrorsUnderTheMemoryLimit) {
  // NVRTC works under the default 4 GiB address-space limit (the fixture's
  // service uses it); a tiny limit makes the worker fail to start, which is
  // an error, never an unsandboxed or unlimited compile.
  EXPECT_EQ(service_->options().memory_bytes, uint64_t{4} << 30);
  CompileServiceOptions options = TestOptions();
  options.memory_bytes = uint64_t{64} << 20;
  absl::StatusOr<std::unique_ptr<CompileService>> tiny = CompileService::Create(options);
  EXPECT_FALSE(tiny.ok());
}

TEST_F(CompileServiceTest, MissingWorkerBinaryIsAnError) {
  CompileServiceOptions options = TestOptions();
  options.worker_binary = (dir_ / "no-such-worker").string();
  absl::StatusOr<std::unique_ptr<CompileService>> service = CompileService::Create(options);
  EXPECT_FALSE(service.ok());
}

}  // namespace
}  // namespace kerneleval::compile
