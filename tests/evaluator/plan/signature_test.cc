#include "evaluator/plan/signature.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace kerneleval::plan {
namespace {

using ::testing::Pair;
using ::testing::UnorderedElementsAre;

std::vector<KernelSignature> Kernels(std::string_view source) {
  absl::StatusOr<std::vector<KernelSignature>> kernels = ParseKernelSignatures(source);
  EXPECT_TRUE(kernels.ok()) << kernels.status();
  return kernels.value_or(std::vector<KernelSignature>());
}

std::string Error(std::string_view source) {
  absl::StatusOr<std::vector<KernelSignature>> kernels = ParseKernelSignatures(source);
  EXPECT_FALSE(kernels.ok());
  if (kernels.ok()) {
    return "";
  }
  EXPECT_EQ(kernels.status().code(), absl::StatusCode::kInvalidArgument);
  const absl::string_view message = kernels.status().message();
  return {message.data(), message.size()};
}

// The parameters of a one-kernel source.
std::vector<ParamSig> Params(std::string_view source) {
  std::vector<KernelSignature> kernels = Kernels(source);
  EXPECT_EQ(kernels.size(), 1u);
  return kernels.empty() ? std::vector<ParamSig>() : kernels[0].params;
}

TEST(SignatureTest, ExternCSoftmaxWithLaunchBounds) {
  const std::vector<KernelSignature> kernels = Kernels(R"cu(
#include <cuda_runtime.h>

extern "C" __global__ void __launch_bounds__(256)
softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  extern __shared__ float buffer[];
  if (threadIdx.x == 0) buffer[0] = x[0];
}
)cu");
  ASSERT_EQ(kernels.size(), 1u);
  const KernelSignature& k = kernels[0];
  EXPECT_EQ(k.name, "softmax_kernel");
  EXPECT_EQ(k.qualified_name, "softmax_kernel");
  EXPECT_TRUE(k.is_extern_c);
  EXPECT_FALSE(k.is_template);
  EXPECT_TRUE(k.is_definition);
  EXPECT_EQ(k.line, 5u);
  EXPECT_EQ(k.launch_bounds_max_threads, 256);
  ASSERT_EQ(k.params.size(), 4u);

  const ParamSig& x = k.params[0];
  EXPECT_EQ(x.name, "x");
  EXPECT_EQ(x.type, "const float * __restrict__");
  EXPECT_TRUE(x.is_pointer);
  EXPECT_EQ(x.pointer_depth, 1);
  EXPECT_EQ(x.kind, ScalarKind::kOther);
  EXPECT_EQ(x.size_bytes, 8u);
  EXPECT_EQ(x.pointee, (TypeInfo{ScalarKind::kFloat, 4, 1}));
  EXPECT_TRUE(x.pointee_is_const);

  EXPECT_EQ(k.params[1].name, "y");
  EXPECT_FALSE(k.params[1].pointee_is_const);

  const ParamSig& rows = k.params[2];
  EXPECT_EQ(rows.name, "rows");
  EXPECT_EQ(rows.type, "int");
  EXPECT_FALSE(rows.is_pointer);
  EXPECT_EQ(rows.kind, ScalarKind::kSignedInt);
  EXPECT_EQ(rows.size_bytes, 4u);
}

TEST(SignatureTest, ScalarTypes) {
  const std::vector<ParamSig> p = Params(R"cu(
__global__ void k(int64_t a, size_t b, unsigned c, std::int64_t d, unsigned long long e,
                  long unsigned int f, const int g, float alpha, double beta, bool flag,
                  short s, char ch, unsigned char uc, int8_t i8, uint16_t u16, long l,
                  __half h, float4 v) {}
)cu");
  ASSERT_EQ(p.size(), 18u);
  auto expect = [&](size_t i, std::string_view name, ScalarKind kind, uint32_t size) {
    EXPECT_EQ(p[i].name, name);
    EXPECT_EQ(p[i].kind, kind) << name;
    EXPECT_EQ(p[i].size_bytes, size) << name;
    EXPECT_FALSE(p[i].is_pointer) << name;
  };
  expect(0, "a", ScalarKind::kSignedInt, 8);
  expect(1, "b", ScalarKind::kUnsignedInt, 8);
  expect(2, "c", ScalarKind::kUnsignedInt, 4);
  expect(3, "d", ScalarKind::kSignedInt, 8);
  EXPECT_EQ(p[3].type, "std::int64_t");
  expect(4, "e", ScalarKind::kUnsignedInt, 8);
  expect(5, "f", ScalarKind::kUnsignedInt, 8);
  expect(6, "g", ScalarKind::kSignedInt, 4);
  expect(7, "alpha", ScalarKind::kFloat, 4);
  expect(8, "beta", ScalarKind::kDouble, 8);
  expect(9, "flag", ScalarKind::kBool, 1);
  expect(10, "s", ScalarKind::kSignedInt, 2);
  expect(11, "ch", ScalarKind::kSignedInt, 1);
  expect(12, "uc", ScalarKind::kUnsignedInt, 1);
  expect(13, "i8", ScalarKind::kSignedInt, 1);
  expect(14, "u16", ScalarKind::kUnsignedInt, 2);
  expect(15, "l", ScalarKind::kSignedInt, 8);
  expect(16, "h", ScalarKind::kHalf, 2);
  expect(17, "v", ScalarKind::kFloat, 16);
  EXPECT_EQ(p[17].lanes, 4u);
}

TEST(SignatureTest, PointerTypes) {
  const std::vector<ParamSig> p = Params(R"cu(
__global__ void k(__half* h, const __nv_bfloat16* __restrict__ b, float4* v, const half2* h2,
                  void* raw, float** pp, float arr[], const double arr2[16], int* const cp,
                  int& ref, Params params, const Foo* foo) {}
)cu");
  ASSERT_EQ(p.size(), 12u);
  EXPECT_EQ(p[0].pointee, (TypeInfo{ScalarKind::kHalf, 2, 1}));
  EXPECT_EQ(p[1].pointee, (TypeInfo{ScalarKind::kBFloat16, 2, 1}));
  EXPECT_TRUE(p[1].pointee_is_const);
  EXPECT_EQ(p[2].pointee, (TypeInfo{ScalarKind::kFloat, 16, 4}));
  EXPECT_EQ(p[3].pointee, (TypeInfo{ScalarKind::kHalf, 4, 2}));
  EXPECT_EQ(p[4].pointee.kind, ScalarKind::kVoid);
  EXPECT_EQ(p[5].pointer_depth, 2);
  EXPECT_EQ(p[5].pointee.kind, ScalarKind::kOther);
  EXPECT_EQ(p[6].name, "arr");
  EXPECT_TRUE(p[6].is_pointer);
  EXPECT_EQ(p[6].pointee, (TypeInfo{ScalarKind::kFloat, 4, 1}));
  EXPECT_EQ(p[7].name, "arr2");
  EXPECT_TRUE(p[7].is_pointer);
  EXPECT_EQ(p[7].pointee.kind, ScalarKind::kDouble);
  EXPECT_EQ(p[8].name, "cp");
  EXPECT_FALSE(p[8].pointee_is_const);  // a const pointer to mutable ints
  EXPECT_EQ(p[8].pointee.kind, ScalarKind::kSignedInt);
  EXPECT_EQ(p[9].name, "ref");
  EXPECT_TRUE(p[9].is_reference);
  EXPECT_EQ(p[10].name, "params");
  EXPECT_EQ(p[10].kind, ScalarKind::kOther);
  EXPECT_EQ(p[10].size_bytes, 0u);
  EXPECT_EQ(p[11].pointee.kind, ScalarKind::kOther);
  EXPECT_EQ(p[11].pointee.size_bytes, 0u);
}

TEST(SignatureTest, UnnamedParamsDefaultsAndVoid) {
  std::vector<ParamSig> p = Params("__global__ void k(float*, int, unsigned int, size_t);");
  ASSERT_EQ(p.size(), 4u);
  for (const ParamSig& param : p) {
    EXPECT_EQ(param.name, "");
  }
  EXPECT_EQ(p[2].kind, ScalarKind::kUnsignedInt);
  EXPECT_EQ(p[2].type, "unsigned int");

  p = Params("__global__ void k(int n = 4, float scale = (1 < 2) ? 1.0f : 2.0f, int m = 3) {}");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].name, "n");
  EXPECT_TRUE(p[0].has_default);
  EXPECT_EQ(p[1].name, "scale");
  EXPECT_EQ(p[1].kind, ScalarKind::kFloat);
  EXPECT_EQ(p[2].name, "m");

  EXPECT_TRUE(Params("__global__ void k(void) {}").empty());
  EXPECT_TRUE(Params("__global__ void k() {}").empty());
}

TEST(SignatureTest, Templates) {
  const std::vector<KernelSignature> kernels = Kernels(R"cu(
template <typename T, int BLOCK = (4 > 2 ? 256 : 128)>
__global__ void __launch_bounds__(BLOCK) reduce(const T* x, T* y, int n) {}

template <>
__global__ void reduce<float, 256>(const float* x, float* y, int n);

__global__ void plain(float* y) {}
)cu");
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[0].name, "reduce");
  EXPECT_TRUE(kernels[0].is_template);
  EXPECT_FALSE(kernels[0].launch_bounds_max_threads.has_value());
  EXPECT_EQ(kernels[0].params[0].pointee.kind, ScalarKind::kOther);
  EXPECT_TRUE(kernels[1].is_template);
  EXPECT_EQ(kernels[1].name, "reduce");
  EXPECT_FALSE(kernels[2].is_template);
  EXPECT_EQ(kernels[2].name, "plain");
}

// A template kernel's instance takes the compiled kernel's parameter types,
// as the demangler spells them.
TEST(SignatureTest, InstancesOfTemplatesTakeTheCompiledTypes) {
  v1::KernelInfo compiled;
  compiled.set_name("void reduce<float, 256>(float const*, float*, int)");
  compiled.set_max_threads_per_block(256);
  for (const auto& [type, name] : {std::pair<std::string, std::string>{"float const*", "x"},
                                   {"__half2*", "y"},
                                   {"unsigned int", ""},
                                   {"float4", "v"}}) {
    v1::KernelParam& param = *compiled.add_params();
    param.set_type(type);
    param.set_name(name);
  }
  absl::StatusOr<KernelSignature> instance = SignatureOfInstance("reduce<float, 256>", compiled);
  ASSERT_TRUE(instance.ok()) << instance.status();
  EXPECT_EQ(instance->name, "reduce<float, 256>");
  EXPECT_EQ(instance->qualified_name, "reduce<float, 256>");
  EXPECT_FALSE(instance->is_template);
  EXPECT_EQ(instance->launch_bounds_max_threads, 256);
  ASSERT_EQ(instance->params.size(), 4u);
  EXPECT_EQ(instance->params[0].name, "x");
  EXPECT_TRUE(instance->params[0].is_pointer);
  EXPECT_TRUE(instance->params[0].pointee_is_const);
  EXPECT_EQ(instance->params[0].pointee.kind, ScalarKind::kFloat);
  EXPECT_EQ(instance->params[1].pointee.size_bytes, 4u);
  EXPECT_EQ(instance->params[1].pointee.lanes, 2u);
  EXPECT_EQ(instance->params[2].name, "param3");
  EXPECT_FALSE(instance->params[2].is_pointer);
  EXPECT_EQ(instance->params[2].size_bytes, 4u);
  EXPECT_EQ(instance->params[3].lanes, 4u);

  // A type that is not a declaration's (a demangled function pointer).
  compiled.mutable_params(3)->set_type("void (*)(int)");
  EXPECT_FALSE(SignatureOfInstance("reduce<float, 256>", compiled).ok());
}

TEST(SignatureTest, ExternCBlocksAndNamespaces) {
  const std::vector<KernelSignature> kernels = Kernels(R"cu(
extern "C" {
__global__ void a(float* x) {}
__global__ void b(float* x) {}
}
namespace ops {
namespace detail { __device__ float helper(float v) { return v; } }
__global__ void c(float* x) { x[0] = detail::helper(x[0]); }
}
static __global__ void d(int n) {}
__global__ static void e(int n) {}
)cu");
  ASSERT_EQ(kernels.size(), 5u);
  EXPECT_TRUE(kernels[0].is_extern_c);
  EXPECT_TRUE(kernels[1].is_extern_c);
  EXPECT_EQ(kernels[2].name, "c");
  EXPECT_EQ(kernels[2].qualified_name, "ops::c");
  EXPECT_FALSE(kernels[2].is_extern_c);
  EXPECT_EQ(kernels[3].name, "d");
  EXPECT_EQ(kernels[4].name, "e");
  EXPECT_EQ(kernels[4].line, 11u);
}

TEST(SignatureTest, DeclarationThenDefinitionIsOneKernel) {
  const std::vector<KernelSignature> kernels = Kernels(R"cu(
extern "C" __global__ void k(const float*, int);
extern "C" __global__ void k(const float* __restrict__ x, int n) {}
__global__ void over(float* x) {}
__global__ void over(double* x) {}
)cu");
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_TRUE(kernels[0].is_definition);
  EXPECT_EQ(kernels[0].params[0].name, "x");
  EXPECT_EQ(kernels[0].line, 3u);
  EXPECT_EQ(kernels[1].name, "over");
  EXPECT_EQ(kernels[2].name, "over");
}

TEST(SignatureTest, CommentsStringsAndPreprocessorAreSkipped) {
  const std::vector<KernelSignature> kernels = Kernels(R"cu(
// __global__ void in_comment(int x);
/* __global__ void in_block(int x); */
#define DECLARE(name) __global__ void name(float* p)
#if 0
__global__ void disabled_but_still_seen(int x) {}
#endif
const char* s = "__global__ void in_string(int x)";
const char* r = R"x(__global__ void in_raw(int x))x";
__device__ void not_a_kernel(int x) {}
__global__ void real(int x) {}
)cu");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "disabled_but_still_seen");  // no preprocessor: #if is not evaluated
  EXPECT_EQ(kernels[1].name, "real");
}

TEST(SignatureTest, MacrosAliasesAndConstants) {
  absl::StatusOr<ParsedSource> parsed = ParseSource(R"cu(
#define BLOCK 256  // threads
#define TILE (BLOCK / 8)
#define KERNEL extern "C" __global__
#define real_t double
typedef float scalar;
using index_t = std::int64_t;
constexpr int kWarps = BLOCK / 32;
static const unsigned kUnroll = 4u;
constexpr float kNotAnInteger = 1.0f;
const int* not_a_constant = nullptr;

KERNEL void __launch_bounds__(BLOCK, 2) k(const scalar* x, real_t* y, index_t n) {
  const int local = 5;
}
__global__ void __launch_bounds__(TILE * 4) k2(int n) {}
)cu");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(parsed->constants, UnorderedElementsAre(Pair("BLOCK", 256), Pair("TILE", 32),
                                                      Pair("kWarps", 8), Pair("kUnroll", 4)));
  ASSERT_EQ(parsed->kernels.size(), 2u);
  const KernelSignature& k = parsed->kernels[0];
  EXPECT_EQ(k.name, "k");
  EXPECT_TRUE(k.is_extern_c);
  EXPECT_EQ(k.launch_bounds_max_threads, 256);
  EXPECT_EQ(k.params[0].pointee, (TypeInfo{ScalarKind::kFloat, 4, 1}));
  EXPECT_EQ(k.params[1].pointee, (TypeInfo{ScalarKind::kDouble, 8, 1}));
  EXPECT_EQ(k.params[2].kind, ScalarKind::kSignedInt);
  EXPECT_EQ(k.params[2].size_bytes, 8u);
  EXPECT_EQ(parsed->kernels[1].launch_bounds_max_threads, 128);
}

// Every declarator of a constant declaration, in either initialiser form
// (the helper sweep's tiled matmul declared `constexpr int kBM = 64, kBN =
// 64;` and its launch line could not name them).
TEST(SignatureTest, ConstantsWithSeveralDeclaratorsAndBraceInitialisers) {
  absl::StatusOr<ParsedSource> parsed = ParseSource(R"cu(
constexpr int kBM = 64, kBN = kBM * 2, kBK{16};
constexpr int kBrace{256};
static constexpr unsigned kEqBrace = {8u};
constexpr int kAfterPointer = 3, *kNot = nullptr;
constexpr int kTable[] = {1, 2};
constexpr int kFunction(int x) { return x; }
constexpr int kUnclosed{4
;
)cu");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT(
      parsed->constants,
      UnorderedElementsAre(Pair("kBM", 64), Pair("kBN", 128), Pair("kBK", 16), Pair("kBrace", 256),
                           Pair("kEqBrace", 8), Pair("kAfterPointer", 3)));
}

TEST(SignatureTest, AttributesBetweenGlobalAndTheName) {
  const std::vector<KernelSignature> kernels = Kernels(R"cu(
__global__ __launch_bounds__(128, 4) void a(int n) {}
__global__ void __maxnreg__(64) b(int n) {}
__global__ void __cluster_dims__(2, 1, 1) c(int n) {}
__global__ void [[deprecated]] d(int n) {}
__global__ void __attribute__((noinline)) e(int n) {}
)cu");
  ASSERT_EQ(kernels.size(), 5u);
  EXPECT_EQ(kernels[0].name, "a");
  EXPECT_EQ(kernels[0].launch_bounds_max_threads, 128);
  EXPECT_EQ(kernels[1].name, "b");
  EXPECT_FALSE(kernels[1].launch_bounds_max_threads.has_value());
  EXPECT_EQ(kernels[2].name, "c");
  EXPECT_EQ(kernels[3].name, "d");
  EXPECT_EQ(kernels[4].name, "e");
}

TEST(SignatureTest, Errors) {
  EXPECT_EQ(Error("\n__global__ void k(float* x, int n"),
            "line 2: unterminated parameter list of kernel 'k'");
  EXPECT_EQ(Error("__global__ void k(float* x, int n { }"),
            "line 1: unterminated parameter list of kernel 'k'");
  EXPECT_EQ(Error("__global__ int;"),
            "line 1: __global__ is not followed by a function declaration");
  EXPECT_EQ(Error("__global__"), "line 1: __global__ is not followed by a function declaration");
  EXPECT_EQ(Error("__global__ void (int x);"),
            "line 1: expected the kernel's name before '(' after __global__");
  EXPECT_EQ(Error("__global__ void __launch_bounds__(256 k(int x) {}"),
            "line 1: unterminated __launch_bounds__(...)");
}

TEST(SignatureTest, NoKernels) {
  EXPECT_TRUE(Kernels("").empty());
  EXPECT_TRUE(Kernels("__device__ float f(float x) { return x; }").empty());
}

}  // namespace
}  // namespace kerneleval::plan
