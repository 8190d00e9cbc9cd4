// What the driver says about a device, and its v1::DeviceInfo.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "evaluator/cuda/driver.h"
#include "evaluator/cuda/launch.h"
#include "kerneleval/v1/gpu_peaks.pb.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::cuda {

struct DeviceProperties {
  int ordinal = 0;
  std::string name;  // cuDeviceGetName, e.g. "NVIDIA H200"
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  uint64_t memory_bytes = 0;  // cuDeviceTotalMem
  uint64_t l2_bytes = 0;
  uint64_t max_persisting_l2_bytes = 0;  // 0: no persisting L2 (before sm_80)
  // CU_DEVICE_ATTRIBUTE_CLOCK_RATE, the "typical" (in practice the maximum
  // boost) SM clock [MHz]. The nominal reference for throttling checks: NVML,
  // which knows the current and default application clocks, is not used (the
  // worker loads nothing but libcuda).
  double sm_clock_mhz = 0;
  double memory_clock_mhz = 0;  // peak memory clock [MHz]
  int memory_bus_bits = 0;
  int warp_size = 32;
  bool can_map_host_memory = false;
  LaunchLimits limits;
};

absl::StatusOr<DeviceProperties> QueryDevice(const DriverApi& api, int ordinal);

// "sm_90" for compute capability 9.0: the device's architecture.
std::string ArchName(int cc_major, int cc_minor);
// What NVRTC compiles submissions for: the device's exact architecture,
// with its arch-specific features from 9.0 on ("sm_90a": wgmma, setmaxnreg;
// "sm_100a": tcgen05), which plain "sm_90" refuses to assemble. Such a
// CUBIN runs on that compute capability only, as any CUBIN compiled for the
// device's exact architecture does.
std::string NvrtcTargetArch(int cc_major, int cc_minor);

// Whether a CUBIN compiled for `arch` (a CompileResult.arch) can run on a
// device of compute capability cc_major.cc_minor, by CUDA's binary
// compatibility rules: "sm_XY" runs on X.Z for Z >= Y (sm_80 SASS on an
// sm_86/sm_89 device), "sm_XYf" (a family) likewise within its major,
// "sm_XYa" (arch-specific features) on X.Y only. "compute_XY" is PTX only:
// false. An empty or unparsable arch: true (let the driver judge the image).
// The driver has the last word: a CUBIN it refuses falls back to the PTX.
bool CubinRunsOn(absl::string_view arch, int cc_major, int cc_minor);

// id "cuda:N", backend "cuda", the driver's figures; no peaks (MatchPeaks).
v1::DeviceInfo ToDeviceInfo(const DeviceProperties& properties);

// Looks the device up in `table` (gpu_peaks::FindGpu on the driver's name,
// compute capability and memory); sets peaks and roofline_known = true when
// found, clears them otherwise.
void MatchPeaks(const v1::GpuPeakTable& table, v1::DeviceInfo* device);

}  // namespace kerneleval::cuda
