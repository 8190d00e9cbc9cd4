// Pure functions behind every launch (no driver calls, tested on the CPU):
// checking a launch configuration against the device's and the kernel's
// limits, and packing KernelArgs into the void** array cuLaunchKernel reads.
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kerneleval/internal/worker.pb.h"

namespace kerneleval::cuda {

// Shared memory a block may use without opting in [bytes] (all GPUs since
// Kepler); more needs cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES).
inline constexpr uint32_t kDefaultSharedPerBlock = 48 * 1024;

// The device's launch limits (cuDeviceGetAttribute). Defaults: Hopper's.
struct LaunchLimits {
  uint32_t max_threads_per_block = 1024;
  std::array<uint32_t, 3> max_block_dim = {1024, 1024, 64};
  std::array<uint32_t, 3> max_grid_dim = {2147483647u, 65535u, 65535u};
  uint32_t max_shared_per_block = kDefaultSharedPerBlock;  // without opt-in [bytes]
  uint32_t max_shared_per_block_optin = 227 * 1024;        // with opt-in [bytes]
};

// One kernel's limits (cuFuncGetAttribute).
struct KernelLimits {
  // MAX_THREADS_PER_BLOCK: lower than the device's when registers per thread
  // or __launch_bounds__ forbid a full block.
  uint32_t max_threads_per_block = 1024;
  uint32_t static_shared_bytes = 0;
  uint32_t registers_per_thread = 0;  // for the message only
};

// OK, or INVALID_ARGUMENT with one readable line naming the kernel, the
// value and the limit, e.g. "kernel 'add' (plan line 3): block 32x32x2 = 2048
// threads exceeds the device's 1024 threads per block". A grid or block with
// fewer than three entries has the missing ones set to 1; zero is an error.
// The CUDA backend reports these as RunFailure stage "runtime" (the kernel
// never ran), without replacing the worker.
absl::Status CheckLaunchConfig(const internal::ResolvedLaunch& launch, const LaunchLimits& device,
                               const KernelLimits& kernel);

// The three dimensions of a grid or block (missing entries = 1).
std::array<uint32_t, 3> Dim3(const google::protobuf::RepeatedField<uint32_t>& dims);

// Whether `dynamic_shared_bytes` needs the kernel's MAX_DYNAMIC_SHARED_SIZE_BYTES
// raised above `current_max_dynamic` (its present value; by default the
// device's 48 KiB minus the kernel's static shared memory).
bool NeedsDynamicSharedOptIn(uint32_t dynamic_shared_bytes, uint32_t current_max_dynamic);

// Kernel arguments in cuLaunchKernel's form: one 8-byte-aligned, 16-byte slot
// per argument holding its value in the declared size (little-endian), and an
// array of pointers to the slots. Move-only: the pointers point into the
// slots (a moved vector keeps its storage, so moves are safe).
class PackedArgs {
 public:
  PackedArgs() = default;
  PackedArgs(PackedArgs&&) noexcept = default;
  PackedArgs& operator=(PackedArgs&&) noexcept = default;
  PackedArgs(const PackedArgs&) = delete;
  PackedArgs& operator=(const PackedArgs&) = delete;
  ~PackedArgs() = default;

  // cuLaunchKernel's kernelParams; nullptr when there are no arguments.
  [[nodiscard]] void** params() { return pointers_.empty() ? nullptr : pointers_.data(); }
  [[nodiscard]] size_t size() const { return pointers_.size(); }
  // The bytes of argument `i` as the kernel receives them.
  [[nodiscard]] std::span<const uint8_t> bytes(size_t i) const;

 private:
  friend absl::StatusOr<PackedArgs> PackKernelArgs(
      const google::protobuf::RepeatedPtrField<internal::KernelArg>& args,
      const std::function<std::optional<CUdeviceptr>(absl::string_view)>& buffer_address);

  struct alignas(16) Slot {
    uint8_t data[16];
  };
  std::vector<Slot> slots_;
  std::vector<uint32_t> sizes_;
  std::vector<void*> pointers_;
};

// Packs `args`:
//   buffer  -> the CUdeviceptr `buffer_address` gives for its name (8 bytes;
//              size_bytes must be 0 or 8);
//   scalar  -> size_bytes (1, 2, 4 or 8) two's-complement bytes; the value must
//              fit the declared size and signedness;
//   real    -> float (size 4) or double (size 8).
// INVALID_ARGUMENT naming the argument (by position) for anything else: an
// unknown buffer, an unset value, an unsupported size, a value that does not fit.
absl::StatusOr<PackedArgs> PackKernelArgs(
    const google::protobuf::RepeatedPtrField<internal::KernelArg>& args,
    const std::function<std::optional<CUdeviceptr>(absl::string_view)>& buffer_address);

}  // namespace kerneleval::cuda
