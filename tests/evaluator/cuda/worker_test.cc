// The parts of the CUDA worker and backend that need no GPU: poison words,
// faults, and starting the backend on a machine without a driver.
#include <gtest/gtest.h>

#include "evaluator/cuda/cuda_backend.h"
#include "evaluator/cuda/cuda_worker.h"
#include "evaluator/cuda/device.h"
#include "evaluator/cuda/keyed_mix.h"
#include "evaluator/data/poison.h"

namespace kerneleval::cuda {
namespace {

TEST(PoisonWordTest, RepeatsTheDtypesPoisonBits) {
  constexpr uint64_t kDraw = 0x0123456789ABCDEFull;
  EXPECT_EQ(PoisonWord(v1::DTYPE_F64, kDraw), data::kPoisonF64);
  EXPECT_EQ(PoisonWord(v1::DTYPE_F32, kDraw), 0x7FC0DEAD7FC0DEADull);
  EXPECT_EQ(PoisonWord(v1::DTYPE_F16, kDraw), 0x7E007E007E007E00ull);
  EXPECT_EQ(PoisonWord(v1::DTYPE_BF16, kDraw), 0x7FC07FC07FC07FC0ull);
  EXPECT_EQ(PoisonWord(v1::DTYPE_I32, kDraw), 0x89ABCDEF89ABCDEFull);
  EXPECT_EQ(PoisonWord(v1::DTYPE_I64, kDraw), 0x8123456789ABCDEFull);
  EXPECT_EQ(PoisonWord(v1::DTYPE_U8, kDraw), 0xFFFFFFFFFFFFFFFFull);
  // Filled byte by byte the way ke_fill_pattern does, the word gives exactly
  // poison.h's buffer, also for a length that is not a multiple of 8.
  for (v1::DType dtype : {v1::DTYPE_F64, v1::DTYPE_F32, v1::DTYPE_F16, v1::DTYPE_BF16,
                          v1::DTYPE_I64, v1::DTYPE_I32, v1::DTYPE_I8, v1::DTYPE_BOOL}) {
    const std::string expected = data::PoisonedBuffer(dtype, 7, kDraw);
    std::string filled(expected.size(), '\0');
    for (size_t i = 0; i < filled.size(); ++i) {
      filled[i] = static_cast<char>(PatternByte(PoisonWord(dtype, kDraw), i));
    }
    EXPECT_EQ(filled, expected) << v1::DType_Name(dtype);
  }
}

TEST(HoldReportSealTest, MatchesOnlyTheSameValuesUnderTheSameKeys) {
  const unsigned long long seal = HoldReportSeal(1'980'000, 1'000'000, 0, 0x1234, 0x5678);
  EXPECT_EQ(HoldReportSeal(1'980'000, 1'000'000, 0, 0x1234, 0x5678), seal);
  // Any value a program might rewrite, or another sample's keys: no match.
  EXPECT_NE(HoldReportSeal(495'000, 1'000'000, 0, 0x1234, 0x5678), seal);  // a quarter clock
  EXPECT_NE(HoldReportSeal(1'980'000, 999'999, 0, 0x1234, 0x5678), seal);
  EXPECT_NE(HoldReportSeal(1'980'000, 1'000'000, 1, 0x1234, 0x5678), seal);  // "late"
  EXPECT_NE(HoldReportSeal(1'980'000, 1'000'000, 0, 0x1235, 0x5678), seal);
  EXPECT_NE(HoldReportSeal(1'980'000, 1'000'000, 0, 0x1234, 0x5679), seal);
  // An all-zero report (what the worker writes before the hold) never
  // carries a valid seal by accident for these keys.
  EXPECT_NE(HoldReportSeal(0, 0, 0, 0x1234, 0x5678), 0u);
}

TEST(FaultTest, StageTravelsWithTheStatus) {
  const absl::Status fault = MakeFault("timeout", "still running");
  EXPECT_EQ(FaultStage(fault), "timeout");
  EXPECT_TRUE(IsProgramFault(fault));
  EXPECT_EQ(fault.message(), "still running");
  EXPECT_FALSE(FaultStage(absl::InternalError("x")).has_value());
  EXPECT_FALSE(IsProgramFault(absl::InvalidArgumentError("bad plan")));
  EXPECT_TRUE(IsProgramFault(CuError(CUDA_ERROR_ILLEGAL_ADDRESS, "cuStreamQuery", __FILE__, 1)));
}

TEST(DeviceTest, ArchAndDeviceInfo) {
  EXPECT_EQ(ArchName(9, 0), "sm_90");
  EXPECT_EQ(ArchName(12, 1), "sm_121");
  // Arch-specific features (wgmma on 9.0) from 9.0 on; none before.
  EXPECT_EQ(NvrtcTargetArch(9, 0), "sm_90a");
  EXPECT_EQ(NvrtcTargetArch(10, 3), "sm_103a");
  EXPECT_EQ(NvrtcTargetArch(12, 0), "sm_120a");
  EXPECT_EQ(NvrtcTargetArch(8, 9), "sm_89");
  // Binary compatibility: same major, an equal or lower minor; "a" exact;
  // "f" within its family (same major); compute_XX is PTX only.
  EXPECT_TRUE(CubinRunsOn("sm_90", 9, 0));
  EXPECT_TRUE(CubinRunsOn("sm_90a", 9, 0));
  EXPECT_TRUE(CubinRunsOn("sm_80", 8, 9));
  EXPECT_TRUE(CubinRunsOn("sm_86", 8, 9));
  EXPECT_FALSE(CubinRunsOn("sm_89", 8, 6));
  EXPECT_FALSE(CubinRunsOn("sm_80a", 8, 6));
  EXPECT_FALSE(CubinRunsOn("sm_80", 9, 0));
  EXPECT_FALSE(CubinRunsOn("sm_90", 10, 0));
  EXPECT_TRUE(CubinRunsOn("sm_100", 10, 3));
  EXPECT_TRUE(CubinRunsOn("sm_100f", 10, 0));
  EXPECT_TRUE(CubinRunsOn("sm_100f", 10, 3));
  EXPECT_FALSE(CubinRunsOn("sm_103f", 10, 0));
  EXPECT_FALSE(CubinRunsOn("sm_100a", 10, 3));
  EXPECT_TRUE(CubinRunsOn("sm_103a", 10, 3));
  EXPECT_TRUE(CubinRunsOn("sm_120", 12, 1));
  EXPECT_FALSE(CubinRunsOn("sm_120", 10, 0));
  EXPECT_FALSE(CubinRunsOn("compute_90", 9, 0));
  EXPECT_TRUE(CubinRunsOn("", 9, 0));  // the driver judges
  DeviceProperties p;
  p.ordinal = 1;
  p.name = "NVIDIA H200";
  p.cc_major = 9;
  p.sm_count = 132;
  p.memory_bytes = 150'000'000'000;
  p.l2_bytes = 52'428'800;
  p.sm_clock_mhz = 1980;
  const v1::DeviceInfo info = ToDeviceInfo(p);
  EXPECT_EQ(info.id(), "cuda:1");
  EXPECT_EQ(info.backend(), "cuda");
  EXPECT_EQ(info.name(), "NVIDIA H200");
  EXPECT_EQ(info.sm_count(), 132u);
  EXPECT_DOUBLE_EQ(info.sm_clock_mhz(), 1980);
  EXPECT_FALSE(info.roofline_known());
}

TEST(CudaBackendTest, CreateFailsCleanlyWithoutAGpu) {
  CudaBackendOptions options;
  options.worker_binary = KERNELEVAL_WORKER_BINARY;
  options.startup_timeout_seconds = 60;
  absl::StatusOr<std::unique_ptr<CudaBackend>> backend = CudaBackend::Create(0, options);
  if (backend.ok()) {
    // A GPU machine: the worker answered with a device.
    EXPECT_EQ((*backend)->device().backend(), "cuda");
    EXPECT_EQ((*backend)->target_arch().substr(0, 3), "sm_");
    GTEST_SKIP() << "a CUDA device is present: " << (*backend)->device().name();
  }
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kFailedPrecondition) << backend.status();
  EXPECT_EQ(backend.status().message().substr(0, 7), "no CUDA") << backend.status();
}

TEST(CudaBackendTest, AMissingWorkerBinaryIsUnavailable) {
  CudaBackendOptions options;
  options.worker_binary = "/nonexistent/kerneleval-worker";
  absl::StatusOr<std::unique_ptr<CudaBackend>> backend = CudaBackend::Create(0, options);
  ASSERT_FALSE(backend.ok());
  EXPECT_EQ(backend.status().code(), absl::StatusCode::kUnavailable) << backend.status();
}

}  // namespace
}  // namespace kerneleval::cuda
