#include "evaluator/cuda/device.h"

#include <array>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

#ifdef KERNELEVAL_HAVE_GPU_PEAKS
#include "gpu_peaks/peak_table.h"
#endif

namespace kerneleval::cuda {
namespace {

absl::StatusOr<int> Attribute(const DriverApi& api, CUdevice device, CUdevice_attribute attribute) {
  int value = 0;
  KE_CU_RETURN_IF_ERROR(api.cuDeviceGetAttribute(&value, attribute, device));
  return value;
}

// Attributes that only describe (clocks, bus width, persisting L2): 0 when the
// driver does not answer, rather than no device at all.
int OptionalAttribute(const DriverApi& api, CUdevice device, CUdevice_attribute attribute) {
  int value = 0;
  return api.cuDeviceGetAttribute(&value, attribute, device) == CUDA_SUCCESS ? value : 0;
}

}  // namespace

absl::StatusOr<DeviceProperties> QueryDevice(const DriverApi& api, int ordinal) {
  if (ordinal < 0 || ordinal >= api.device_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("no CUDA device ", ordinal, " (this machine has ", api.device_count, ")"));
  }
  CUdevice device = 0;
  KE_CU_RETURN_IF_ERROR(api.cuDeviceGet(&device, ordinal));
  DeviceProperties p;
  p.ordinal = ordinal;
  std::array<char, 256> name{};
  KE_CU_RETURN_IF_ERROR(api.cuDeviceGetName(name.data(), static_cast<int>(name.size()), device));
  p.name = name.data();
  size_t memory = 0;
  KE_CU_RETURN_IF_ERROR(api.cuDeviceTotalMem(&memory, device));
  p.memory_bytes = memory;

  // Reads an attribute into `out` or returns its error.
  // (Its local has a name no caller uses: `KE_ATTRIBUTE(value, ...)` once
  // assigned a local `value` to itself and left the caller's at 0.)
#define KE_ATTRIBUTE(out, attribute)                                       \
  do {                                                                     \
    absl::StatusOr<int> ke_attribute_ = Attribute(api, device, attribute); \
    if (!ke_attribute_.ok()) return ke_attribute_.status();                \
    (out) = *ke_attribute_;                                                \
  } while (0)
  int value = 0;
  KE_ATTRIBUTE(p.cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  KE_ATTRIBUTE(p.cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  KE_ATTRIBUTE(p.sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  KE_ATTRIBUTE(value, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  p.l2_bytes = static_cast<uint64_t>(value);
  p.max_persisting_l2_bytes = static_cast<uint64_t>(
      OptionalAttribute(api, device, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE));
  // [kHz] -> [MHz]
  p.sm_clock_mhz = OptionalAttribute(api, device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000.0;
  p.memory_clock_mhz =
      OptionalAttribute(api, device, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) / 1000.0;
  p.memory_bus_bits = OptionalAttribute(api, device, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  KE_ATTRIBUTE(p.warp_size, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  KE_ATTRIBUTE(value, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY);
  p.can_map_host_memory = value != 0;

  LaunchLimits& l = p.limits;
  KE_ATTRIBUTE(value, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  l.max_threads_per_block = static_cast<uint32_t>(value);
  const CUdevice_attribute block_dims[] = {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
                                           CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
                                           CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z};
  const CUdevice_attribute grid_dims[] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                          CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                          CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  for (int i = 0; i < 3; ++i) {
    KE_ATTRIBUTE(value, block_dims[i]);
    l.max_block_dim[i] = static_cast<uint32_t>(value);
    KE_ATTRIBUTE(value, grid_dims[i]);
    l.max_grid_dim[i] = static_cast<uint32_t>(value);
  }
  KE_ATTRIBUTE(value, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  l.max_shared_per_block = static_cast<uint32_t>(value);
  KE_ATTRIBUTE(value, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  l.max_shared_per_block_optin = static_cast<uint32_t>(value);
#undef KE_ATTRIBUTE
  return p;
}

std::string ArchName(int cc_major, int cc_minor) { return absl::StrCat("sm_", cc_major, cc_minor); }

std::string NvrtcTargetArch(int cc_major, int cc_minor) {
  return absl::StrCat(ArchName(cc_major, cc_minor), cc_major >= 9 ? "a" : "");
}

bool CubinRunsOn(absl::string_view arch, int cc_major, int cc_minor) {
  if (arch.empty()) return true;
  if (absl::StartsWith(arch, "compute_")) return false;
  if (!absl::ConsumePrefix(&arch, "sm_")) return true;
  const char suffix = !arch.empty() && (arch.back() == 'a' || arch.back() == 'f') ? arch.back() : 0;
  if (suffix != 0) arch.remove_suffix(1);
  int number = 0;
  if (arch.size() < 2 || !absl::SimpleAtoi(arch, &number)) return true;
  // The last digit is the minor version: sm_90 is 9.0, sm_100 10.0, sm_121 12.1.
  const int major = number / 10;
  const int minor = number % 10;
  if (major != cc_major) return false;
  return suffix == 'a' ? minor == cc_minor : minor <= cc_minor;
}

v1::DeviceInfo ToDeviceInfo(const DeviceProperties& p) {
  v1::DeviceInfo info;
  info.set_id(absl::StrCat("cuda:", p.ordinal));
  info.set_backend("cuda");
  info.set_name(p.name);
  info.set_compute_capability_major(static_cast<uint32_t>(p.cc_major));
  info.set_compute_capability_minor(static_cast<uint32_t>(p.cc_minor));
  info.set_sm_count(static_cast<uint32_t>(p.sm_count));
  info.set_memory_bytes(p.memory_bytes);
  info.set_l2_bytes(p.l2_bytes);
  info.set_sm_clock_mhz(p.sm_clock_mhz);
  info.set_memory_clock_mhz(p.memory_clock_mhz);
  info.set_roofline_known(false);
  info.set_ready(true);
  return info;
}

void MatchPeaks(const v1::GpuPeakTable& table, v1::DeviceInfo* device) {
  device->clear_peaks();
  device->set_roofline_known(false);
#ifdef KERNELEVAL_HAVE_GPU_PEAKS
  std::optional<v1::GpuPeaks> peaks = gpu_peaks::FindGpu(
      table, device->name(), static_cast<int>(device->compute_capability_major()),
      static_cast<int>(device->compute_capability_minor()), device->memory_bytes());
  if (peaks.has_value()) {
    *device->mutable_peaks() = *std::move(peaks);
    device->set_roofline_known(true);
  }
#else
  (void)table;
#endif
}

}  // namespace kerneleval::cuda
