// Roofline bounds against figures worked out by hand from the table's peaks.
#include "gpu_peaks/roofline.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string_view>

#include "gpu_peaks/peak_table.h"
#include "gtest/gtest.h"

namespace kerneleval::gpu_peaks {
namespace {

constexpr double kRelativeTolerance = 1e-12;

void ExpectRelativelyNear(double actual, double expected) {
  EXPECT_NEAR(actual, expected, kRelativeTolerance * std::abs(expected));
}

class RooflineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<v1::GpuPeakTable> table = LoadEmbeddedPeakTable();
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *std::move(table);
  }
  v1::GpuPeaks Gpu(std::string_view name) const {
    std::optional<v1::GpuPeaks> gpu = FindGpuByName(table_, name);
    EXPECT_TRUE(gpu.has_value()) << name;
    return gpu.value_or(v1::GpuPeaks());
  }
  v1::GpuPeakTable table_;
};

// Copying 1 GiB reads it once and writes it once: 2 * 2^30 bytes at 3.35e12 B/s.
TEST_F(RooflineTest, CopyOfOneGibOnH100IsBandwidthOnly) {
  const double bytes = 2.0 * 1073741824.0;
  absl::StatusOr<double> t_min =
      RooflineMinSeconds(Gpu("H100 SXM"), v1::COMPUTE_TYPE_UNSPECIFIED, 0.0, bytes);
  ASSERT_TRUE(t_min.ok()) << t_min.status();
  ExpectRelativelyNear(*t_min, 6.410398949253731e-04);  // = 2147483648 / 3.35e12
  ExpectRelativelyNear(*t_min, bytes / 3.35e12);
}

// A 4096^3 fp32 GEMM: 2 * 4096^3 FLOP on CUDA cores at 67e12 FLOP/s takes 2.05 ms, while
// reading A and B and writing C (3 * 4096^2 * 4 bytes) takes 60 us: compute-bound.
TEST_F(RooflineTest, Fp32GemmOnH100IsComputeBound) {
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;  // 137438953472
  const double bytes = 3.0 * 4096.0 * 4096.0 * 4.0;     // 201326592
  absl::StatusOr<double> t_min =
      RooflineMinSeconds(Gpu("H100 SXM"), v1::COMPUTE_TYPE_FP32, flops, bytes);
  ASSERT_TRUE(t_min.ok()) << t_min.status();
  ExpectRelativelyNear(*t_min, 2.051327663761194e-03);  // = 137438953472 / 67e12
  EXPECT_GT(*t_min, 30 * (bytes / 3.35e12));
}

// The floor of that GEMM: a 3xTF32 kernel (CUTLASS's split, fp32-accurate) runs on TF32
// tensor cores at 494.7e12 / 3 = 164.9e12 FLOP/s, so 0.83 ms is possible where the FP32
// roofline says 2.05 ms. A V100 has no TF32 tensor cores: its floor is its FP32 roofline.
TEST_F(RooflineTest, TheFloorOfAnFp32GemmAllowsThreeTf32Passes) {
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  const double bytes = 3.0 * 4096.0 * 4096.0 * 4.0;
  absl::StatusOr<double> floor =
      RooflineFloorSeconds(Gpu("H100 SXM"), v1::COMPUTE_TYPE_FP32, flops, bytes);
  ASSERT_TRUE(floor.ok()) << floor.status();
  ExpectRelativelyNear(*floor, flops / (494.7e12 / 3.0));  // 0.8335 ms
  absl::StatusOr<double> v100_floor =
      RooflineFloorSeconds(Gpu("V100 SXM2 16GB"), v1::COMPUTE_TYPE_FP32, flops, bytes);
  absl::StatusOr<double> v100_min =
      RooflineMinSeconds(Gpu("V100 SXM2 16GB"), v1::COMPUTE_TYPE_FP32, flops, bytes);
  ASSERT_TRUE(v100_floor.ok() && v100_min.ok());
  ExpectRelativelyNear(*v100_floor, *v100_min);
}

// FP64 on FP64 tensor cores (67e12 on an H100, twice the CUDA cores' 34e12), FP16 on
// FP16 tensor cores; a tensor-core type and a copy keep their roofline.
TEST_F(RooflineTest, TheFastestAccuratePeakPerComputeType) {
  const v1::GpuPeaks h100 = Gpu("H100 SXM");
  EXPECT_EQ(FastestAccuratePeakFlopsPerSecond(h100, v1::COMPUTE_TYPE_FP64), 67e12);
  EXPECT_EQ(FastestAccuratePeakFlopsPerSecond(h100, v1::COMPUTE_TYPE_FP32), 494.7e12 / 3.0);
  EXPECT_EQ(FastestAccuratePeakFlopsPerSecond(h100, v1::COMPUTE_TYPE_FP16), 989.4e12);
  EXPECT_EQ(FastestAccuratePeakFlopsPerSecond(h100, v1::COMPUTE_TYPE_BF16_TC), 989.4e12);
  EXPECT_EQ(FastestAccuratePeakFlopsPerSecond(h100, v1::COMPUTE_TYPE_UNSPECIFIED), std::nullopt);
  const double bytes = 2.0 * 1073741824.0;
  absl::StatusOr<double> copy =
      RooflineFloorSeconds(h100, v1::COMPUTE_TYPE_UNSPECIFIED, 0.0, bytes);
  ASSERT_TRUE(copy.ok()) << copy.status();
  ExpectRelativelyNear(*copy, bytes / 3.35e12);
}

// The same GEMM in bf16 on tensor cores: 989.4e12 FLOP/s dense, not the 1979 with sparsity.
TEST_F(RooflineTest, Bf16GemmUsesTheDenseTensorPeak) {
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  const double bytes = 3.0 * 4096.0 * 4096.0 * 2.0;
  absl::StatusOr<double> t_min =
      RooflineMinSeconds(Gpu("H100 SXM"), v1::COMPUTE_TYPE_BF16_TC, flops, bytes);
  ASSERT_TRUE(t_min.ok()) << t_min.status();
  ExpectRelativelyNear(*t_min, flops / 989.4e12);
}

// A bf16 GEMV 8192 x 8192: the matrix is read once (134 MB), 2 FLOP per element. Bandwidth
// dominates by ~300x, so the answer is bytes / bandwidth.
TEST_F(RooflineTest, GemvOnH100IsBandwidthBound) {
  const double flops = 2.0 * 8192.0 * 8192.0;                       // 134217728
  const double bytes = 8192.0 * 8192.0 * 2.0 + 2.0 * 8192.0 * 2.0;  // 134250496
  absl::StatusOr<double> t_min =
      RooflineMinSeconds(Gpu("H100 SXM"), v1::COMPUTE_TYPE_BF16_TC, flops, bytes);
  ASSERT_TRUE(t_min.ok()) << t_min.status();
  ExpectRelativelyNear(*t_min, 4.0074774925373134e-05);  // = 134250496 / 3.35e12
}

// fp32 softmax over 4096 rows of 8192 on an A100 SXM4 80GB: read and write 4 bytes per
// element at 2039e9 B/s, ~5 FLOP per element at 19.5e12 FLOP/s.
TEST_F(RooflineTest, SoftmaxOnA100IsBandwidthBound) {
  const double elements = 4096.0 * 8192.0;
  absl::StatusOr<double> t_min = RooflineMinSeconds(Gpu("A100 SXM4 80GB"), v1::COMPUTE_TYPE_FP32,
                                                    5.0 * elements, 8.0 * elements);
  ASSERT_TRUE(t_min.ok()) << t_min.status();
  ExpectRelativelyNear(*t_min, 1.3165054242275626e-04);  // = 268435456 / 2039e9
}

TEST_F(RooflineTest, MissingPeakMeansNoRoofline) {
  // The A100 has no FP8 tensor cores; the V100 no BF16.
  EXPECT_EQ(
      RooflineMinSeconds(Gpu("A100 SXM4 40GB"), v1::COMPUTE_TYPE_FP8_TC, 1e9, 1e6).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(
      RooflineMinSeconds(Gpu("V100 SXM2 16GB"), v1::COMPUTE_TYPE_BF16_TC, 1e9, 1e6).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(
      RooflineMinSeconds(Gpu("H100 SXM"), v1::COMPUTE_TYPE_UNSPECIFIED, 1e9, 1e6).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_FALSE(PeakFlopsPerSecond(Gpu("A100 SXM4 40GB"), v1::COMPUTE_TYPE_FP8_TC).has_value());
  EXPECT_EQ(PeakFlopsPerSecond(Gpu("H200"), v1::COMPUTE_TYPE_FP8_TC), 1978.9e12);
}

TEST_F(RooflineTest, NoWorkMeansZero) {
  absl::StatusOr<double> t_min = RooflineMinSeconds(Gpu("L4"), v1::COMPUTE_TYPE_FP8_TC, 0.0, 0.0);
  ASSERT_TRUE(t_min.ok());
  EXPECT_EQ(*t_min, 0.0);
}

TEST_F(RooflineTest, RejectsNegativeOrNonFiniteWork) {
  const v1::GpuPeaks gpu = Gpu("H100 SXM");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (const auto& [flops, bytes] :
       {std::pair{-1.0, 1.0}, std::pair{1.0, -1.0}, std::pair{nan, 1.0}, std::pair{1.0, nan},
        std::pair{inf, 1.0}, std::pair{1.0, inf}}) {
    EXPECT_EQ(RooflineMinSeconds(gpu, v1::COMPUTE_TYPE_FP32, flops, bytes).status().code(),
              absl::StatusCode::kInvalidArgument)
        << flops << " " << bytes;
  }
}

TEST(RooflineWithoutTable, GpuWithoutBandwidthIsAPreconditionFailure) {
  v1::GpuPeaks gpu;
  gpu.set_name("unvalidated");
  EXPECT_EQ(RooflineMinSeconds(gpu, v1::COMPUTE_TYPE_FP32, 0.0, 1.0).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RooflineFraction, IsMinOverMeasured) {
  absl::StatusOr<double> half = RooflineFraction(1e-3, 2e-3);
  ASSERT_TRUE(half.ok());
  EXPECT_DOUBLE_EQ(*half, 0.5);
  // Faster than the roofline is returned as is (> 1): the caller flags it.
  absl::StatusOr<double> too_fast = RooflineFraction(2e-3, 1e-3);
  ASSERT_TRUE(too_fast.ok());
  EXPECT_DOUBLE_EQ(*too_fast, 2.0);
  EXPECT_EQ(*RooflineFraction(0.0, 1e-3), 0.0);
}

TEST(RooflineFraction, RejectsBadTimes) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(RooflineFraction(1e-3, 0.0).ok());
  EXPECT_FALSE(RooflineFraction(1e-3, -1e-3).ok());
  EXPECT_FALSE(RooflineFraction(1e-3, nan).ok());
  EXPECT_FALSE(RooflineFraction(-1e-3, 1e-3).ok());
  EXPECT_FALSE(RooflineFraction(nan, 1e-3).ok());
  EXPECT_EQ(RooflineFraction(1e-3, 0.0).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kerneleval::gpu_peaks
