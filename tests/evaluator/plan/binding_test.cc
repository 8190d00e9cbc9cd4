#include "evaluator/plan/binding.h"

#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>

#include "evaluator/plan/directives.h"

namespace kerneleval::plan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

template <typename Message>
Message FromText(const std::string& text) {
  Message message;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &message)) << text;
  return message;
}

v1::Problem SoftmaxProblem() {
  return FromText<v1::Problem>(R"pb(
    id: "softmax"
    parameters { name: "ROWS" }
    parameters { name: "COLS" }
    inputs {
      name: "x"
      dtype: DTYPE_F32
      shape: [ "ROWS", "COLS" ]
      distribution { normal { mean: 0 stddev: 1 } }
    }
    outputs {
      name: "y"
      dtype: DTYPE_F32
      shape: [ "ROWS", "COLS" ]
    }
  )pb");
}

const ParamMap kShape = {{"ROWS", 4096}, {"COLS", 1000}};

constexpr std::string_view kSoftmaxSource = R"cu(
// @launch softmax_kernel<<<ROWS, 256, 256 * sizeof(float)>>>(x, y, ROWS, COLS)
extern "C" __global__ void __launch_bounds__(256)
softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {}
)cu";

// Parses the directives and kernels of `source` and resolves them.
absl::StatusOr<internal::ResolvedPlan> Resolve(std::string_view source,
                                               const v1::Problem& problem = SoftmaxProblem(),
                                               const ParamMap& params = kShape,
                                               const PlanLimits& limits = {}) {
  absl::StatusOr<v1::LaunchPlan> plan = ParseDirectives(source);
  if (!plan.ok()) {
    return plan.status();
  }
  absl::StatusOr<ParsedSource> parsed = ParseSource(source);
  if (!parsed.ok()) {
    return parsed.status();
  }
  return ResolvePlan(*plan, problem, params, *parsed, limits);
}

std::string ResolveError(std::string_view source, const v1::Problem& problem = SoftmaxProblem(),
                         const ParamMap& params = kShape, const PlanLimits& limits = {}) {
  absl::StatusOr<internal::ResolvedPlan> resolved = Resolve(source, problem, params, limits);
  EXPECT_FALSE(resolved.ok()) << resolved->DebugString();
  if (resolved.ok()) {
    return "";
  }
  EXPECT_EQ(resolved.status().code(), absl::StatusCode::kInvalidArgument);
  const absl::string_view message = resolved.status().message();
  return {message.data(), message.size()};
}

void ExpectProtoEq(const google::protobuf::Message& got, const google::protobuf::Message& want) {
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got, want))
      << "got:\n"
      << got.DebugString() << "want:\n"
      << want.DebugString();
}

// A source with one kernel `k` taking `params`, launched as
// k<<<1, 32>>>(args).
std::string OneKernel(std::string_view params, std::string_view args) {
  return std::string("// @launch k<<<1, 32>>>(") + std::string(args) + ")\n__global__ void k(" +
         std::string(params) + ") {}\n";
}

TEST(BindingTest, SoftmaxResolvesExactly) {
  absl::StatusOr<internal::ResolvedPlan> resolved = Resolve(kSoftmaxSource);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ExpectProtoEq(*resolved, FromText<internal::ResolvedPlan>(R"pb(
    buffers {
      name: "x"
      dtype: DTYPE_F32
      elements: 4096000
      role: BUFFER_ROLE_INPUT
      distribution { normal { mean: 0 stddev: 1 } }
    }
    buffers { name: "y" dtype: DTYPE_F32 elements: 4096000 role: BUFFER_ROLE_OUTPUT }
    launches {
      kernel: "softmax_kernel"
      grid: [ 4096, 1, 1 ]
      block: [ 256, 1, 1 ]
      dynamic_shared_bytes: 1024
      args { buffer: "x" size_bytes: 8 }
      args { buffer: "y" size_bytes: 8 }
      args { scalar: 4096 size_bytes: 4 is_signed: true }
      args { scalar: 1000 size_bytes: 4 is_signed: true }
      source_line: 2
    }
  )pb"));
}

TEST(BindingTest, TwoLaunchesScratchAndConstants) {
  const v1::Problem problem = FromText<v1::Problem>(R"pb(
    parameters { name: "N" }
    inputs {
      name: "x"
      dtype: DTYPE_F16
      shape: "N"
      distribution { uniform { low: -1 high: 1 } }
    }
    outputs { name: "total" dtype: DTYPE_F64 shape: "1" }
    outputs {
      name: "unused"
      dtype: DTYPE_I8
      shape: [ "2", "N" ]
    }
  )pb");
  constexpr std::string_view kSource = R"cu(
#define BLOCK 256
// @scratch partial: f64[ceil_div(N, BLOCK)]
// @launch stage1<<<dim3(ceil_div(N, BLOCK), 1, 1), dim3(BLOCK)>>>(x, partial, N, 2 * N)
// @launch stage2<<<1, 1024, 1024 * sizeof(double)>>>(partial, total, ceil_div(N, BLOCK), 0.5 * 0)
__global__ void stage1(const __half* x, double* partial, int64_t n, unsigned long long twice) {}
__global__ void stage2(const double* partial, double* total, unsigned int count, float scale) {}
)cu";
  absl::StatusOr<internal::ResolvedPlan> resolved = Resolve(kSource, problem, {{"N", 1000000}});
  ASSERT_FALSE(resolved.ok()) << "0.5 is not an integer expression";
  EXPECT_THAT(std::string(resolved.status().message()), StartsWith("line 5: @launch: argument 4"));

  std::string fixed(kSource);
  fixed.replace(fixed.find("0.5 * 0"), 7, "N / 1000");
  resolved = Resolve(fixed, problem, {{"N", 1000000}});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ExpectProtoEq(*resolved, FromText<internal::ResolvedPlan>(R"pb(
    buffers {
      name: "x"
      dtype: DTYPE_F16
      elements: 1000000
      role: BUFFER_ROLE_INPUT
      distribution { uniform { low: -1 high: 1 } }
    }
    buffers { name: "total" dtype: DTYPE_F64 elements: 1 role: BUFFER_ROLE_OUTPUT }
    buffers { name: "unused" dtype: DTYPE_I8 elements: 2000000 role: BUFFER_ROLE_OUTPUT }
    buffers { name: "partial" dtype: DTYPE_F64 elements: 3907 role: BUFFER_ROLE_SCRATCH }
    launches {
      kernel: "stage1"
      grid: [ 3907, 1, 1 ]
      block: [ 256, 1, 1 ]
      args { buffer: "x" size_bytes: 8 }
      args { buffer: "partial" size_bytes: 8 }
      args { scalar: 1000000 size_bytes: 8 is_signed: true }
      args { scalar: 2000000 size_bytes: 8 }
      source_line: 4
    }
    launches {
      kernel: "stage2"
      grid: [ 1, 1, 1 ]
      block: [ 1024, 1, 1 ]
      dynamic_shared_bytes: 8192
      args { buffer: "partial" size_bytes: 8 }
      args { buffer: "total" size_bytes: 8 }
      args { scalar: 3907 size_bytes: 4 }
      args { real: 1000 size_bytes: 4 is_signed: true }
      source_line: 5
    }
  )pb"));
}

TEST(BindingTest, StructuredPlanWithoutLines) {
  const v1::LaunchPlan plan = FromText<v1::LaunchPlan>(R"pb(
    launches {
      kernel: "softmax_kernel"
      grid { x: "ROWS" }
      block { x: " 128 " y: "2" }
      args: [ "x", " y ", "ROWS", "COLS - 1" ]
    }
  )pb");
  absl::StatusOr<std::vector<KernelSignature>> kernels = ParseKernelSignatures(kSoftmaxSource);
  ASSERT_TRUE(kernels.ok());
  absl::StatusOr<internal::ResolvedPlan> resolved =
      ResolvePlan(plan, SoftmaxProblem(), kShape, *kernels);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_EQ(resolved->launches_size(), 1);
  const internal::ResolvedLaunch& launch = resolved->launches(0);
  EXPECT_EQ(launch.source_line(), 0u);
  EXPECT_THAT(launch.block(), ::testing::ElementsAre(128, 2, 1));
  EXPECT_EQ(launch.dynamic_shared_bytes(), 0u);
  EXPECT_EQ(launch.args(1).buffer(), "y");
  EXPECT_EQ(launch.args(3).scalar(), 999);
  EXPECT_EQ(launch.symbol(), "");

  v1::LaunchPlan bad = plan;
  bad.mutable_launches(0)->set_kernel("softmax");
  absl::StatusOr<internal::ResolvedPlan> failed =
      ResolvePlan(bad, SoftmaxProblem(), kShape, *kernels);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(),
            "launch 1 ('softmax'): kernel 'softmax' is not a __global__ function of the source "
            "(found: softmax_kernel)");
}

// An instance of a template kernel is bound through the signature NVRTC's
// compile gives it (SignatureOfInstance): its buffers and scalars are
// checked as a plain kernel's are.
TEST(BindingTest, InstancesOfTemplateKernels) {
  const std::string source =
      "// @launch softmax_kernel<float, 256><<<ROWS, 256>>>(x, y, ROWS, COLS)\n"
      "template <typename T, int kBlock>\n"
      "__global__ void __launch_bounds__(kBlock) softmax_kernel(const T* x, T* y, int rows,\n"
      "                                                          int cols) {}\n";
  absl::StatusOr<v1::LaunchPlan> plan = ParseDirectives(source);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<ParsedSource> parsed = ParseSource(source);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  // Without the instance the template alone is found.
  absl::StatusOr<internal::ResolvedPlan> resolved =
      ResolvePlan(*plan, SoftmaxProblem(), kShape, *parsed, {});
  ASSERT_FALSE(resolved.ok());
  EXPECT_THAT(resolved.status().message(),
              HasSubstr("kernel 'softmax_kernel<float, 256>' is not a __global__ function"));

  v1::KernelInfo compiled;
  compiled.set_max_threads_per_block(256);
  for (const char* type : {"float const*", "float*", "int", "int"}) {
    compiled.add_params()->set_type(type);
  }
  absl::StatusOr<KernelSignature> instance =
      SignatureOfInstance("softmax_kernel<float, 256>", compiled);
  ASSERT_TRUE(instance.ok()) << instance.status();
  parsed->kernels.push_back(*instance);
  resolved = ResolvePlan(*plan, SoftmaxProblem(), kShape, *parsed, {});
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->launches(0).kernel(), "softmax_kernel<float, 256>");
  EXPECT_EQ(resolved->launches(0).args_size(), 4);

  // The instance's own types and bounds are checked.
  plan->mutable_launches(0)->mutable_block()->set_x("512");
  resolved = ResolvePlan(*plan, SoftmaxProblem(), kShape, *parsed, {});
  ASSERT_FALSE(resolved.ok());
  EXPECT_THAT(resolved.status().message(), HasSubstr("__launch_bounds__(256)"));
  compiled.mutable_params(0)->set_type("double const*");
  parsed->kernels.back() = *SignatureOfInstance("softmax_kernel<float, 256>", compiled);
  plan->mutable_launches(0)->mutable_block()->set_x("256");
  resolved = ResolvePlan(*plan, SoftmaxProblem(), kShape, *parsed, {});
  ASSERT_FALSE(resolved.ok());
  EXPECT_THAT(resolved.status().message(), HasSubstr("buffer 'x' holds f32"));
}

// A block must fit the register file with the registers NVRTC gave each
// thread: a GPU refuses the launch otherwise, and the CPU backend checked
// nothing (sweep 6: 1024 threads of a 128-register kernel passed there).
TEST(BindingTest, BlocksMustFitTheRegisterFile) {
  EXPECT_EQ(MaxThreadsForRegisters(0), 1024);  // not reported
  EXPECT_EQ(MaxThreadsForRegisters(32), 1024);
  EXPECT_EQ(MaxThreadsForRegisters(64), 1024);
  EXPECT_EQ(MaxThreadsForRegisters(65), 896);  // 2080 a warp, allocated as 2304
  EXPECT_EQ(MaxThreadsForRegisters(72), 896);
  EXPECT_EQ(MaxThreadsForRegisters(128), 512);
  EXPECT_EQ(MaxThreadsForRegisters(255), 256);

  const std::string source =
      "// @launch softmax_kernel<<<ROWS, 1024>>>(x, y, ROWS, COLS)\n"
      "namespace ops {\n"
      "__global__ void softmax_kernel(const float* x, float* y, int rows, int cols) {}\n"
      "}\n"
      "template <int kBlock> __global__ void tiled(const float* x, float* y, int rows,\n"
      "                                             int cols) {}\n";
  absl::StatusOr<v1::LaunchPlan> plan = ParseDirectives(source);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<ParsedSource> parsed = ParseSource(source);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  google::protobuf::RepeatedPtrField<v1::KernelInfo> compiled;
  v1::KernelInfo& kernel = *compiled.Add();
  kernel.set_name("ops::softmax_kernel(float const*, float*, int, int)");  // demangled
  kernel.set_registers_per_thread(128);
  v1::KernelInfo& instance = *compiled.Add();
  instance.set_name("void tiled<128>(float const*, float*, int, int)");
  instance.set_name_expression("tiled<128>");
  instance.set_registers_per_thread(40);
  ApplyRegisterLimits(compiled, parsed->kernels);
  ASSERT_EQ(parsed->kernels.size(), 2u);
  EXPECT_EQ(parsed->kernels[0].registers_per_thread, 128u);
  EXPECT_EQ(parsed->kernels[0].register_max_threads, 512);
  EXPECT_EQ(parsed->kernels[1].register_max_threads, std::nullopt) << "a template, not an instance";

  absl::StatusOr<internal::ResolvedPlan> resolved =
      ResolvePlan(*plan, SoftmaxProblem(), kShape, *parsed, {});
  ASSERT_FALSE(resolved.ok());
  EXPECT_THAT(resolved.status().message(),
              HasSubstr("the block has 1024 threads, but softmax_kernel uses 128 registers per "
                        "thread: at most 512 threads fit a block's 65536 registers"));
  plan->mutable_launches(0)->mutable_block()->set_x("512");
  resolved = ResolvePlan(*plan, SoftmaxProblem(), kShape, *parsed, {});
  EXPECT_TRUE(resolved.ok()) << resolved.status();
}

// A name the source declares as a constant whose value a plan cannot read
// is named as such, not only as unknown.
// A namespace's constant is known by its bare and its qualified name (the
// helper sweep's launch line said cfg::TILE).
TEST(BindingTest, NamespaceConstantsByTheirQualifiedNames) {
  absl::StatusOr<internal::ResolvedPlan> resolved = Resolve(
      "// @launch k<<<cfg::inner::kBlocks, cfg::TILE * 4>>>(x)\n"
      "namespace cfg {\nconstexpr int TILE = 32;\nnamespace inner { constexpr int kBlocks = "
      "TILE / 4; }\n}\n"
      "__global__ void k(float* x) {}\n");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->launches(0).grid(0), 8u);
  EXPECT_EQ(resolved->launches(0).block(0), 128u);
}

TEST(BindingTest, UnreadableSourceConstantsAreNamedInUnknownNameErrors) {
  const std::string message = ResolveError(
      "// @launch k<<<kBlocks, 32>>>(x)\n"
      "constexpr int Twice(int v) { return 2 * v; }\n"
      "constexpr int kBlocks = Twice(4), kOther = 3;\n"
      "__global__ void k(float* x) {}\n");
  EXPECT_THAT(message, HasSubstr("unknown name 'kBlocks'"));
  EXPECT_THAT(message, HasSubstr("constants: kOther; the source declares 'kBlocks', but its value "
                                 "is not an integer expression a plan can read"));
  EXPECT_THAT(ResolveError("// @launch k<<<kNowhere, 32>>>(x)\n__global__ void k(float* x) {}\n"),
              Not(HasSubstr("the source declares")));
}

TEST(BindingTest, KernelLookupErrors) {
  EXPECT_EQ(ResolveError("// @launch softmax<<<1, 32>>>(x)\n__global__ void a(float* x) {}\n"
                         "__global__ void b(float* x) {}\n"),
            "line 1: kernel 'softmax' is not a __global__ function of the source (found: a, b)");
  EXPECT_EQ(ResolveError("// @launch k<<<1, 32>>>(x)\n"),
            "line 1: kernel 'k' is not a __global__ function of the source (the source declares "
            "no __global__ function)");
  EXPECT_EQ(ResolveError("// @launch k<<<1, 32>>>(x)\ntemplate <typename T>\n"
                         "__global__ void k(T* x) {}\n"),
            "line 1: kernel 'k' is a template: name its template arguments in the launch, e.g. "
            "'k<256><<<...>>>'");
  EXPECT_EQ(ResolveError("// @launch k<<<1, 32>>>(x)\n__global__ void k(float* x) {}\n"
                         "__global__ void k(double* x) {}\n"),
            "line 1: kernel 'k' is overloaded (2 declarations); give the launched kernel a unique "
            "name");
  // A namespace-qualified launch finds the kernel; so does its plain name.
  EXPECT_TRUE(Resolve("// @launch ops::k<<<1, 32>>>(x)\nnamespace ops { __global__ void k(const "
                      "float* x) {} }\n")
                  .ok());
}

TEST(BindingTest, ArgumentCountMismatch) {
  EXPECT_EQ(
      ResolveError(
          "// @launch softmax_kernel<<<ROWS, 256>>>(x, y, ROWS)\n"
          "__global__ void softmax_kernel(const float* x, float* y, int rows, int cols) {}\n"),
      "line 1: kernel softmax_kernel takes 4 parameters, the plan passes 3");
  EXPECT_EQ(ResolveError(OneKernel("float* y", "y, ROWS")),
            "line 1: kernel k takes 1 parameter, the plan passes 2");
}

TEST(BindingTest, GridAndBlockLimits) {
  auto with_config = [](std::string_view config) {
    return std::string("// @launch k<<<") + std::string(config) +
           ">>>(y)\n__global__ void k(float* y) {}\n";
  };
  EXPECT_EQ(ResolveError(with_config("dim3(1, 65536), 32")),
            "line 1: grid.y = 65536 exceeds the limit 65535");
  EXPECT_EQ(ResolveError(with_config("dim3(1, 1, 70000), 32")),
            "line 1: grid.z = 70000 exceeds the limit 65535");
  EXPECT_EQ(ResolveError(with_config("2147483648, 32")),
            "line 1: grid.x = 2147483648 exceeds the limit 2147483647");
  EXPECT_TRUE(Resolve(with_config("2147483647, 32")).ok());
  EXPECT_EQ(ResolveError(with_config("ROWS - 4096, 32")),
            "line 1: grid.x = 0: every grid dimension must be at least 1");
  EXPECT_EQ(ResolveError(with_config("1, -32")),
            "line 1: block.x = -32: every block dimension must be at least 1");
  EXPECT_EQ(ResolveError(with_config("1, dim3(1, 1, 65)")),
            "line 1: block.z = 65 exceeds the limit 64");
  EXPECT_EQ(ResolveError(with_config("1, 2048")), "line 1: block.x = 2048 exceeds the limit 1024");
  EXPECT_EQ(ResolveError(with_config("1, dim3(32, 64)")),
            "line 1: the block has 2048 threads (32 x 64 x 1), more than the limit 1024");
  EXPECT_THAT(ResolveError(with_config("ceil_div(ROWS, COLS - 1000), 32")),
              StartsWith("line 1: grid.x: expression \"ceil_div(ROWS, COLS - 1000)\": division "
                         "by zero in ceil_div at column 16"));
  EXPECT_EQ(ResolveError(with_config("ceil_div(ROWS, BLOCK), 32")),
            "line 1: grid.x: unknown name 'BLOCK' in 'ceil_div(ROWS, BLOCK)' (parameters: COLS, "
            "ROWS)");
  PlanLimits small;
  small.max_threads_per_block = 512;
  EXPECT_EQ(ResolveError(with_config("1, 1024"), SoftmaxProblem(), kShape, small),
            "line 1: the block has 1024 threads (1024 x 1 x 1), more than the limit 512");
}

TEST(BindingTest, LaunchBounds) {
  EXPECT_EQ(ResolveError("// @launch k<<<1, 512>>>(y)\n"
                         "__global__ void __launch_bounds__(256) k(float* y) {}\n"),
            "line 1: the block has 512 threads, more than k's __launch_bounds__(256)");
  EXPECT_TRUE(Resolve("// @launch k<<<1, 256>>>(y)\n"
                      "__global__ void __launch_bounds__(256) k(float* y) {}\n")
                  .ok());
}

TEST(BindingTest, SharedMemoryLimit) {
  auto with_smem = [](std::string_view smem) {
    return std::string("// @launch k<<<1, 32, ") + std::string(smem) +
           ">>>(y)\n__global__ void k(float* y) {}\n";
  };
  absl::StatusOr<internal::ResolvedPlan> ok = Resolve(with_smem("227 * 1024"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->launches(0).dynamic_shared_bytes(), 232448u);
  EXPECT_EQ(ResolveError(with_smem("227 * 1024 + 1")),
            "line 1: dynamic shared memory of 232449 bytes is outside the limit 0..232448 bytes");
  EXPECT_EQ(ResolveError(with_smem("-4")),
            "line 1: dynamic shared memory of -4 bytes is outside the limit 0..232448 bytes");
}

TEST(BindingTest, BufferArguments) {
  // Element types that take an f32 buffer.
  for (std::string_view param : {"float* y", "const float* __restrict__ y", "float4* y",
                                 "float2* y", "void* y", "const void* y", "float y[]"}) {
    absl::StatusOr<internal::ResolvedPlan> resolved = Resolve(OneKernel(param, "y"));
    EXPECT_TRUE(resolved.ok()) << param << ": " << resolved.status();
  }
  EXPECT_EQ(ResolveError(OneKernel("double* y", "y")),
            "line 1: argument 1 ('y'): buffer 'y' holds f32 but parameter 'y' of k ('double *') "
            "points to double of 8 bytes");
  EXPECT_EQ(ResolveError(OneKernel("int* y", "y")),
            "line 1: argument 1 ('y'): buffer 'y' holds f32 but parameter 'y' of k ('int *') "
            "points to signed integer of 4 bytes");
  EXPECT_EQ(ResolveError(OneKernel("__half* y", "y")),
            "line 1: argument 1 ('y'): buffer 'y' holds f32 but parameter 'y' of k ('__half *') "
            "points to half of 2 bytes");
  EXPECT_EQ(ResolveError(OneKernel("float** y", "y")),
            "line 1: argument 1 ('y'): parameter 'y' of k ('float * *') is a pointer to pointers; "
            "a buffer binds to a pointer to its elements");
  EXPECT_EQ(ResolveError(OneKernel("const Foo* y", "y")),
            "line 1: argument 1 ('y'): the element type of parameter 'y' of k ('const Foo *') is "
            "unknown to the plan checker; declare it with a built-in element type (e.g. const "
            "float*, __half*, int64_t*) or void*");
  EXPECT_EQ(ResolveError(OneKernel("int n", "y")),
            "line 1: argument 1 ('y'): 'y' is a buffer but parameter 'n' of k ('int') is not a "
            "pointer");
  EXPECT_EQ(ResolveError(OneKernel("float*& y", "y")),
            "line 1: argument 1 ('y'): parameter 'y' of k ('float * &') is a reference; a kernel "
            "takes pointers and values");
}

TEST(BindingTest, IntegerBufferTypes) {
  const v1::Problem problem = FromText<v1::Problem>(R"pb(
    parameters { name: "N" }
    inputs { name: "idx" dtype: DTYPE_I64 shape: "N" }
    inputs { name: "mask" dtype: DTYPE_BOOL shape: "N" }
    outputs { name: "out" dtype: DTYPE_I32 shape: "N" }
    outputs { name: "bytes" dtype: DTYPE_U8 shape: "N" }
  )pb");
  const ParamMap n = {{"N", 10}};
  auto source = [](std::string_view params) {
    return std::string("// @launch k<<<1, 32>>>(idx, mask, out, bytes)\n__global__ void k(") +
           std::string(params) + ") {}\n";
  };
  EXPECT_TRUE(
      Resolve(source("const int64_t* a, const bool* b, int* c, uint8_t* d"), problem, n).ok());
  EXPECT_TRUE(Resolve(source("const unsigned long long* a, const unsigned char* b, unsigned* c, "
                             "unsigned char* d"),
                      problem, n)
                  .ok());
  EXPECT_TRUE(Resolve(source("const long* a, const char* b, int4* c, uchar4* d"), problem, n).ok());
  EXPECT_THAT(ResolveError(source("const int* a, const bool* b, int* c, uint8_t* d"), problem, n),
              HasSubstr("buffer 'idx' holds i64 but parameter 'a'"));
  EXPECT_THAT(
      ResolveError(source("const int64_t* a, const int* b, int* c, uint8_t* d"), problem, n),
      HasSubstr("buffer 'mask' holds bool"));
  EXPECT_THAT(
      ResolveError(source("const int64_t* a, const bool* b, float* c, uint8_t* d"), problem, n),
      HasSubstr("buffer 'out' holds i32"));
  EXPECT_THAT(ResolveError(source("const int64_t* a, const bool* b, int* c, bool* d"), problem, n),
              HasSubstr("buffer 'bytes' holds u8"));
}

TEST(BindingTest, ScalarArguments) {
  // Buffers of a fixed size, so that any parameter values resolve.
  v1::Problem fixed = SoftmaxProblem();
  fixed.mutable_inputs(0)->clear_shape();
  fixed.mutable_inputs(0)->add_shape("4");
  fixed.mutable_outputs(0)->clear_shape();
  fixed.mutable_outputs(0)->add_shape("4");
  const ParamMap big = {{"ROWS", 3000000000}, {"COLS", -1}};
  EXPECT_EQ(ResolveError(OneKernel("int n", "ROWS"), fixed, big),
            "line 1: argument 1 ('ROWS'): the value 3000000000 does not fit parameter 'n' of k "
            "('int') (range -2147483648..2147483647)");
  EXPECT_TRUE(Resolve(OneKernel("unsigned n", "ROWS"), fixed, big).ok());
  EXPECT_TRUE(Resolve(OneKernel("long long n", "ROWS"), fixed, big).ok());
  EXPECT_EQ(ResolveError(OneKernel("unsigned n", "COLS"), fixed, big),
            "line 1: argument 1 ('COLS'): the value -1 does not fit parameter 'n' of k "
            "('unsigned') (range 0..4294967295)");
  EXPECT_EQ(ResolveError(OneKernel("size_t n", "COLS"), fixed, big),
            "line 1: argument 1 ('COLS'): the value -1 does not fit parameter 'n' of k "
            "('size_t') (range 0..18446744073709551615)");
  EXPECT_EQ(ResolveError(OneKernel("unsigned char n", "256")),
            "line 1: argument 1 ('256'): the value 256 does not fit parameter 'n' of k "
            "('unsigned char') (range 0..255)");
  EXPECT_EQ(ResolveError(OneKernel("short n", "-32769")),
            "line 1: argument 1 ('-32769'): the value -32769 does not fit parameter 'n' of k "
            "('short') (range -32768..32767)");
  EXPECT_EQ(ResolveError(OneKernel("bool b", "2")),
            "line 1: argument 1 ('2'): the value 2 does not fit parameter 'b' of k ('bool') "
            "(range 0..1)");

  absl::StatusOr<internal::ResolvedPlan> resolved =
      Resolve(OneKernel("bool b, char c, uint16_t u, float f, double d, int64_t l",
                        "1, -128, 65535, 16777216, 9007199254740992, -ROWS * COLS"));
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ExpectProtoEq(resolved->launches(0), FromText<internal::ResolvedLaunch>(R"pb(
                  kernel: "k"
                  grid: [ 1, 1, 1 ]
                  block: [ 32, 1, 1 ]
                  args { scalar: 1 size_bytes: 1 }
                  args { scalar: -128 size_bytes: 1 is_signed: true }
                  args { scalar: 65535 size_bytes: 2 }
                  args { real: 16777216 size_bytes: 4 is_signed: true }
                  args { real: 9007199254740992 size_bytes: 8 is_signed: true }
                  args { scalar: -4096000 size_bytes: 8 is_signed: true }
                  source_line: 1
                )pb"));

  EXPECT_EQ(ResolveError(OneKernel("float f", "16777217")),
            "line 1: argument 1 ('16777217'): the value 16777217 is not exactly representable as "
            "parameter 'f' of k ('float')");
  EXPECT_EQ(ResolveError(OneKernel("double d", "9223372036854775807")),
            "line 1: argument 1 ('9223372036854775807'): the value 9223372036854775807 is not "
            "exactly representable as parameter 'd' of k ('double')");
  EXPECT_EQ(ResolveError(OneKernel("Params p", "1")),
            "line 1: argument 1 ('1'): parameter 'p' of k ('Params') has a type a plan cannot "
            "pass; plans pass buffers and integer, bool, float or double values");
  EXPECT_THAT(ResolveError(OneKernel("__half h", "1")), HasSubstr("has a type a plan cannot pass"));
  EXPECT_THAT(ResolveError(OneKernel("float4 v", "1")), HasSubstr("has a type a plan cannot pass"));
  EXPECT_EQ(ResolveError(OneKernel("int& n", "ROWS")),
            "line 1: argument 1 ('ROWS'): parameter 'n' of k ('int &') is a reference; a kernel "
            "takes pointers and values");
}

TEST(BindingTest, ScalarsAndPointersDoNotMix) {
  EXPECT_EQ(ResolveError(OneKernel("float* y", "ROWS")),
            "line 1: argument 1 ('ROWS'): parameter 'y' of k ('float *') is a pointer: pass a "
            "buffer (inputs: x; outputs: y; scratch: none)");
  EXPECT_EQ(ResolveError(OneKernel("float* y", "out")),
            "line 1: argument 1 ('out'): 'out' is not a buffer (inputs: x; outputs: y; scratch: "
            "none)");
  EXPECT_EQ(ResolveError(OneKernel("float* y", "y + COLS")),
            "line 1: argument 1 ('y + COLS'): parameter 'y' of k ('float *') is given 'y + "
            "COLS': pointer arithmetic on a buffer is not supported; pass 'y' and the offset as "
            "an integer argument");
  EXPECT_EQ(ResolveError(OneKernel("int n", "x + 1")),
            "line 1: argument 1 ('x + 1'): 'x' is an input, which is passed by its name alone, not "
            "inside an integer expression");
  EXPECT_EQ(ResolveError(OneKernel("int n", "ROWS2 * 2")),
            "line 1: argument 1 ('ROWS2 * 2'): unknown name 'ROWS2' in 'ROWS2 * 2' (parameters: "
            "COLS, ROWS)");
}

TEST(BindingTest, NameClashes) {
  EXPECT_EQ(ResolveError("// @scratch x: f32[4]\n" + OneKernel("float* y", "y")),
            "line 1: scratch 'x': 'x' is a scratch buffer and also an input");
  EXPECT_EQ(
      ResolveError("// @scratch ROWS: f32[4]\n" + OneKernel("float* y", "y")),
      "line 1: scratch 'ROWS': 'ROWS' is a scratch buffer and also a parameter of the problem");
  EXPECT_EQ(ResolveError("#define COLS 4\n" + OneKernel("float* y", "y")),
            "source: 'COLS' is a constant of the source (#define or constexpr) and also a "
            "parameter of the problem");
  EXPECT_EQ(ResolveError("constexpr int y = 4;\n" + OneKernel("float* y", "y")),
            "source: 'y' is a constant of the source (#define or constexpr) and also an output");
  v1::Problem clash = SoftmaxProblem();
  clash.mutable_outputs(0)->set_name("x");
  EXPECT_EQ(ResolveError(OneKernel("float* y", "x"), clash),
            "problem: 'x' is an output and also an input");
}

TEST(BindingTest, BufferShapes) {
  EXPECT_EQ(ResolveError("// @scratch s: f32[ROWS - 4096]\n" + OneKernel("float* y", "y")),
            "line 1: scratch 's': dimension 1 ('ROWS - 4096') is 0; every dimension must be at "
            "least 1");
  EXPECT_THAT(ResolveError("// @scratch s: f32[ROWS, BAD]\n" + OneKernel("float* y", "y")),
              StartsWith("line 1: scratch 's': dimension 2: unknown name 'BAD'"));
  EXPECT_EQ(ResolveError("// @scratch s: f32[x]\n" + OneKernel("float* y", "y")),
            "line 1: scratch 's': dimension 1: 'x' is an input, which is passed by its name alone, "
            "not inside an integer expression");
  EXPECT_EQ(
      ResolveError("// @scratch s: f32[4294967296, 4294967296]\n" + OneKernel("float* y", "y")),
      "line 1: scratch 's': the element count overflows");

  PlanLimits limits;
  limits.max_buffer_bytes = 16000000;
  EXPECT_EQ(ResolveError(OneKernel("float* y", "y"), SoftmaxProblem(), kShape, limits),
            "input 'x': 4096000 elements of f32 exceed the limit of 16000000 bytes per buffer");
  limits = PlanLimits();
  limits.max_total_buffer_bytes = 20000000;
  EXPECT_EQ(ResolveError(OneKernel("float* y", "y"), SoftmaxProblem(), kShape, limits),
            "output 'y': the plan's buffers exceed the limit of 20000000 bytes in all");

  v1::Problem no_dtype = SoftmaxProblem();
  no_dtype.mutable_outputs(0)->clear_dtype();
  EXPECT_EQ(ResolveError(OneKernel("float* y", "y"), no_dtype), "output 'y': the dtype is not set");
}

TEST(BindingTest, StructuredScratchChecks) {
  absl::StatusOr<std::vector<KernelSignature>> kernels =
      ParseKernelSignatures("__global__ void k(float* y) {}");
  ASSERT_TRUE(kernels.ok());
  v1::LaunchPlan plan = FromText<v1::LaunchPlan>(R"pb(
    launches {
      kernel: "k"
      grid { x: "1" }
      block { x: "32" }
      args: "y"
    }
    scratch { name: "s" shape: "4" }
  )pb");
  absl::StatusOr<internal::ResolvedPlan> resolved =
      ResolvePlan(plan, SoftmaxProblem(), kShape, *kernels);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().message(), "scratch 's': the dtype is not set");

  plan.mutable_scratch(0)->set_dtype(v1::DTYPE_F32);
  plan.mutable_scratch(0)->clear_shape();
  resolved = ResolvePlan(plan, SoftmaxProblem(), kShape, *kernels);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().message(), "scratch 's': the shape needs at least one dimension");

  plan.mutable_scratch(0)->add_shape("4");
  plan.mutable_scratch(0)->set_name("not a name");
  resolved = ResolvePlan(plan, SoftmaxProblem(), kShape, *kernels);
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.status().message(),
            "scratch 'not a name': the name 'not a name' is not an identifier");
}

TEST(BindingTest, PlanLevelErrors) {
  EXPECT_EQ(ResolveError("__global__ void k(float* y) {}"),
            "the plan has no launches: add a '// @launch kernel<<<grid, block>>>(args)' line to "
            "the source or a structured launch plan");
  PlanLimits limits;
  limits.max_launches = 1;
  EXPECT_EQ(ResolveError("// @launch k<<<1, 1>>>(y)\n" + OneKernel("float* y", "y"),
                         SoftmaxProblem(), kShape, limits),
            "the plan has 2 launches, more than the limit 1");
  limits = PlanLimits();
  limits.max_scratch_buffers = 0;
  EXPECT_EQ(ResolveError("// @scratch s: f32[1]\n" + OneKernel("float* y", "y"), SoftmaxProblem(),
                         kShape, limits),
            "the plan has 1 scratch buffers, more than the limit 0");
  EXPECT_EQ(ResolveError(OneKernel("float* y", "y"), SoftmaxProblem(), {{"ROWS", 1}}),
            "no value for the problem's parameter 'COLS'");
}

TEST(BindingTest, UnusedBuffersAreStillAllocated) {
  absl::StatusOr<internal::ResolvedPlan> resolved =
      Resolve("// @scratch s: i32[7]\n" + OneKernel("int n", "ROWS"));
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_EQ(resolved->buffers_size(), 3);
  EXPECT_EQ(resolved->buffers(0).name(), "x");
  EXPECT_EQ(resolved->buffers(1).name(), "y");
  EXPECT_EQ(resolved->buffers(2).name(), "s");
  EXPECT_EQ(resolved->buffers(2).elements(), 7u);
}

}  // namespace
}  // namespace kerneleval::plan
