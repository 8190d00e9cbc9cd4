// The embedded peak table: it parses, validates, and holds every required GPU with the
// figures of its vendor documents (gpu_peaks/gpu_peaks.textproto). Also override files and
// the validation errors they can raise.
#include "gpu_peaks/peak_table.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kerneleval::gpu_peaks {
namespace {

using ::testing::HasSubstr;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;  // [bytes]
constexpr double kMiB = 1024.0 * 1024.0;           // [bytes]
constexpr double kT = 1e12;                        // tera: TB/s and TFLOP/s

// What the vendor documents say for one GPU (dense figures), written out independently of
// the textproto so that a slip in either shows up here.
struct ExpectedGpu {
  std::string_view name;
  std::string_view driver_name;
  int cc_major;
  int cc_minor;
  double memory_gib;
  double bandwidth_tb_per_s;
  int sm_count;
  double l2_mib;
  std::map<v1::ComputeType, double> tflops;  // every peak the GPU has, [TFLOP/s]
};

const std::vector<ExpectedGpu>& RequiredGpus() {
  using enum v1::ComputeType;
  static const auto* const kGpus = new std::vector<ExpectedGpu>{
      {"V100 SXM2 16GB",
       "Tesla V100-SXM2-16GB",
       7,
       0,
       16,
       0.9,
       80,
       6,
       {{COMPUTE_TYPE_FP64, 7.8},
        {COMPUTE_TYPE_FP32, 15.7},
        {COMPUTE_TYPE_FP16, 31.4},
        {COMPUTE_TYPE_FP16_TC, 125}}},
      {"V100 SXM2 32GB",
       "Tesla V100-SXM2-32GB",
       7,
       0,
       32,
       0.9,
       80,
       6,
       {{COMPUTE_TYPE_FP64, 7.8},
        {COMPUTE_TYPE_FP32, 15.7},
        {COMPUTE_TYPE_FP16, 31.4},
        {COMPUTE_TYPE_FP16_TC, 125}}},
      {"T4",
       "Tesla T4",
       7,
       5,
       16,
       0.32,
       40,
       4,
       {{COMPUTE_TYPE_FP64, 8.1 / 32},
        {COMPUTE_TYPE_FP32, 8.1},
        {COMPUTE_TYPE_FP16, 16.2},
        {COMPUTE_TYPE_FP16_TC, 65},
        {COMPUTE_TYPE_INT8_TC, 130}}},
      {"A10G",
       "NVIDIA A10G",
       8,
       6,
       24,
       0.6,
       80,
       6,
       {{COMPUTE_TYPE_FP64, 35.0 / 64},
        {COMPUTE_TYPE_FP32, 35},
        {COMPUTE_TYPE_FP16, 35},
        {COMPUTE_TYPE_TF32_TC, 35},
        {COMPUTE_TYPE_FP16_TC, 70},
        {COMPUTE_TYPE_BF16_TC, 70},
        {COMPUTE_TYPE_INT8_TC, 140}}},
      {"A100 SXM4 40GB",
       "NVIDIA A100-SXM4-40GB",
       8,
       0,
       40,
       1.555,
       108,
       40,
       {{COMPUTE_TYPE_FP64, 9.7},
        {COMPUTE_TYPE_FP64_TC, 19.5},
        {COMPUTE_TYPE_FP32, 19.5},
        {COMPUTE_TYPE_FP16, 78},
        {COMPUTE_TYPE_TF32_TC, 156},
        {COMPUTE_TYPE_FP16_TC, 312},
        {COMPUTE_TYPE_BF16_TC, 312},
        {COMPUTE_TYPE_INT8_TC, 624}}},
      {"A100 SXM4 80GB",
       "NVIDIA A100-SXM4-80GB",
       8,
       0,
       80,
       2.039,
       108,
       40,
       {{COMPUTE_TYPE_FP64, 9.7},
        {COMPUTE_TYPE_FP64_TC, 19.5},
        {COMPUTE_TYPE_FP32, 19.5},
        {COMPUTE_TYPE_FP16, 78},
        {COMPUTE_TYPE_TF32_TC, 156},
        {COMPUTE_TYPE_FP16_TC, 312},
        {COMPUTE_TYPE_BF16_TC, 312},
        {COMPUTE_TYPE_INT8_TC, 624}}},
      {"A100 PCIe 80GB",
       "NVIDIA A100 80GB PCIe",
       8,
       0,
       80,
       1.935,
       108,
       40,
       {{COMPUTE_TYPE_FP64, 9.7},
        {COMPUTE_TYPE_FP64_TC, 19.5},
        {COMPUTE_TYPE_FP32, 19.5},
        {COMPUTE_TYPE_FP16, 78},
        {COMPUTE_TYPE_TF32_TC, 156},
        {COMPUTE_TYPE_FP16_TC, 312},
        {COMPUTE_TYPE_BF16_TC, 312},
        {COMPUTE_TYPE_INT8_TC, 624}}},
      {"RTX 3090",
       "NVIDIA GeForce RTX 3090",
       8,
       6,
       24,
       0.936,
       82,
       6,
       {{COMPUTE_TYPE_FP64, 35.6 / 64},
        {COMPUTE_TYPE_FP32, 35.6},
        {COMPUTE_TYPE_FP16, 35.6},
        {COMPUTE_TYPE_TF32_TC, 35.6},
        {COMPUTE_TYPE_FP16_TC, 71},
        {COMPUTE_TYPE_BF16_TC, 71},
        {COMPUTE_TYPE_INT8_TC, 284}}},
      {"L4",
       "NVIDIA L4",
       8,
       9,
       24,
       0.3,
       58,
       48,
       {{COMPUTE_TYPE_FP64, 30.3 / 64},
        {COMPUTE_TYPE_FP32, 30.3},
        {COMPUTE_TYPE_FP16, 30.3},
        {COMPUTE_TYPE_TF32_TC, 120.0 / 2},
        {COMPUTE_TYPE_FP16_TC, 242.0 / 2},
        {COMPUTE_TYPE_BF16_TC, 242.0 / 2},
        {COMPUTE_TYPE_FP8_TC, 485.0 / 2},
        {COMPUTE_TYPE_INT8_TC, 485.0 / 2}}},
      {"L40S",
       "NVIDIA L40S",
       8,
       9,
       48,
       0.864,
       142,
       96,
       {{COMPUTE_TYPE_FP64, 91.6 / 64},
        {COMPUTE_TYPE_FP32, 91.6},
        {COMPUTE_TYPE_FP16, 91.6},
        {COMPUTE_TYPE_TF32_TC, 183},
        {COMPUTE_TYPE_FP16_TC, 362.05},
        {COMPUTE_TYPE_BF16_TC, 362.05},
        {COMPUTE_TYPE_FP8_TC, 733},
        {COMPUTE_TYPE_INT8_TC, 733}}},
      {"RTX 4090",
       "NVIDIA GeForce RTX 4090",
       8,
       9,
       24,
       1.008,
       128,
       72,
       {{COMPUTE_TYPE_FP64, 82.6 / 64},
        {COMPUTE_TYPE_FP32, 82.6},
        {COMPUTE_TYPE_FP16, 82.6},
        {COMPUTE_TYPE_TF32_TC, 82.6},
        {COMPUTE_TYPE_FP16_TC, 165.2},
        {COMPUTE_TYPE_BF16_TC, 165.2},
        {COMPUTE_TYPE_FP8_TC, 330.3},
        {COMPUTE_TYPE_INT8_TC, 660.6}}},
      {"H100 SXM",
       "NVIDIA H100 80GB HBM3",
       9,
       0,
       80,
       3.35,
       132,
       50,
       {{COMPUTE_TYPE_FP64, 34},
        {COMPUTE_TYPE_FP64_TC, 67},
        {COMPUTE_TYPE_FP32, 67},
        {COMPUTE_TYPE_FP16, 133.8},
        {COMPUTE_TYPE_TF32_TC, 494.7},
        {COMPUTE_TYPE_FP16_TC, 989.4},
        {COMPUTE_TYPE_BF16_TC, 989.4},
        {COMPUTE_TYPE_FP8_TC, 1978.9},
        {COMPUTE_TYPE_INT8_TC, 1978.9}}},
      {"H100 PCIe",
       "NVIDIA H100 PCIe",
       9,
       0,
       80,
       2.0,
       114,
       50,
       {{COMPUTE_TYPE_FP64, 26},
        {COMPUTE_TYPE_FP64_TC, 51},
        {COMPUTE_TYPE_FP32, 51},
        {COMPUTE_TYPE_FP16, 102.4},
        {COMPUTE_TYPE_TF32_TC, 378},
        {COMPUTE_TYPE_FP16_TC, 756},
        {COMPUTE_TYPE_BF16_TC, 756},
        {COMPUTE_TYPE_FP8_TC, 1513},
        {COMPUTE_TYPE_INT8_TC, 1513}}},
      {"H100 NVL",
       "NVIDIA H100 NVL",
       9,
       0,
       94,
       3.9,
       132,
       50,
       {{COMPUTE_TYPE_FP64, 30},
        {COMPUTE_TYPE_FP64_TC, 60},
        {COMPUTE_TYPE_FP32, 60},
        {COMPUTE_TYPE_FP16, 120},
        {COMPUTE_TYPE_TF32_TC, 835.0 / 2},
        {COMPUTE_TYPE_FP16_TC, 1671.0 / 2},
        {COMPUTE_TYPE_BF16_TC, 1671.0 / 2},
        {COMPUTE_TYPE_FP8_TC, 3341.0 / 2},
        {COMPUTE_TYPE_INT8_TC, 3341.0 / 2}}},
      {"H200",
       "NVIDIA H200",
       9,
       0,
       141,
       4.8,
       132,
       60,  // what an H200 reports (the H100 SXM's 50 was assumed before)
       {{COMPUTE_TYPE_FP64, 34},
        {COMPUTE_TYPE_FP64_TC, 67},
        {COMPUTE_TYPE_FP32, 67},
        {COMPUTE_TYPE_FP16, 133.8},
        {COMPUTE_TYPE_TF32_TC, 494.7},
        {COMPUTE_TYPE_FP16_TC, 989.4},
        {COMPUTE_TYPE_BF16_TC, 989.4},
        {COMPUTE_TYPE_FP8_TC, 1978.9},
        {COMPUTE_TYPE_INT8_TC, 1978.9}}},
      {"B200",
       "NVIDIA B200",
       10,
       0,
       180,
       7.7,
       148,
       126,
       {{COMPUTE_TYPE_FP64, 37},
        {COMPUTE_TYPE_FP64_TC, 37},
        {COMPUTE_TYPE_FP32, 75},
        {COMPUTE_TYPE_FP16, 150},
        {COMPUTE_TYPE_TF32_TC, 1125},
        {COMPUTE_TYPE_FP16_TC, 2250},
        {COMPUTE_TYPE_BF16_TC, 2250},
        {COMPUTE_TYPE_FP8_TC, 4500},
        {COMPUTE_TYPE_INT8_TC, 4500}}},
      {"GB200",
       "NVIDIA GB200",
       10,
       0,
       186,
       8.0,
       152,
       126,
       {{COMPUTE_TYPE_FP64, 40},
        {COMPUTE_TYPE_FP64_TC, 40},
        {COMPUTE_TYPE_FP32, 80},
        {COMPUTE_TYPE_FP16, 160},
        {COMPUTE_TYPE_TF32_TC, 1250},
        {COMPUTE_TYPE_FP16_TC, 2500},
        {COMPUTE_TYPE_BF16_TC, 2500},
        {COMPUTE_TYPE_FP8_TC, 5000},
        {COMPUTE_TYPE_INT8_TC, 5000}}},
      {"RTX 5090",
       "NVIDIA GeForce RTX 5090",
       12,
       0,
       32,
       1.792,
       170,
       96,
       {{COMPUTE_TYPE_FP64, 104.8 / 64},
        {COMPUTE_TYPE_FP32, 104.8},
        {COMPUTE_TYPE_FP16, 104.8},
        {COMPUTE_TYPE_TF32_TC, 104.8},
        {COMPUTE_TYPE_FP16_TC, 209.5},
        {COMPUTE_TYPE_BF16_TC, 209.5},
        {COMPUTE_TYPE_FP8_TC, 419},
        {COMPUTE_TYPE_INT8_TC, 838}}},
  };
  return *kGpus;
}

v1::GpuPeakTable EmbeddedTable() {
  absl::StatusOr<v1::GpuPeakTable> table = LoadEmbeddedPeakTable();
  EXPECT_TRUE(table.ok()) << table.status();
  return table.ok() ? *std::move(table) : v1::GpuPeakTable();
}

const v1::GpuPeaks* ByName(const v1::GpuPeakTable& table, std::string_view name) {
  for (const v1::GpuPeaks& gpu : table.gpus()) {
    if (gpu.name() == name) return &gpu;
  }
  return nullptr;
}

// Relative comparison: figures such as 0.253125e12 are not exact in binary either way.
void ExpectNear(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 1e-12 * std::abs(expected)) << what;
}

TEST(EmbeddedPeakTable, ParsesAndValidates) {
  EXPECT_FALSE(EmbeddedPeakTableText().empty());
  absl::StatusOr<v1::GpuPeakTable> table = LoadEmbeddedPeakTable();
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_TRUE(ValidatePeakTable(*table).ok());
  EXPECT_EQ(table->gpus_size(), static_cast<int>(RequiredGpus().size()));
}

TEST(EmbeddedPeakTable, HoldsEveryRequiredGpuWithItsFigures) {
  const v1::GpuPeakTable table = EmbeddedTable();
  for (const ExpectedGpu& expected : RequiredGpus()) {
    SCOPED_TRACE(std::string(expected.name));
    const v1::GpuPeaks* gpu = ByName(table, expected.name);
    ASSERT_NE(gpu, nullptr) << "missing from gpu_peaks.textproto";
    EXPECT_THAT(gpu->driver_names(), ::testing::Contains(std::string(expected.driver_name)));
    EXPECT_EQ(static_cast<int>(gpu->compute_capability_major()), expected.cc_major);
    EXPECT_EQ(static_cast<int>(gpu->compute_capability_minor()), expected.cc_minor);
    EXPECT_EQ(gpu->memory_bytes(), static_cast<std::uint64_t>(expected.memory_gib * kGiB));
    ExpectNear(gpu->memory_bandwidth_bytes_per_second(), expected.bandwidth_tb_per_s * kT,
               "bandwidth");
    EXPECT_EQ(static_cast<int>(gpu->sm_count()), expected.sm_count);
    EXPECT_EQ(gpu->l2_bytes(), static_cast<std::uint64_t>(expected.l2_mib * kMiB));
    EXPECT_FALSE(gpu->memory_bandwidth_source().empty());
    EXPECT_FALSE(gpu->sm_and_l2_source().empty());

    std::map<v1::ComputeType, double> actual;
    for (const v1::PeakFlops& peak : gpu->peaks()) {
      EXPECT_FALSE(peak.source().empty()) << v1::ComputeType_Name(peak.compute_type());
      actual[peak.compute_type()] = peak.flops_per_second();
    }
    ASSERT_EQ(actual.size(), expected.tflops.size()) << "a compute type is missing or extra";
    for (const auto& [type, tflops] : expected.tflops) {
      ASSERT_TRUE(actual.contains(type)) << v1::ComputeType_Name(type);
      ExpectNear(actual[type], tflops * kT, v1::ComputeType_Name(type));
    }
  }
}

// A sparse figure copied by mistake makes one tensor type 2x its siblings. Dense tensor
// rates keep fixed ratios within a GPU: TF32 is half of FP16, FP8 twice FP16 (both with fp32
// accumulate), BF16 equals FP16. The tolerance allows for datasheet rounding (L40S prints
// FP16 362.05 but FP8 733 = 2.02x); a sparse figure would be off by 100 %.
TEST(EmbeddedPeakTable, TensorRatiosShowNoSparseFigure) {
  const v1::GpuPeakTable table = EmbeddedTable();
  for (const v1::GpuPeaks& gpu : table.gpus()) {
    SCOPED_TRACE(gpu.name());
    std::map<v1::ComputeType, double> peak;
    for (const v1::PeakFlops& p : gpu.peaks()) peak[p.compute_type()] = p.flops_per_second();
    if (!peak.contains(v1::COMPUTE_TYPE_FP16_TC)) continue;
    const double fp16 = peak[v1::COMPUTE_TYPE_FP16_TC];
    if (peak.contains(v1::COMPUTE_TYPE_BF16_TC)) {
      EXPECT_DOUBLE_EQ(peak[v1::COMPUTE_TYPE_BF16_TC], fp16);
    }
    if (peak.contains(v1::COMPUTE_TYPE_TF32_TC)) {
      EXPECT_NEAR(peak[v1::COMPUTE_TYPE_TF32_TC] / fp16, 0.5, 0.015);
    }
    if (peak.contains(v1::COMPUTE_TYPE_FP8_TC)) {
      EXPECT_NEAR(peak[v1::COMPUTE_TYPE_FP8_TC] / fp16, 2.0, 0.06);
    }
    // No dense tensor rate reaches 40x the CUDA-core FP32 rate on any of these parts.
    EXPECT_LT(fp16 / peak[v1::COMPUTE_TYPE_FP32], 40.0);
  }
}

// ----------------------------------------------------------------------------------------
// Override files.

class OverrideFileTest : public ::testing::Test {
 protected:
  std::string WriteTable(std::string_view text) {
    const std::string path = ::testing::TempDir() + "/gpu_peaks_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                             ".textproto";
    std::ofstream(path) << text;
    written_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const std::string& path : written_) std::filesystem::remove(path);
  }

 private:
  std::vector<std::string> written_;
};

// One valid GPU entry; tests edit it to break one rule at a time.
std::string TestGpu(std::string_view name = "Test GPU",
                    std::string_view driver_name = "NVIDIA Test GPU",
                    std::string_view bandwidth = "1e12",
                    std::string_view fp32_source = "test datasheet (2026)") {
  std::string text = "gpus {\n  name: \"";
  text.append(name).append("\"\n  driver_names: \"").append(driver_name).append("\"\n");
  text += R"pb(compute_capability_major: 9
               compute_capability_minor: 0
               memory_bytes: 1073741824
               memory_bandwidth_source: "test datasheet (2026)"
               sm_count: 10
               l2_bytes: 1048576
               sm_and_l2_source: "test whitepaper (2026)"
  )pb";
  text.append("  memory_bandwidth_bytes_per_second: ").append(bandwidth).append("\n");
  text.append("  peaks { compute_type: COMPUTE_TYPE_FP32 flops_per_second: 1e13 source: \"")
      .append(fp32_source)
      .append("\" }\n}\n");
  return text;
}

TEST_F(OverrideFileTest, LoadsAValidFile) {
  absl::StatusOr<v1::GpuPeakTable> table =
      LoadPeakTable(WriteTable(TestGpu() + TestGpu("Other GPU", "NVIDIA Other GPU")));
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->gpus_size(), 2);
  EXPECT_EQ(table->gpus(0).name(), "Test GPU");
  EXPECT_DOUBLE_EQ(table->gpus(0).memory_bandwidth_bytes_per_second(), 1e12);
}

TEST_F(OverrideFileTest, MissingFileIsNotFound) {
  absl::StatusOr<v1::GpuPeakTable> table =
      LoadPeakTable(::testing::TempDir() + "/no_such_gpu_peaks.textproto");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(OverrideFileTest, SyntaxErrorNamesPathAndLine) {
  const std::string path = WriteTable("gpus {\n  name: \"X\"\n  sm_count: 12 13\n}\n");
  absl::StatusOr<v1::GpuPeakTable> table = LoadPeakTable(path);
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(), HasSubstr(path));
  EXPECT_THAT(table.status().message(), HasSubstr("3:"));
}

TEST_F(OverrideFileTest, UnknownFieldIsAnError) {
  const std::string text = TestGpu() + "gpus { name: \"Y\" bandwith: 3 }\n";
  EXPECT_THAT(LoadPeakTable(WriteTable(text)).status().message(), HasSubstr("bandwith"));
}

struct InvalidCase {
  std::string label;
  std::string text;
  std::string message;  // part of the expected error
};

// Keeps test names readable and stable: gtest_discover_tests (CMake < 3.28) puts the
// printed parameter into the ctest name.
void PrintTo(const InvalidCase& invalid_case, std::ostream* out) { *out << invalid_case.label; }

class InvalidTableTest : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(InvalidTableTest, IsRejectedWithAReason) {
  absl::StatusOr<v1::GpuPeakTable> table = ParsePeakTable(GetParam().text);
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(table.status().message(), HasSubstr(GetParam().message));
}

std::string Replace(std::string text, std::string_view from, std::string_view to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

INSTANTIATE_TEST_SUITE_P(
    Validation, InvalidTableTest,
    ::testing::Values(
        InvalidCase{"Empty", "", "no gpus"},
        InvalidCase{"ZeroBandwidth", TestGpu("A", "NVIDIA A", "0"), "memory_bandwidth"},
        InvalidCase{"NegativeBandwidth", TestGpu("A", "NVIDIA A", "-5e11"), "memory_bandwidth"},
        InvalidCase{"InfiniteBandwidth", TestGpu("A", "NVIDIA A", "inf"), "memory_bandwidth"},
        InvalidCase{"EmptyPeakSource", TestGpu("A", "NVIDIA A", "1e12", ""), "no source"},
        InvalidCase{"EmptyBandwidthSource",
                    Replace(TestGpu(), "memory_bandwidth_source: \"test datasheet (2026)\"", ""),
                    "memory_bandwidth_source"},
        InvalidCase{"EmptySmSource",
                    Replace(TestGpu(), "sm_and_l2_source: \"test whitepaper (2026)\"", ""),
                    "sm_and_l2_source"},
        InvalidCase{"NoFp32Peak", Replace(TestGpu(), "COMPUTE_TYPE_FP32", "COMPUTE_TYPE_FP64"),
                    "no COMPUTE_TYPE_FP32"},
        InvalidCase{"UnspecifiedComputeType",
                    Replace(TestGpu(), "peaks {",
                            "peaks { flops_per_second: 1e12 source: \"s\" }\n  peaks {"),
                    "compute_type"},
        InvalidCase{"ZeroPeak", Replace(TestGpu(), "flops_per_second: 1e13", "flops_per_second: 0"),
                    "flops_per_second"},
        InvalidCase{"ComputeTypeTwice",
                    Replace(TestGpu(), "peaks {",
                            "peaks { compute_type: COMPUTE_TYPE_FP32 flops_per_second: 2e13 "
                            "source: \"s\" }\n  peaks {"),
                    "given twice"},
        InvalidCase{"NoDriverNames", Replace(TestGpu(), "driver_names: \"NVIDIA Test GPU\"", ""),
                    "no driver_names"},
        InvalidCase{"ZeroMemory", Replace(TestGpu(), "memory_bytes: 1073741824", ""),
                    "memory_bytes"},
        InvalidCase{"NoComputeCapability", Replace(TestGpu(), "compute_capability_major: 9", ""),
                    "compute_capability_major"},
        InvalidCase{"DuplicateDriverName",
                    TestGpu("A", "NVIDIA Same") + TestGpu("B", "NVIDIA Same"), "already a name"},
        InvalidCase{"DuplicateDriverNameAfterNormalising",
                    TestGpu("A", "NVIDIA Same-GPU") + TestGpu("B", "nvidia  same gpu"),
                    "already a name"},
        InvalidCase{"DuplicateCanonicalName",
                    TestGpu("Same", "NVIDIA A") + TestGpu("Same", "NVIDIA B"), "already a name"},
        InvalidCase{"DriverNameTwiceInOneGpu",
                    Replace(TestGpu(), "driver_names: \"NVIDIA Test GPU\"",
                            "driver_names: \"NVIDIA X\" driver_names: \"NVIDIA X\""),
                    "given twice"}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) { return info.param.label; });

}  // namespace
}  // namespace kerneleval::gpu_peaks
