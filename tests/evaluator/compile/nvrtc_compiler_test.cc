// In-process NVRTC compiles of trusted sources: diagnostics point at the
// user's lines, resource figures match kernels with known usage, parameters
// come out with sizes and offsets, the prelude works and moves no line.
#include "evaluator/compile/nvrtc_compiler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "evaluator/compile/kernel_info.h"
#include "evaluator/compile/options.h"
#include "tests/support/scoped_env.h"

namespace kerneleval::compile {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

static_assert(!std::is_copy_constructible_v<NvrtcProgram>);

using ::kerneleval::test_support::ScopedEnv;

TEST(FindToolkitTest, FindsTheHeadersAndNamesWhereItLooked) {
  absl::StatusOr<ToolkitPaths> found = FindToolkit();
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(std::filesystem::exists(found->include_dir + "/cuda_runtime.h"));
  EXPECT_FALSE(found->library_dir.empty());  // where libnvrtc was loaded from
  {
    // KERNELEVAL_CUDA_HOME, when set, is the only place looked at.
    ScopedEnv home("KERNELEVAL_CUDA_HOME", "/nonexistent/cuda");
    absl::StatusOr<ToolkitPaths> missing = FindToolkit();
    ASSERT_FALSE(missing.ok());
    EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/cuda/include"));
  }
  {
    // A bundle on another machine points at its own copy of our headers.
    ScopedEnv include("KERNELEVAL_INCLUDE_DIR", "/nonexistent/kerneleval");
    EXPECT_FALSE(FindToolkit().ok());
  }
}

class NvrtcCompilerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<ToolkitPaths> toolkit = FindToolkit();
    ASSERT_TRUE(toolkit.ok()) << toolkit.status();
    settings_ = new NvrtcSettings{.toolkit = *toolkit, .pch_dir = ""};
  }
  static void TearDownTestSuite() { delete settings_; }

  static v1::CompileResult Compile(const std::string& source,
                                   const std::vector<std::string>& options = {},
                                   const std::string& arch = "sm_90") {
    absl::StatusOr<std::vector<std::string>> checked = CheckUserOptions(options);
    EXPECT_TRUE(checked.ok()) << checked.status();
    absl::StatusOr<v1::CompileResult> result = CompileWithNvrtc(source, *checked, arch, *settings_);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : v1::CompileResult();
  }

  static const v1::KernelInfo* Kernel(const v1::CompileResult& result, const std::string& name) {
    for (const auto& k : result.kernels()) {
      if (k.name() == name || k.name().rfind(name + "(", 0) == 0) return &k;
    }
    return nullptr;
  }

  static NvrtcSettings* settings_;
};
NvrtcSettings* NvrtcCompilerTest::settings_ = nullptr;

TEST_F(NvrtcCompilerTest, ErrorOnLineSevenIsReportedOnLineSeven) {
  const v1::CompileResult r = Compile(
      "// 1\n"
      "// 2\n"
      "__global__ void f(float* out) {\n"
      "  float x = INFINITY;   // line 4: the prelude's INFINITY\n"
      "  out[0] = x + M_PI;\n"
      "  // line 6\n"
      "  out[1] = undefined_name;\n"
      "}\n");
  EXPECT_FALSE(r.success());
  ASSERT_GE(r.diagnostics_size(), 1) << r.log();
  const v1::Diagnostic& d = r.diagnostics(0);
  EXPECT_EQ(d.severity(), "error");
  EXPECT_EQ(d.line(), 7u) << r.log();
  EXPECT_EQ(d.column(), 12u) << r.log();
  EXPECT_THAT(d.message(), HasSubstr("undefined_name"));
  EXPECT_THAT(r.log(), HasSubstr("kernel.cu(7): error"));
  EXPECT_THAT(r.log(), Not(HasSubstr("prelude")));
  EXPECT_TRUE(r.kernels().empty());
  EXPECT_TRUE(r.cubin().empty());
}

// ptxas's errors reach the diagnostics and the verdict: NVRTC's log held a
// NUL byte between its own part and ptxas's, so "ptxas error" never started
// a line, the verdict said only "compilation failed" and grep called the log
// binary (rt7 #8).
TEST_F(NvrtcCompilerTest, PtxasErrorsAreDiagnosticsAndTheLogHasNoNul) {
  const v1::CompileResult r = Compile(
      "__global__ void k(float* out) {\n"
      "  __shared__ float big[1 << 20];\n"
      "  big[threadIdx.x] = 1.0f;\n"
      "  __syncthreads();\n"
      "  out[threadIdx.x] = big[(threadIdx.x * 7) % 1024];\n"
      "}\n");
  EXPECT_FALSE(r.success());
  EXPECT_EQ(r.log().find('\0'), std::string::npos) << r.log();
  ASSERT_FALSE(r.diagnostics().empty()) << r.log();
  EXPECT_EQ(r.diagnostics(0).severity(), "error");
  EXPECT_NE(r.diagnostics(0).message().find("too much shared data"), std::string::npos)
      << r.diagnostics(0).message();
  // With a front-end warning first, whose part of the log need not end in a
  // line break: the ptxas error still starts a line of its own.
  const v1::CompileResult warned = Compile(
      "__global__ void k(float* out) {\n"
      "  int unused;\n"
      "  __shared__ float big[1 << 20];\n"
      "  big[threadIdx.x] = 1.0f;\n"
      "  __syncthreads();\n"
      "  out[threadIdx.x] = big[(threadIdx.x * 7) % 1024];\n"
      "}\n");
  EXPECT_FALSE(warned.success());
  bool ptxas_error = false;
  for (const v1::Diagnostic& d : warned.diagnostics()) {
    ptxas_error |=
        d.severity() == "error" && absl::StrContains(d.message(), "too much shared data");
  }
  EXPECT_TRUE(ptxas_error) << warned.log();
}

TEST_F(NvrtcCompilerTest, WarningsKeepTheirLines) {
  const v1::CompileResult r = Compile("__global__ void f() {\n  int unused;\n}\n");
  EXPECT_TRUE(r.success()) << r.log();
  ASSERT_EQ(r.diagnostics_size(), 1) << r.log();
  EXPECT_EQ(r.diagnostics(0).severity(), "warning");
  EXPECT_EQ(r.diagnostics(0).line(), 2u);
  EXPECT_THAT(r.log(), Not(HasSubstr("ptxas info")));
}

TEST_F(NvrtcCompilerTest, SharedMemoryLaunchBoundsAndParameters) {
  const v1::CompileResult r = Compile(
      "extern \"C\" __global__ void __launch_bounds__(256)\n"
      "smem(const float* __restrict__ in, float* out, int n) {\n"
      "  __shared__ float s[1000];\n"
      "  s[threadIdx.x] = in[threadIdx.x];\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x < n) out[threadIdx.x] = s[(threadIdx.x + 1) % 1000];\n"
      "}\n");
  ASSERT_TRUE(r.success()) << r.log();
  const v1::KernelInfo* k = Kernel(r, "smem");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->mangled_name(), "smem");
  EXPECT_GE(k->static_shared_bytes(), 4000u);
  EXPECT_GT(k->registers_per_thread(), 0u);
  EXPECT_GT(k->constant_bytes(), 0u);
  EXPECT_EQ(k->max_threads_per_block(), 256u);
  ASSERT_EQ(k->params_size(), 3);
  EXPECT_EQ(k->params(0).name(), "in");
  EXPECT_EQ(k->params(0).type(), "const float* __restrict__");
  EXPECT_TRUE(k->params(0).is_pointer());
  EXPECT_EQ(k->params(0).size_bytes(), 8u);
  EXPECT_EQ(k->params(1).offset_bytes(), 8u);
  EXPECT_EQ(k->params(2).name(), "n");
  EXPECT_FALSE(k->params(2).is_pointer());
  EXPECT_EQ(k->params(2).size_bytes(), 4u);
  EXPECT_EQ(k->params(2).offset_bytes(), 16u);

  // The CUBIN's own figures agree with ptxas'.
  absl::StatusOr<std::map<std::string, CubinKernel>> elf = ParseCubin(r.cubin());
  ASSERT_TRUE(elf.ok()) << elf.status();
  const CubinKernel& c = elf->at("smem");
  EXPECT_EQ(c.registers.value_or(0), k->registers_per_thread());
  EXPECT_EQ(c.max_threads, 256u);
  EXPECT_GE(c.shared_section_bytes, 4000u);
  ASSERT_EQ(c.params.size(), 3u);
  EXPECT_EQ(c.params[2].size_bytes, 4u);
}

TEST_F(NvrtcCompilerTest, DeviceMallocIsReported) {
  for (const char* allocation : {"malloc(64)", "__nv_aligned_device_malloc(64, 16)"}) {
    const v1::CompileResult with =
        Compile(absl::StrCat("__global__ void k(float* out) {\n  float* p = (float*)", allocation,
                             ";\n  if (p) { p[0] = 1.f; out[0] = p[0]; free(p); }\n}\n"));
    ASSERT_TRUE(with.success()) << with.log();
    EXPECT_TRUE(with.uses_device_malloc()) << allocation;
  }
  // A kernel merely named like it, or a comment, is not a call.
  const v1::CompileResult without = Compile(
      "// malloc(64) would go here\n"
      "extern \"C\" __global__ void malloc_free_kernel(float* out) { out[0] = 1.f; }\n");
  ASSERT_TRUE(without.success()) << without.log();
  EXPECT_FALSE(without.uses_device_malloc());
}

TEST_F(NvrtcCompilerTest, DeviceGlobalsAreListed) {
  const v1::CompileResult r = Compile(
      "__device__ float cache[1024];\n"
      "static __device__ int hidden;\n"
      "__device__ int counter = 5;\n"
      "namespace ns { __device__ double values[3]; }\n"
      "__constant__ float coefficients[4];\n"
      "extern \"C\" __global__ void k(float* out) {\n"
      "  __shared__ float tile[32];\n"
      "  static __device__ unsigned calls;\n"
      "  tile[threadIdx.x % 32] = cache[threadIdx.x];\n"
      "  atomicAdd(&calls, 1u);\n"
      "  out[threadIdx.x] = tile[0] + hidden + counter + ns::values[0] + coefficients[0];\n"
      "}\n");
  ASSERT_TRUE(r.success()) << r.log();
  // Constant and shared memory are not listed: a kernel cannot write the
  // first, and the second does not outlive its block. The prelude's
  // constants have storage in every module.
  std::set<std::string> authors, prelude;
  for (const std::string& name : r.device_globals()) {
    (IsPreludeGlobal(name) ? prelude : authors).insert(name);
  }
  EXPECT_EQ(authors, (std::set<std::string>{"cache", "hidden", "counter", "_ZN2ns6valuesE",
                                            "_ZZ1kE5calls"}));
  EXPECT_EQ(prelude.size(), 12u);
  const v1::CompileResult plain =
      Compile("extern \"C\" __global__ void k(float* out) { out[0] = 1.f; }\n");
  ASSERT_TRUE(plain.success()) << plain.log();
  EXPECT_EQ(plain.device_globals_size(), 12);
  for (const std::string& name : plain.device_globals()) EXPECT_TRUE(IsPreludeGlobal(name)) << name;
}

TEST_F(NvrtcCompilerTest, SpillsUnderARegisterCap) {
  const std::string source =
      "__global__ void heavy(const float* in, float* out) {\n"
      "  float v[48];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 48; ++i) v[i] = in[threadIdx.x + 32 * i];\n"
      "  float acc = 0.f;\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 48; ++i)\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < 48; ++j) acc += v[i] * v[(i * 7 + j) % 48];\n"
      "#pragma unroll\n"
      "  for (int i = 0; i < 48; ++i) out[threadIdx.x + 32 * i] = v[i] * acc;\n"
      "}\n";
  const v1::CompileResult capped = Compile(source, {"-maxrregcount=16"});
  ASSERT_TRUE(capped.success()) << capped.log();
  const v1::KernelInfo* k = Kernel(capped, "heavy");
  ASSERT_NE(k, nullptr);
  // ptxas raises a cap below its floor (24 on sm_90) to the floor.
  EXPECT_LE(k->registers_per_thread(), 24u);
  EXPECT_GT(k->spill_store_bytes(), 0u);
  EXPECT_GT(k->spill_load_bytes(), 0u);
  EXPECT_GT(k->local_bytes(), 0u);
  const v1::CompileResult free = Compile(source);
  EXPECT_GT(Kernel(free, "heavy")->registers_per_thread(), k->registers_per_thread());
  EXPECT_EQ(Kernel(free, "heavy")->spill_store_bytes(), 0u);
}

TEST_F(NvrtcCompilerTest, TemplatesStructsAndHalfTypes) {
  const v1::CompileResult r = Compile(
      "#include <cuda_fp16.h>\n"
      "#include <cuda_bf16.h>\n"
      "struct Pair { int a; double b; char c; };\n"
      "template <typename T> __global__ void scale(T* x, T factor, Pair p) {\n"
      "  x[threadIdx.x] = x[threadIdx.x] * factor + T(p.a);\n"
      "}\n"
      "template __global__ void scale<__half>(__half*, __half, Pair);\n"
      "template __global__ void scale<float>(float*, float, Pair);\n"
      "__global__ void bf(__nv_bfloat16* y, int64_t n, uint8_t k) {\n"
      "  if (n > INT_MAX) y[0] = __float2bfloat16(FLT_MAX);\n"
      "}\n",
      {"--use_fast_math", "-DUNUSED=1"});
  ASSERT_TRUE(r.success()) << r.log();
  EXPECT_EQ(r.kernels_size(), 3);
  const v1::KernelInfo* half = Kernel(r, "void scale<__half>");
  ASSERT_NE(half, nullptr) << r.kernels(0).name();
  ASSERT_EQ(half->params_size(), 3);
  EXPECT_EQ(half->params(0).type(), "__half*");
  EXPECT_EQ(half->params(0).name(), "x");
  EXPECT_EQ(half->params(1).size_bytes(), 2u);
  EXPECT_EQ(half->params(2).size_bytes(), 24u);
  EXPECT_EQ(half->params(2).offset_bytes(), 16u);
  const v1::KernelInfo* bf = Kernel(r, "bf");
  ASSERT_NE(bf, nullptr);
  EXPECT_EQ(bf->params(1).size_bytes(), 8u);
  EXPECT_EQ(bf->params(2).size_bytes(), 1u);
  EXPECT_THAT(std::vector<std::string>(r.options().begin(), r.options().end()),
              ::testing::ElementsAre("--use_fast_math", "-DUNUSED=1"));
  EXPECT_EQ(r.toolkit_version(), NvrtcVersionString());
}

TEST_F(NvrtcCompilerTest, CooperativeGroupsHeadersCompile) {
  // Their details/driver_abi.h includes "info.h" beside it, which
  // --no-source-include hid ("cannot open source file", red team 2026-12-04).
  const v1::CompileResult r = Compile(
      "#include <cooperative_groups.h>\n"
      "#include <cooperative_groups/reduce.h>\n"
      "namespace cg = cooperative_groups;\n"
      "__global__ void row_sum(const float* x, float* y) {\n"
      "  cg::thread_block block = cg::this_thread_block();\n"
      "  auto warp = cg::tiled_partition<32>(block);\n"
      "  float v = cg::reduce(warp, x[threadIdx.x], cg::plus<float>());\n"
      "  block.sync();\n"
      "  if (warp.thread_rank() == 0) atomicAdd(y, v);\n"
      "}\n");
  EXPECT_TRUE(r.success()) << r.log();
}

TEST_F(NvrtcCompilerTest, StandardHeadersAKernelWrittenForNvccIncludesCompile) {
  // NVRTC has no standard library: <stdio.h>, <cassert>, <algorithm>,
  // <type_traits>, ... could not be opened (a compile verdict for kernels
  // that nvcc builds; red team 2026-12-04). kerneleval's shims give printf
  // (built in), libcu++'s assert and its cuda::std names also in std.
  const char* headers[] = {"stdio.h", "cstdio",      "assert.h", "cassert",  "stdlib.h",
                           "cstdlib", "string.h",    "cstring",  "stddef.h", "cstddef",
                           "limits",  "type_traits", "utility",  "algorithm"};
  std::string source;
  for (const char* header : headers) source += absl::StrCat("#include <", header, ">\n");
  source +=
      "template <class T> __device__ T biggest() { return std::numeric_limits<T>::max(); }\n"
      "__global__ void k(float* x, int n) {\n"
      "  static_assert(std::is_same_v<float, std::remove_cv_t<const float>>);\n"
      "  assert(n > 0);\n"
      "  float a = x[0], b = x[1];\n"
      "  if (a > b) std::swap(a, b);\n"
      "  x[0] = std::min(a, b) + std::max(1.0f, b) + std::clamp(a, 0.f, 1.f) + biggest<float>();\n"
      "  std::size_t bytes = sizeof(float);\n"
      "  printf(\"%f %d\\n\", x[0], (int)bytes);\n"
      "}\n";
  const v1::CompileResult r = Compile(source);
  EXPECT_TRUE(r.success()) << r.log();
}

TEST_F(NvrtcCompilerTest, VirtualArchGivesPtxOnly) {
  const v1::CompileResult r =
      Compile("__global__ void k(float* x) { x[0] = 1.f; }\n", {}, "compute_90");
  ASSERT_TRUE(r.success()) << r.log();
  EXPECT_TRUE(r.cubin().empty());
  EXPECT_THAT(r.ptx(), HasSubstr(".entry _Z1kPf"));
  ASSERT_EQ(r.kernels_size(), 1);
  EXPECT_EQ(r.kernels(0).name(), "k(float*)");
  EXPECT_EQ(r.kernels(0).params(0).size_bytes(), 8u);
  EXPECT_TRUE(r.kernels(0).params(0).is_pointer());
}

TEST_F(NvrtcCompilerTest, FunctionsLeftUnresolvedAreAFailedCompileOnEveryArch) {
  // For compute_XX ptxas does not run, and NVRTC leaves the declarations in
  // the PTX; the CPU backend's host build bound them to the C library
  // (sweep 41, t01). (An extern variable NVRTC treats as a static
  // definition, with a warning.)
  const std::string source =
      "extern \"C\" __device__ int getpid(void);\n"
      "__device__ float helper(float);\n"
      "__global__ void k(float* x) { x[0] = getpid() + helper(x[1]); }\n";
  for (const char* arch : {"compute_90", "sm_90"}) {
    const v1::CompileResult r = Compile(source, {}, arch);
    EXPECT_FALSE(r.success()) << arch;
    EXPECT_THAT(r.log(), HasSubstr("getpid")) << arch;
  }
  const v1::CompileResult virtual_arch = Compile(source, {}, "compute_90");
  EXPECT_THAT(virtual_arch.log(), HasSubstr("declares getpid, _Z6helperf without defining"));
  ASSERT_FALSE(virtual_arch.diagnostics().empty());
  EXPECT_EQ(virtual_arch.diagnostics(virtual_arch.diagnostics_size() - 1).severity(), "error");
  // CUDA's own extern functions compile: printf, malloc/free (and new /
  // delete), the aligned malloc, assert.
  const v1::CompileResult own = Compile(
      "#include <cassert>\n"
      "__global__ void k(int* y, int n) {\n"
      "  void* p = __nv_aligned_device_malloc(64, 16);\n"
      "  free(p);\n"
      "  int* q = new int[n];\n"
      "  delete[] q;\n"
      "  printf(\"%d\\n\", n);\n"
      "  assert(n > 0);\n"
      "}\n",
      {}, "compute_90");
  EXPECT_TRUE(own.success()) << own.log();
}

TEST_F(NvrtcCompilerTest, UnknownArchIsAFailedCompileNotAnError) {
  const v1::CompileResult r = Compile("__global__ void k() {}\n", {}, "sm_11");
  EXPECT_FALSE(r.success());
  EXPECT_THAT(r.log(), HasSubstr("arch"));
}

TEST_F(NvrtcCompilerTest, ArgumentsCarryTheServersSettings) {
  NvrtcSettings settings = *settings_;
  settings.pch_dir = "/tmp/pch-test";
  const std::vector<std::string> args = NvrtcArguments({"--use_fast_math"}, "sm_90", settings);
  EXPECT_EQ(args.front(), "--use_fast_math");
  EXPECT_THAT(args, ::testing::Contains("--ptxas-options=-v"));
  // Headers find their neighbours (<cooperative_groups.h> needs it).
  EXPECT_THAT(args, ::testing::Not(::testing::Contains("--no-source-include")));
  EXPECT_THAT(args, ::testing::Contains("--pch-dir=/tmp/pch-test"));
  EXPECT_THAT(args, ::testing::Contains("--pre-include=" + settings.toolkit.prelude));
  EXPECT_THAT(NvrtcArguments({}, "compute_90", settings),
              ::testing::Not(::testing::Contains("--ptxas-options=-v")));
}

}  // namespace
}  // namespace kerneleval::compile
