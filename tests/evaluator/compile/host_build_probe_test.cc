#include "evaluator/compile/host_build_probe.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "evaluator/compile/options.h"
#include "evaluator/compile/toolkit.h"

namespace kerneleval::compile {
namespace {

// The installed toolkit, without precompiled headers (as the probe runs).
const NvrtcSettings& Settings() {
  static const NvrtcSettings* const settings = [] {
    absl::StatusOr<ToolkitPaths> toolkit = FindToolkit();
    EXPECT_TRUE(toolkit.ok()) << toolkit.status();
    return new NvrtcSettings{.toolkit = toolkit.ok() ? *toolkit : ToolkitPaths{}, .pch_dir = ""};
  }();
  return *settings;
}

class HostBuildProbeTest : public ::testing::Test {
 protected:
  static v1::HostBuildProbe Probe(const std::string& source,
                                  const std::vector<std::string>& options = {},
                                  const std::string& arch = "sm_90") {
    absl::StatusOr<std::vector<std::string>> checked = CheckUserOptions(options);
    EXPECT_TRUE(checked.ok()) << checked.status();
    absl::StatusOr<v1::HostBuildProbe> probe = ProbeHostBuild(
        source, checked.ok() ? *checked : std::vector<std::string>{}, arch, Settings());
    EXPECT_TRUE(probe.ok()) << probe.status();
    return probe.ok() ? *probe : v1::HostBuildProbe();
  }

  static std::string Macro(const v1::HostBuildProbe& probe, const std::string& name) {
    auto it = probe.predefined_macros().find(name);
    return it == probe.predefined_macros().end() ? "<undefined>" : it->second;
  }

  static std::vector<uint32_t> Taken(const v1::HostBuildProbe& probe) {
    return {probe.branches_taken().begin(), probe.branches_taken().end()};
  }
};

constexpr char kKernel[] = "__global__ void k(float* x) { x[0] = 1.0f; }\n";

TEST_F(HostBuildProbeTest, PredefinedMacrosAreNvrtcsForTheOptions) {
  const v1::HostBuildProbe plain = Probe(kKernel, {"-DTILE=4"});
  EXPECT_TRUE(plain.error().empty()) << plain.error();
  const std::string major = NvrtcVersionString().substr(0, NvrtcVersionString().find('.'));
  EXPECT_EQ(Macro(plain, "__CUDACC_VER_MAJOR__"), major);
  EXPECT_EQ(Macro(plain, "__CUDACC_RTC__"), "1");
  EXPECT_EQ(Macro(plain, "__CUDA_ARCH__"), "900");
  EXPECT_EQ(Macro(plain, "__cplusplus"), "202002L");  // kerneleval's default
  EXPECT_EQ(Macro(plain, "__USE_FAST_MATH__"), "0");
  EXPECT_EQ(Macro(plain, "M_PI"), "3.14159265358979323846");  // the prelude's
  // The host compiler's own, and the submission's -D, are not NVRTC's.
  for (const char* name : {"__GNUC__", "__linux__", "__x86_64__", "__OPTIMIZE__", "TILE"}) {
    EXPECT_EQ(Macro(plain, name), "<undefined>") << name;
  }
  EXPECT_TRUE(plain.branches_taken().empty());

  const v1::HostBuildProbe other = Probe(kKernel, {"--std=c++17", "--use_fast_math"}, "sm_80");
  EXPECT_EQ(Macro(other, "__cplusplus"), "201703L");
  EXPECT_EQ(Macro(other, "__USE_FAST_MATH__"), "1");
  EXPECT_EQ(Macro(other, "__CUDA_ARCH__"), "800");
}

TEST_F(HostBuildProbeTest, BranchesTakenAreTheOnesNvrtcsPreprocessorEntered) {
  const std::string source = R"(#if __has_include(<unistd.h>)
__device__ int host_only;
#else
__device__ int nvrtc;
#endif
#ifdef __CUDACC_VER_MAJOR__
#elif defined(__GNUC__)
#endif
#if __LINE__ == 9
#endif
#ifdef TILE
#pragma message("kerneleval_branch_0000000000000000:0")
#endif
)";
  EXPECT_EQ(Probe(source).error(), "");
  // 0 and 3 skipped; __LINE__ is the source's; -D counts.
  EXPECT_EQ(Taken(Probe(source, {"-DTILE=4"})), (std::vector<uint32_t>{1, 2, 4, 5}));
  EXPECT_EQ(Taken(Probe(source)), (std::vector<uint32_t>{1, 2, 4}));
}

// Every macro NVRTC predefines is probed: the names in libnvrtc's text that
// NVRTC defines, less nv/target's _NV_* and the per-compile ones, are all in
// NvrtcPredefinedMacroNames() (a new toolkit's would be missing).
TEST_F(HostBuildProbeTest, TheNameListHasEveryMacroNvrtcPredefines) {
  std::set<std::string> tokens;
  namespace fs = std::filesystem;
  int libraries = 0;
  for (const auto& entry : fs::directory_iterator(Settings().toolkit.library_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("libnvrtc", 0) != 0 || name.find(".so") == std::string::npos ||
        fs::is_symlink(entry.path())) {
      continue;
    }
    ++libraries;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t i = 0; i + 2 < bytes.size(); ++i) {
      if (bytes[i] != '_' || bytes[i + 1] != '_' ||
          (i > 0 && (std::isalnum(bytes[i - 1]) || bytes[i - 1] == '_'))) {
        continue;
      }
      size_t end = i;
      while (end < bytes.size() &&
             (std::isalnum(static_cast<unsigned char>(bytes[end])) || bytes[end] == '_')) {
        ++end;
      }
      if (end - i > 2 && end - i < 64) tokens.insert(bytes.substr(i, end - i));
      i = end;
    }
  }
  ASSERT_GT(libraries, 0) << Settings().toolkit.library_dir;
  const std::set<std::string> skipped = {
      "__VA_ARGS__",     "__VA_OPT__", "__has_include", "__has_include_next",
      "__is_identifier", "__LINE__",   "__FILE__",      "__BASE_FILE__",
      "__DATE__",        "__TIME__",   "__TIMESTAMP__", "__INCLUDE_LEVEL__",
      "__COUNTER__"};
  std::vector<std::string> names;
  std::string battery;
  for (const std::string& token : tokens) {
    if (skipped.count(token) != 0) continue;
    absl::StrAppend(&battery, "#ifdef ", token, "\n__device__ char kerneleval_defined_",
                    names.size(), "[] = \"\";\n#endif\n");
    names.push_back(token);
  }
  absl::StatusOr<v1::CompileResult> compiled =
      CompileWithNvrtc(battery, {}, "compute_90", Settings());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_TRUE(compiled->success()) << compiled->log().substr(0, 2000);
  const std::vector<absl::string_view>& listed = NvrtcPredefinedMacroNames();
  const std::set<std::string> known(listed.begin(), listed.end());
  int defined = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (compiled->ptx().find(absl::StrCat("kerneleval_defined_", i, "[")) == std::string::npos) {
      continue;
    }
    ++defined;
    EXPECT_EQ(known.count(names[i]), 1u) << names[i] << " is predefined by NVRTC, not listed";
  }
  EXPECT_GT(defined, 100);
}

}  // namespace
}  // namespace kerneleval::compile
