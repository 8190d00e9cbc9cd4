// NVRTC logs (as CUDA 13 writes them) -> diagnostics, and the user-facing log.
#include "evaluator/compile/diagnostics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kerneleval::compile {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kSource[] =
    "template <typename T> __device__ T g(T x) { return x.foo; }\n"
    "\n"
    "__global__ void f(float* a) {\n"
    "\tint unused;\n"
    "\ta[0] = g(a[1]);\n"
    "}\n";

constexpr char kLog[] =
    "kernel.cu(4): warning #177-D: variable \"unused\" was declared but never referenced\n"
    "  \tint unused;\n"
    "  \t    ^\n"
    "\n"
    "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
    "\n"
    "kernel.cu(1): error: expression must have class type but it has type \"float\"\n"
    "  template <typename T> __device__ T g(T x) { return x.foo; }\n"
    "                                                     ^\n"
    "          detected during instantiation of \"T g(T) [with T=float]\" at line 5\n"
    "\n"
    "/usr/local/cuda/include/cuda_fp16.h(3049): note #3322-D: number of parameters of function "
    "\"__hadd(__half, __half)\" does not match the call\n"
    "  __CUDA_HOSTDEVICE_FP16_DECL__ __half __hadd(const __half a, const __half b);\n"
    "                                       ^\n"
    "/x/include/cub/util.cuh(12): error: something in a header\n"
    "          detected during:\n"
    "            instantiation of \"void cub::f<T>(T) [with T=int]\" at line 40 of "
    "/x/include/cub/other.cuh\n"
    "            instantiation of \"void k<T>(T) [with T=int]\" at line 3 of kernel.cu\n"
    "\n"
    "ptxas warning : Registers are spilled to local memory in function '_Z1fPf', 8 bytes spill "
    "stores, 8 bytes spill loads\n"
    "1 error detected in the compilation of \"kernel.cu\".\n";

TEST(DiagnosticsTest, ParsesSeverityLineColumnAndMessage) {
  const std::vector<v1::Diagnostic> d = ParseDiagnostics(kLog, kSource);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].severity(), "warning");
  EXPECT_EQ(d[0].line(), 4u);
  EXPECT_EQ(d[0].column(), 6u);  // "\tint unused": 'u' is the 6th character
  EXPECT_EQ(d[0].message(), "variable \"unused\" was declared but never referenced");

  EXPECT_EQ(d[1].severity(), "error");
  EXPECT_EQ(d[1].line(), 1u);
  EXPECT_EQ(d[1].column(), 52u);
  EXPECT_THAT(d[1].message(), HasSubstr("instantiated at line 5"));

  EXPECT_EQ(d[2].severity(), "note");
  EXPECT_EQ(d[2].line(), 0u);  // a toolkit header, with no user line named
  EXPECT_THAT(d[2].message(), HasSubstr("cuda_fp16.h(3049): number of parameters"));

  // A header's error instantiated from the user's line 3 points there.
  EXPECT_EQ(d[3].severity(), "error");
  EXPECT_EQ(d[3].line(), 3u);
  EXPECT_THAT(d[3].message(), HasSubstr("util.cuh(12): something in a header"));

  EXPECT_EQ(d[4].severity(), "warning");
  EXPECT_EQ(d[4].line(), 0u);
  EXPECT_THAT(d[4].message(), HasSubstr("Registers are spilled"));
}

TEST(DiagnosticsTest, ColumnOnlyWhenTheEchoIsTheUsersLine) {
  // The echoed line does not match the source (e.g. after #line): no column.
  const std::vector<v1::Diagnostic> d =
      ParseDiagnostics("kernel.cu(1): error: bad\n  something else\n   ^\n", "int x = y;\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].line(), 1u);
  EXPECT_EQ(d[0].column(), 0u);
}

TEST(DiagnosticsTest, NvrtcOwnErrorsAndCatastrophicErrors) {
  const std::vector<v1::Diagnostic> d = ParseDiagnostics(
      "nvrtc: error: invalid value for --gpu-architecture (-arch)\n"
      "kernel.cu(2): catastrophic error: cannot open source file \"/etc/passwd\"\n",
      "\n#include \"/etc/passwd\"\n");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].severity(), "error");
  EXPECT_EQ(d[0].line(), 0u);
  EXPECT_EQ(d[1].severity(), "error");
  EXPECT_EQ(d[1].line(), 2u);
}

// NVRTC compiles a template kernel's name expression as a file of its own;
// its errors say where they come from and are diagnostics without a line.
TEST(DiagnosticsTest, NameExpressionErrorsNameTheLaunchedTemplate) {
  const std::string log = UserFacingLog(
      "__nv_name_map(2): error: identifier \"kNope\" is undefined\n"
      "  #pragma nv_mangled_name k<kNope>\n"
      "                            ^\n");
  EXPECT_THAT(log, StartsWith("nvrtc: error: in the template arguments of a launched kernel: "
                              "identifier \"kNope\" is undefined\n"));
  const std::vector<v1::Diagnostic> d = ParseDiagnostics(log, "__global__ void k() {}\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].severity(), "error");
  EXPECT_EQ(d[0].line(), 0u);
  EXPECT_EQ(d[0].message(),
            "in the template arguments of a launched kernel: identifier \"kNope\" is undefined");
}

TEST(DiagnosticsTest, SourceLinesThatLookLikeDiagnosticsAreNotParsed) {
  // The echo is indented, so a crafted source line is never a diagnostic.
  const std::vector<v1::Diagnostic> d = ParseDiagnostics(
      "kernel.cu(1): error: x\n  kernel.cu(9): error: fake\n  ^\n", "kernel.cu(9): error: fake\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].message(), "x");
}

TEST(DiagnosticsTest, UserFacingLogDropsPtxasInfoAndHiddenPaths) {
  const std::string raw =
      "\nkernel.cu(4): warning #177-D: variable \"unused\" was declared but never referenced\n"
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1fPf' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1fPf\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n"
      "ptxas warning : Stack size for entry function '_Z1fPf' cannot be statically determined\n"
      "Warning #630-D: the initial sequence of preprocessing directives is not compatible with "
      "those of precompiled header file \"/tmp/kerneleval-compile-abc/pch/kernel_0.pch\"\n"
      "\n\n";
  const std::string log = UserFacingLog(raw, "/tmp/kerneleval-compile-abc/pch");
  EXPECT_THAT(log, HasSubstr("kernel.cu(4): warning #177-D"));
  EXPECT_THAT(log, HasSubstr("ptxas warning : Stack size"));
  EXPECT_THAT(log, Not(HasSubstr("ptxas info")));
  EXPECT_THAT(log, Not(HasSubstr("stack frame")));
  EXPECT_THAT(log, Not(HasSubstr("pch")));
  EXPECT_EQ(log.front(), 'k');
  EXPECT_EQ(log.back(), '\n');
  EXPECT_NE(log[log.size() - 2], '\n');
  EXPECT_EQ(UserFacingLog("ptxas info    : 0 bytes gmem\n"), "");
}

}  // namespace
}  // namespace kerneleval::compile
