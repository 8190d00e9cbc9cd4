// Source transforms of the CPU backend: no compiler involved.
#include "evaluator/cpu/source_rewrite.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace kerneleval::cpu {
namespace {

size_t Lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST(MaskCommentsAndLiterals, BlanksCommentsAndStringsKeepsLayout) {
  const std::string source =
      "int a; // asm here\n/* wmma\n  more */ const char* s = \"asm(\\\"x\\\")\";\n"
      "char c = '\\''; int n = 1'000; auto r = R\"x(asm)x\";\n";
  const std::string masked = MaskCommentsAndLiterals(source);
  ASSERT_EQ(masked.size(), source.size());
  EXPECT_EQ(Lines(masked), Lines(source));
  EXPECT_EQ(masked.find("asm"), std::string::npos);
  EXPECT_EQ(masked.find("wmma"), std::string::npos);
  EXPECT_NE(masked.find("int n = 1'000;"), std::string::npos);  // a digit separator, not a char
  EXPECT_NE(masked.find("int a;"), std::string::npos);
}

TEST(FindUnsupportedFeature, InlineAsmWithLine) {
  const auto found = FindUnsupportedFeature(
      "__global__ void k(int* x) {\n  // asm in a comment is fine\n  asm "
      "volatile(\"trap;\");\n}\n");
  ASSERT_TRUE(found.has_value());
  EXPECT_NE(found->find("does not support inline PTX assembly"), std::string::npos) << *found;
  EXPECT_NE(found->find("__ldg (ld.global.nc)"), std::string::npos) << *found;
  EXPECT_NE(found->find("line 3"), std::string::npos) << *found;
}

TEST(FindUnsupportedFeature, OtherFeatures) {
  EXPECT_TRUE(
      FindUnsupportedFeature("auto g = cooperative_groups::this_grid(); g.sync();").has_value());
  EXPECT_TRUE(FindUnsupportedFeature("__global__ void k() { child<<<1, 1>>>(); }").has_value());
  const auto predicate = FindUnsupportedFeature("bool s = __isShared(p);");
  ASSERT_TRUE(predicate.has_value());
  EXPECT_NE(predicate->find("address-space predicates"), std::string::npos) << *predicate;
  EXPECT_TRUE(FindUnsupportedFeature("__barrier_sync(1);").has_value());
}

// CUB's block and warp collectives are emulated (kerneleval_cpu_cub.h) and
// libcu++'s host-compatible headers compile as they are; the rest of CCCL is
// refused naming the header, whether included with <> or "".
TEST(FindUnsupportedFeature, CcclHeaders) {
  for (const char* supported :
       {"#include <cub/block/block_reduce.cuh>\n", "#  include \"cub/warp/warp_scan.cuh\"\n",
        "#include <cub/block/block_radix_sort.cuh>\n", "#include <cuda/std/limits>\n",
        "#include <cuda/atomic>\n", "#include <cuda/functional>\n",
        "// #include <thrust/sort.h>\n#include <cuda/std/cmath>\n"}) {
    EXPECT_FALSE(FindUnsupportedFeature(supported).has_value()) << supported;
  }
  const auto histogram = FindUnsupportedFeature("\n#include <cub/block/block_histogram.cuh>\n");
  ASSERT_TRUE(histogram.has_value());
  EXPECT_NE(histogram->find("<cub/block/block_histogram.cuh>: of CUB only the block and warp "
                            "collectives and the thread utilities are supported"),
            std::string::npos)
      << *histogram;
  EXPECT_NE(histogram->find("line 2"), std::string::npos) << *histogram;
  const auto device = FindUnsupportedFeature("#include \"cub/device/device_reduce.cuh\"\n");
  ASSERT_TRUE(device.has_value());
  EXPECT_NE(device->find("<cub/device/device_reduce.cuh>"), std::string::npos) << *device;
  const auto thrust = FindUnsupportedFeature("#include <thrust/sort.h>\n");
  ASSERT_TRUE(thrust.has_value());
  EXPECT_NE(thrust->find("Thrust and CUTLASS"), std::string::npos) << *thrust;
  // Host code of these blocks the OS thread the block's threads share.
  for (const char* refused :
       {"#include <cuda/barrier>\n", "#include <cuda/std/semaphore>\n",
        "#include <cuda/pipeline>\n", "#include <cuda/ptx>\n", "#include <nv/target>\n"}) {
    const auto found = FindUnsupportedFeature(refused);
    ASSERT_TRUE(found.has_value()) << refused;
    EXPECT_NE(found->find("of libcu++ only the headers of types"), std::string::npos) << *found;
  }
}

TEST(RewriteCubIncludes, EachCubIncludeBecomesTheEmulationsSameLine) {
  const std::string source =
      "#include <cuda_fp16.h>\n#include <cub/block/block_reduce.cuh>  // sums\n"
      "  # include \"cub/warp/warp_reduce.cuh\"\nint x; // #include <cub/x.cuh>\n";
  EXPECT_EQ(RewriteCubIncludes(source),
            "#include <cuda_fp16.h>\n#include \"kerneleval_cpu_cub.h\"\n"
            "  #include \"kerneleval_cpu_cub.h\"\nint x; // #include <cub/x.cuh>\n");
}

TEST(FindUnsupportedFeature, OrdinaryKernelsPass) {
  EXPECT_FALSE(FindUnsupportedFeature(
                   "// uses asm? no\n#include <cuda_fp16.h>\n"
                   "__global__ void k(const float* x, float* y, int n) {\n"
                   "  const char* s = \"asm wmma <<<\"; int i = blockIdx.x * blockDim.x + "
                   "threadIdx.x; if (i < n) y[i] = x[i] << 1 < 3 ? 1.f : 2.f; }\n")
                   .has_value());
  EXPECT_FALSE(
      FindUnsupportedFeature("std::ostream& operator<<<int>(std::ostream&, int);").has_value());
}

TEST(RewriteExternShared, BlockScopeKeepsLines) {
  const std::string source =
      "__global__ void k(float* y) {\n"
      "  extern __shared__ float smem[];\n"
      "  smem[threadIdx.x] = 1.f;\n"
      "}\n";
  const std::string out = RewriteExternShared(source);
  EXPECT_EQ(Lines(out), Lines(source));
  // In code: a local pointer (no thread-local variable initialised as the
  // code runs, whose guard each block's fill would set).
  EXPECT_NE(out.find("  float * const smem = (decltype(smem))"), std::string::npos) << out;
  EXPECT_EQ(out.find("extern"), std::string::npos);
  EXPECT_EQ(out.find("__shared__"), std::string::npos);
  EXPECT_EQ(out.find("static"), std::string::npos);
  EXPECT_NE(out.find("smem[threadIdx.x] = 1.f;"), std::string::npos);
}

TEST(RewriteExternShared, InnerDimensionsMakeAPointerToArrays) {
  // `tile[][33]` was left alone and failed to link (red team, 2026-12-04).
  const std::string source =
      "__global__ void k(float* y) {\n"
      "  extern __shared__ float tile[][33];\n"
      "  extern __shared__ int cube[ ][4]\n[8];\n"
      "  tile[threadIdx.y][threadIdx.x] = 1.f;\n"
      "}\n";
  const std::string out = RewriteExternShared(source);
  EXPECT_EQ(Lines(out), Lines(source));
  EXPECT_NE(out.find("  float (* const tile)[33] = (decltype(tile))"), std::string::npos) << out;
  EXPECT_NE(out.find("  int (* const cube)[4] [8] = (decltype(cube))"), std::string::npos) << out;
}

TEST(RewriteExternShared, NamespaceScopeAlignedAndMultiline) {
  const std::string source =
      "#include <cuda_fp16.h>\n"
      "extern __shared__ __align__(16) unsigned char raw[\n"
      "];\n"
      "__shared__ float stat[32];\n"
      "extern \"C\" __global__ void k() { extern volatile __shared__ int v[]; }\n";
  const std::string out = RewriteExternShared(source);
  EXPECT_EQ(Lines(out), Lines(source));
  // At namespace scope: a thread-local pointer kept with the prelude's own
  // data, set as each block starts.
  EXPECT_NE(out.find("static __shared__ __align__(16) unsigned char * raw "
                     "KERNELEVAL_CPU_TDATA(extern_shared_raw) = nullptr; "
                     "KERNELEVAL_CPU_DYNAMIC_SHARED(raw);"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("{        volatile            int * const v = (decltype(v))"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("__shared__ float stat[32];"), std::string::npos);  // static: unchanged
  EXPECT_NE(out.find("#include <cuda_fp16.h>\n"), std::string::npos);
  EXPECT_NE(out.find("extern \"C\" __global__ void k()"), std::string::npos);
}

TEST(IsValidKernelName, RejectsInjection) {
  EXPECT_TRUE(IsValidKernelName("softmax"));
  EXPECT_TRUE(IsValidKernelName("ns::gemm<128, float>"));
  EXPECT_FALSE(IsValidKernelName(""));
  EXPECT_FALSE(IsValidKernelName("k; int x"));
  EXPECT_FALSE(IsValidKernelName("k\n#include \"/etc/passwd\""));
  EXPECT_FALSE(IsValidKernelName("k /* */"));
  EXPECT_FALSE(IsValidKernelName("1k"));
  // Division and remainder in template arguments, but no comment's start:
  // a `//` would hide the rest of the generated launcher's line.
  EXPECT_TRUE(IsValidKernelName("k<1024 / 4, 7 % 3>"));
  EXPECT_FALSE(IsValidKernelName("k<1>// x"));
  EXPECT_FALSE(IsValidKernelName("k<1>/"));
}

TEST(DefineLine, AcceptsDefinesOnly) {
  EXPECT_EQ(*DefineLine("-DTILE=32"), "#define TILE 32");
  EXPECT_EQ(*DefineLine("USE_FAST"), "#define USE_FAST 1");
  EXPECT_FALSE(DefineLine("-o/etc/x").ok());
  EXPECT_FALSE(DefineLine("-DX=1\n#include \"/etc/passwd\"").ok());
  EXPECT_FALSE(DefineLine("-fplugin=evil.so").ok());
}

TEST(BuildTranslationUnit, LinesMapToTheSubmission) {
  const std::string source = "__global__ void a(int* x) {}\n__global__ void b(int* x) {}";
  absl::StatusOr<std::string> unit = BuildTranslationUnit(source, {"-DN=4"}, {"a", "b"});
  ASSERT_TRUE(unit.ok()) << unit.status();
  EXPECT_EQ(unit->rfind("#include \"kerneleval_cpu_prelude.h\"\n", 0), 0u);
  EXPECT_NE(unit->find("#define N 4\n#line 1 \"kernel.cu\"\n" + source + "\n#line 1"),
            std::string::npos);
  EXPECT_NE(unit->find("kerneleval_cpu_launch_0(const kerneleval_cpu_launch* launch) { return "
                       "::kerneleval_cpu::detail::Launch<&a>(launch); }"),
            std::string::npos);
  EXPECT_NE(unit->find("Launch<&b>"), std::string::npos);
  EXPECT_FALSE(BuildTranslationUnit(source, {}, {"a;b"}).ok());
}

// --fmad=false: the pragma comes right after the prelude's #include (the
// precompiled prelude must come first) and before every line of the
// submission; a unit that does not start with that #include is refused.
TEST(FuseNoMultiplyAdd, ThePragmaFollowsThePreludeAndPrecedesTheSubmission) {
  const std::string source = "__global__ void a(float* x) { x[0] = x[1] * x[2] + x[3]; }\n";
  absl::StatusOr<std::string> unit = BuildTranslationUnit(source, {"-DN=4"}, {"a"}, 900);
  ASSERT_TRUE(unit.ok()) << unit.status();
  const std::string unfused = *unit;
  ASSERT_TRUE(FuseNoMultiplyAdd(&*unit).ok());
  const std::string pragma = "#pragma GCC optimize(\"fp-contract=off\")\n";
  EXPECT_EQ(unit->rfind("#include \"kerneleval_cpu_prelude.h\"\n" + pragma, 0), 0u) << *unit;
  EXPECT_LT(unit->find(pragma), unit->find("#define N 4"));
  EXPECT_LT(unit->find(pragma), unit->find(source));
  EXPECT_EQ(*unit, std::string(unfused).insert(unfused.find('\n') + 1, pragma));

  std::string not_a_unit = source;
  EXPECT_TRUE(absl::IsInvalidArgument(FuseNoMultiplyAdd(&not_a_unit)));
  EXPECT_EQ(not_a_unit, source) << "a refused unit is left as it was";
}

TEST(CudaArchValue, FromTheTarget) {
  EXPECT_EQ(CudaArchValue("sm_90"), 900);
  EXPECT_EQ(CudaArchValue("sm_90a"), 900);
  EXPECT_EQ(CudaArchValue("sm_100f"), 1000);
  EXPECT_EQ(CudaArchValue("compute_80"), 800);
  for (const char* bad : {"", "sm_", "sm_9", "sm_90x", "gfx90a", "sm_99999999"}) {
    EXPECT_EQ(CudaArchValue(bad), 0) << bad;
  }
}

// __CUDA_ARCH__, __CUDACC__ and __CUDACC_RTC__ are the submission's, as
// NVRTC defines them for device code (an #ifdef __CUDACC_RTC__ gave the host
// build other code than NVRTC's: sweep 6, x13); its #includes are compiled
// without them, and the lines stay the user's.
TEST(BuildTranslationUnit, NvrtcMacrosForTheSubmissionNotItsIncludes) {
  const std::string source =
      "#include <cuda/std/limits>\n#if __CUDA_ARCH__ >= 800\nint x;\n#endif\n";
  absl::StatusOr<std::string> unit = BuildTranslationUnit(source, {}, {}, 900);
  ASSERT_TRUE(unit.ok()) << unit.status();
  EXPECT_NE(unit->find("#define __CUDA_ARCH__ 900\n#undef __CUDACC__\n#define __CUDACC__ 1\n"
                       "#undef __CUDACC_RTC__\n#define __CUDACC_RTC__ 1\n"
                       "#line 1 \"kernel.cu\"\n"
                       "#pragma push_macro(\"__CUDA_ARCH__\")\n#undef __CUDA_ARCH__\n"
                       "#pragma push_macro(\"__CUDACC__\")\n#undef __CUDACC__\n"
                       "#pragma push_macro(\"__CUDACC_RTC__\")\n#undef __CUDACC_RTC__\n"
                       "#include <cuda/std/limits>\n#pragma pop_macro(\"__CUDA_ARCH__\")\n"
                       "#pragma pop_macro(\"__CUDACC__\")\n#pragma pop_macro(\"__CUDACC_RTC__\")\n"
                       "#line 2 \"kernel.cu\"\n#if __CUDA_ARCH__ >= 800\n"),
            std::string::npos)
      << *unit;
  unit = BuildTranslationUnit(source, {}, {}, 0);
  ASSERT_TRUE(unit.ok()) << unit.status();
  EXPECT_EQ(unit->find("__CUDA_ARCH__ 900"), std::string::npos);
  EXPECT_EQ(unit->find("__CUDACC_RTC__"), std::string::npos);
  EXPECT_EQ(unit->find("push_macro"), std::string::npos);
}

// With NVRTC's probe: its predefined macros for the submission's code (a
// literal one always NVRTC's, any other where the host has none), its
// #includes compiled as the host's, and each conditional branch marked as
// NVRTC took it or refused where it did not; the lines stay the user's.
TEST(BuildTranslationUnit, TheSubmissionPreprocessesAsUnderNvrtc) {
  const std::string source =
      "#include <cuda/std/limits>\n#if A\nint a;\n#elif B\nint b;\n#endif\nint c;\n";
  v1::HostBuildProbe probe;
  (*probe.mutable_predefined_macros())["__cplusplus"] = "201703L";
  (*probe.mutable_predefined_macros())["__EDG_SIZE_TYPE__"] = "unsigned long";
  (*probe.mutable_predefined_macros())["__device__"] = "__attribute__((device))";
  (*probe.mutable_predefined_macros())["__has_builtin"] = "__has_builtin";
  probe.add_branches_taken(1);
  absl::StatusOr<std::string> unit = BuildTranslationUnit(source, {"-DN=4"}, {}, 900, &probe);
  ASSERT_TRUE(unit.ok()) << unit.status();
  const std::string enter =
      "#pragma push_macro(\"__EDG_SIZE_TYPE__\")\n#ifndef __EDG_SIZE_TYPE__\n"
      "#define __EDG_SIZE_TYPE__ unsigned long\n#endif\n"
      "#pragma push_macro(\"__cplusplus\")\n#undef __cplusplus\n#define __cplusplus 201703L\n";
  const std::string leave =
      "#pragma pop_macro(\"__EDG_SIZE_TYPE__\")\n#pragma pop_macro(\"__cplusplus\")\n";
  EXPECT_NE(
      unit->find(
          "#undef __SANITIZE_THREAD__\n#pragma GCC optimize(\"trivial-auto-var-init=pattern\")\n" +
          enter + "#define N 4\n#line 1 \"kernel.cu\"\n" + leave + "#include <cuda/std/limits>\n" +
          enter +
          "#line 2 \"kernel.cu\"\n"
          "#if A\n#error \"line 2: NVRTC skips this preprocessor branch"),
      std::string::npos)
      << *unit;
  EXPECT_NE(
      unit->find("#else\n#line 4 \"kernel.cu\"\n#if B\n#define KERNELEVAL_CPU_BRANCH_1\n"
                 "#line 5 \"kernel.cu\"\nint b;\n#endif\n#endif\n#line 7 \"kernel.cu\"\n"
                 "int c;\n#line 1 \"kerneleval-branch-check\"\n#ifndef KERNELEVAL_CPU_BRANCH_1\n"
                 "#error \"line 4: NVRTC takes this preprocessor branch"),
      std::string::npos)
      << *unit;
  EXPECT_NE(unit->find("skips it: code that tells the two builds apart is refused\"\n#endif\n" +
                       leave + "#line 1 \"kerneleval-launchers\""),
            std::string::npos)
      << *unit;
  // Function-like and attribute macros are the host's; the old three
  // macros are not defined apart.
  EXPECT_EQ(unit->find("__has_builtin"), std::string::npos);
  EXPECT_EQ(unit->find("__attribute__((device))"), std::string::npos);
  EXPECT_EQ(unit->find("#define __CUDACC__ 1"), std::string::npos);

  probe.add_branches_taken(5);
  EXPECT_FALSE(BuildTranslationUnit(source, {}, {}, 900, &probe).ok());
}

TEST(FindUnsupportedFeature, ThePreludesOwnNamesAreRefused) {
  for (const char* source : {"#define KERNELEVAL_CPU_BRANCH_0\n", "int x = kerneleval_cpu_y;\n",
                             "#undef KERNELEVAL_CPU_TDATA\n"}) {
    std::optional<std::string> refused = FindUnsupportedFeature(source);
    ASSERT_TRUE(refused.has_value()) << source;
    EXPECT_NE(refused->find("names starting with kerneleval_cpu"), std::string::npos) << *refused;
  }
  EXPECT_FALSE(
      FindUnsupportedFeature("// kerneleval_cpu_cub.h emulates it\nint my_kerneleval_cpu;\n")
          .has_value());
}

// What sweep 8 used as gates between the builds is refused (tests/exploits:
// TellsTheBuildsApartWhereTheBranchCheckDoesNotLook); what honest kernels
// write around it is not.
TEST(FindUnsupportedFeature, GatesOutsideTheCheckedDirectivesButNotTheirNeighbours) {
  const char* honest[] = {
      "#define LOAD(p, i) \\\n  do { \\\n    (p)[i] = 0;\\\n  } while (0)\n",
      "#define CAT_(a, b) a##b\n#define CAT(a, b) CAT_(a, b)\nint CAT(x, 1);\n",
      "#ifndef _MY_KERNEL_H\n#define _MY_KERNEL_H\n#endif\n#if defined(_OPENMP)\n#endif\n",
      "__global__ void k(float* x) {\n  _Pragma(\"unroll\") for (int i = 0; i < 4; ++i) x[i] = "
      "0;\n}\n",
      "const char* s = \"a\\\\\"; // a string ending in a backslash\n",
  };
  for (const char* source : honest) {
    EXPECT_EQ(FindUnsupportedFeature(source), std::nullopt) << source;
  }
  const std::pair<const char*, const char*> refused[] = {
      {"int x = 1;\\\nint y;\n", "line splices"},
      {"#define A x\\\ny\n", "line splices"},
      {"// comment \\\nint x;\n", "line splices"},
      {"#define S(x) #x\n", "the # operator (stringizing)"},
      {"#define S(...) #__VA_ARGS__\n", "the # operator (stringizing)"},
      {"#pragma push_macro(\"X\")\n", "push_macro and pop_macro"},
      {"#define X _LIBCUDACXX_VERSION\n",
       "names reserved to the implementation (_LIBCUDACXX_VERSION"},
      {"int v = _GLIBCXX_RELEASE;\n", "names reserved to the implementation (_GLIBCXX_RELEASE"},
      {"const char* f = __PRETTY_FUNCTION__;\n", "__PRETTY_FUNCTION__"},
      {"#pragma GCC optimize(\"O0\")\n", "#pragma GCC and #pragma clang"},
      {"_Pragma(\" GCC unroll 4\") int x;\n", "#pragma GCC and #pragma clang"},
      {"__attribute__((optimize(\"O3\"))) void f();\n", "the optimize attribute"},
      // Sweep 38: what exempts a local from the pattern every local starts
      // with (BuildTranslationUnit), and a function's name through a builtin.
      {"__global__ void k() { int t[4] __attribute__((uninitialized)); }\n",
       "the uninitialized attribute"},
      {"struct C { const char* n = __builtin_FUNCTION(); };\n", "the source-location builtins"},
      {"int line = __builtin_LINE();\n", "the source-location builtins"},
      {"__global__ void __cluster_dims__(2, 1, 1) k() {}\n", "thread block clusters"},
      // Sweep 38 (s38a): what would silence NVRTC's long double warning.
      {"#pragma nv_diag_suppress 20208\n", "NVRTC's diagnostic pragmas"},
      {"_Pragma(\"diag_suppress 20208\") int x;\n", "NVRTC's diagnostic pragmas"},
      {"#pragma nv_diagnostic push\n", "NVRTC's diagnostic pragmas"},
  };
  for (const auto& [source, why] : refused) {
    std::optional<std::string> found = FindUnsupportedFeature(source);
    ASSERT_TRUE(found.has_value()) << source;
    EXPECT_NE(found->find(why), std::string::npos) << source << ": " << *found;
  }
}

// A directive written with the digraph %: is one to both compilers, which
// the scans for `#` would miss (a `%:ifdef __GNUC__` gate).
TEST(FindUnsupportedFeature, DigraphDirectivesAreRefused) {
  std::optional<std::string> digraph =
      FindUnsupportedFeature("int a;\n%:ifdef __GNUC__\n%:endif\n");
  ASSERT_TRUE(digraph.has_value());
  EXPECT_NE(digraph->find("the digraph %: (write #) (kernel.cu line 2)"), std::string::npos)
      << *digraph;
  EXPECT_FALSE(
      FindUnsupportedFeature("int a = 5 % 3;  // %:\nconst char* s = \"%:\";\n").has_value());
}

}  // namespace
}  // namespace kerneleval::cpu
