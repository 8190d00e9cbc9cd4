// Parsing of ptxas -v lines, PTX entries, demangled names and the source's
// kernel declarations (CUBIN parsing is checked on real NVRTC output in
// nvrtc_compiler_test.cc).
#include "evaluator/compile/kernel_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kerneleval::compile {
namespace {

using ::testing::ElementsAre;

TEST(PtxasInfoTest, AttributesFiguresToTheRightEntry) {
  const std::map<std::string, PtxasUsage> usage = ParsePtxasInfo(
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for _Z6helperv\n"
      "ptxas         .     32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Compiling entry function '_Z1aPf' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1aPf\n"
      "ptxas         .     48 bytes stack frame, 44 bytes spill stores, 40 bytes spill loads\n"
      "ptxas info    : Used 16 registers, used 1 barriers, 4000 bytes smem, 380 bytes cmem[0]\n"
      "ptxas info    : Compile time = 1.5 ms\n"
      "ptxas info    : Compiling entry function 'b' for 'sm_90'\n"
      "ptxas info    : Function properties for b\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n");
  ASSERT_EQ(usage.size(), 2u);  // the device function is not an entry
  const PtxasUsage& a = usage.at("_Z1aPf");
  EXPECT_EQ(a.registers, 16u);
  EXPECT_EQ(a.stack_frame_bytes, 48u);
  EXPECT_EQ(a.spill_store_bytes, 44u);
  EXPECT_EQ(a.spill_load_bytes, 40u);
  EXPECT_EQ(a.shared_bytes, 4000u);
  EXPECT_EQ(a.constant0_bytes, 380u);
  EXPECT_EQ(usage.at("b").registers, 8u);
  EXPECT_EQ(usage.at("b").shared_bytes, 0u);
}

TEST(PtxEntriesTest, ParametersLayoutAndLaunchBounds) {
  const std::vector<PtxEntry> entries = ParsePtxEntries(
      ".visible .entry add(\n"
      "\t.param .u64 .ptr .global .align 4 add_param_0,\n"
      "\t.param .u32 add_param_1,\n"
      "\t.param .align 8 .b8 add_param_2[24],\n"
      "\t.param .f32 add_param_3\n"
      ")\n"
      ".maxntid 256, 1, 1\n"
      "{\n ret;\n}\n"
      ".weak .entry _Z2tkIfEvPT_(\n\t.param .u64 _Z2tkIfEvPT__param_0\n)\n{\n ret;\n}\n"
      ".visible .entry empty()\n.reqntid 32, 4\n{\n ret;\n}\n");
  ASSERT_EQ(entries.size(), 3u);
  const PtxEntry& add = entries[0];
  EXPECT_EQ(add.name, "add");
  ASSERT_EQ(add.params.size(), 4u);
  EXPECT_TRUE(add.params[0].is_pointer);
  EXPECT_EQ(add.params[0].size_bytes, 8u);
  EXPECT_EQ(add.params[1].offset_bytes, 8u);
  EXPECT_EQ(add.params[2].size_bytes, 24u);
  EXPECT_EQ(add.params[2].offset_bytes, 16u);
  EXPECT_EQ(add.params[2].ptx_type, ".b8[24]");
  EXPECT_EQ(add.params[3].offset_bytes, 40u);
  EXPECT_EQ(add.max_threads, 256u);
  EXPECT_EQ(entries[1].name, "_Z2tkIfEvPT_");
  EXPECT_EQ(entries[1].max_threads, 0u);
  EXPECT_TRUE(entries[2].params.empty());
  EXPECT_EQ(entries[2].max_threads, 128u);
}

TEST(PtxEntriesTest, DeviceMallocIsTheExternDeclarationOnly) {
  EXPECT_TRUE(PtxCallsDeviceMalloc(".extern .func  (.param .b64 func_retval0) malloc\n(\n"));
  EXPECT_TRUE(PtxCallsDeviceMalloc(".extern .func malloc\n"));
  EXPECT_TRUE(PtxCallsDeviceMalloc(
      ".extern .func  (.param .b64 func_retval0) __cuda_syscall_aligned_malloc\n"));
  EXPECT_FALSE(PtxCallsDeviceMalloc(".visible .entry malloc_kernel(\n"));
  EXPECT_FALSE(PtxCallsDeviceMalloc(".extern .func  (.param .b32 func_retval0) vprintf\n"));
  EXPECT_FALSE(PtxCallsDeviceMalloc(".extern .func  (.param .b64 func_retval0) mallocx\n"));
}

TEST(PtxEntriesTest, UnresolvedExternsAreThoseCudaDoesNotDefine) {
  // As NVRTC writes them (compute_90, CUDA 13): CUDA's own are left out.
  const std::string ptx =
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".extern .func free\n(\n\t.param .b64 free_param_0\n)\n;\n"
      ".extern .func  (.param .b32 func_retval0) vprintf\n(\n"
      "\t.param .b64 vprintf_param_0,\n\t.param .b64 vprintf_param_1\n)\n;\n"
      ".extern .func  (.param .b64 func_retval0) __cuda_syscall_aligned_malloc\n(\n);\n"
      ".extern .func  (.param .b64 func_retval0) malloc\n(\n);\n"
      ".extern .func __assertfail\n(\n);\n"
      ".extern .func  (.param .b32 func_retval0) getpid\n()\n;\n"
      ".extern .func  (.param .b64 func_retval0) mmap\n(\n);\n"
      ".extern .func _Z6helperPf\n(\n);\n"
      ".extern .shared .align 16 .b8 dynamic_smem[];\n"
      ".extern .global .align 8 .u64 environ;\n"
      ".extern .const .align 4 .b8 table[64];\n"
      ".global .align 4 .u32 counter;\n"
      ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n"
      "\tcall.uni (retval0), getpid, ();\n}\n";
  EXPECT_THAT(PtxUnresolvedExterns(ptx),
              ::testing::ElementsAre("getpid", "mmap", "_Z6helperPf", "environ", "table"));
  EXPECT_TRUE(
      PtxUnresolvedExterns(".extern .func free\n(\n);\n.visible .entry k()\n{\n}\n").empty());
}

TEST(PtxEntriesTest, DeviceGlobalsAreTheModuleScopeGlobalDefinitions) {
  const std::string ptx =
      ".version 9.0\n.target sm_90\n.address_size 64\n"
      ".extern .global .align 4 .u32 defined_elsewhere;\n"
      ".global .align 4 .b8 cache[4096];\n"
      ".global .align 4 .u32 counter = 5;\n"
      ".global .attribute(.managed) .align 4 .u32 managed_v;\n"
      ".visible .global .align 8 .b8 _ZN2ns3nsvE[24];\n"
      "  .global .v2 .f32 pair;\n"
      ".global .texref old_texture;\n"
      ".global .align 1 .b8 $str[4] = {104, 105, 10, 0};\n"
      ".const .align 4 .b8 cst[16];\n"
      ".visible .entry k(\n.param .u64 k_param_0\n)\n{\n"
      "\tcvta.to.global.u64 %rd2, %rd1;\n"
      "\tld.global.u32 %r8, [counter];\n}\n";
  EXPECT_THAT(PtxDeviceGlobals(ptx),
              ::testing::ElementsAre("cache", "counter", "managed_v", "_ZN2ns3nsvE", "pair"));
  EXPECT_TRUE(PtxDeviceGlobals(".visible .entry k()\n{\n\tret;\n}\n").empty());
}

TEST(NamesTest, DemangleAndParameterTypes) {
  EXPECT_EQ(Demangle("_Z3addPKfPfi"), "add(float const*, float*, int)");
  EXPECT_EQ(Demangle("add"), "add");
  EXPECT_THAT(DemangledParameterTypes("ns::k<float, 4>(float const*, S<int, 2>, int)"),
              ElementsAre("float const*", "S<int, 2>", "int"));
  EXPECT_TRUE(DemangledParameterTypes("f()").empty());
  EXPECT_TRUE(DemangledParameterTypes("add").empty());
}

TEST(SourceParamsTest, FindsDeclarationsPastAttributesAndComments) {
  const char* source =
      "// __global__ void add(int fake) in a comment\n"
      "extern \"C\" __global__ void __launch_bounds__(256, 2)\n"
      "add(const float* __restrict__ a, float *b, int n, unsigned count,\n"
      "    const __half, float v[4], int with_default = 3) {}\n"
      "template <typename T> __global__ void tk(T* x, T y) {}\n"
      "__global__ void none(void) {}\n";
  const std::vector<std::vector<SourceParam>> add = SourceKernelParameters(source, "add");
  ASSERT_EQ(add.size(), 1u);
  ASSERT_EQ(add[0].size(), 7u);
  EXPECT_EQ(add[0][0].type, "const float* __restrict__");
  EXPECT_EQ(add[0][0].name, "a");
  EXPECT_EQ(add[0][1].type, "float *");
  EXPECT_EQ(add[0][1].name, "b");
  EXPECT_EQ(add[0][3].type, "unsigned");
  EXPECT_EQ(add[0][3].name, "count");
  EXPECT_EQ(add[0][4].type, "const __half");
  EXPECT_EQ(add[0][4].name, "");
  EXPECT_EQ(add[0][5].type, "float[4]");
  EXPECT_EQ(add[0][5].name, "v");
  EXPECT_EQ(add[0][6].name, "with_default");
  const auto tk = SourceKernelParameters(source, "tk");
  ASSERT_EQ(tk.size(), 1u);
  EXPECT_EQ(tk[0][0].name, "x");
  EXPECT_EQ(SourceKernelParameters(source, "none").at(0).size(), 0u);
  EXPECT_TRUE(SourceKernelParameters(source, "missing").empty());
}

TEST(CubinTest, RefusesMalformedInputWithoutReadingOutOfBounds) {
  EXPECT_FALSE(ParseCubin("").ok());
  EXPECT_FALSE(
      ParseCubin("not an elf file at all, but long enough to have a header..........").ok());
  std::string truncated =
      "\x7f"
      "ELF";
  truncated += std::string(60, '\x02');
  truncated[4] = 2;
  truncated[5] = 1;
  EXPECT_FALSE(ParseCubin(truncated).ok());
}

}  // namespace
}  // namespace kerneleval::compile
