#include "evaluator/cuda/launch.h"

#include <cstring>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace kerneleval::cuda {
namespace {

std::string LaunchName(const internal::ResolvedLaunch& launch) {
  std::string name =
      absl::StrCat("kernel '", launch.kernel().empty() ? launch.symbol() : launch.kernel(), "'");
  if (launch.source_line() != 0) absl::StrAppend(&name, " (plan line ", launch.source_line(), ")");
  return name;
}

std::string DimText(const std::array<uint32_t, 3>& dims) {
  return absl::StrCat(dims[0], "x", dims[1], "x", dims[2]);
}

constexpr char kAxis[] = {'x', 'y', 'z'};

}  // namespace

std::array<uint32_t, 3> Dim3(const google::protobuf::RepeatedField<uint32_t>& dims) {
  std::array<uint32_t, 3> out = {1, 1, 1};
  for (int i = 0; i < dims.size() && i < 3; ++i) out[i] = dims.Get(i);
  return out;
}

absl::Status CheckLaunchConfig(const internal::ResolvedLaunch& launch, const LaunchLimits& device,
                               const KernelLimits& kernel) {
  const std::string name = LaunchName(launch);
  if (launch.grid_size() > 3 || launch.block_size() > 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": grid and block take at most three dimensions"));
  }
  const std::array<uint32_t, 3> grid = Dim3(launch.grid());
  const std::array<uint32_t, 3> block = Dim3(launch.block());
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || block[i] == 0) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": grid ", DimText(grid), ", block ",
                                                     DimText(block), " has a zero dimension"));
    }
    if (block[i] > device.max_block_dim[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": block.", std::string(1, kAxis[i]), " = ", block[i],
                       " exceeds the device's limit of ", device.max_block_dim[i]));
    }
    if (grid[i] > device.max_grid_dim[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": grid.", std::string(1, kAxis[i]), " = ", grid[i],
                       " exceeds the device's limit of ", device.max_grid_dim[i]));
    }
  }
  const uint64_t threads = uint64_t{block[0]} * block[1] * block[2];
  if (threads > device.max_threads_per_block) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": block ", DimText(block), " = ", threads, " threads exceeds the device's ",
        device.max_threads_per_block, " threads per block"));
  }
  if (kernel.max_threads_per_block != 0 && threads > kernel.max_threads_per_block) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": block ", DimText(block), " = ", threads, " threads exceeds the kernel's limit of ",
        kernel.max_threads_per_block, " threads per block (", kernel.registers_per_thread,
        " registers per thread, or __launch_bounds__)"));
  }
  const uint64_t shared = uint64_t{kernel.static_shared_bytes} + launch.dynamic_shared_bytes();
  if (shared > device.max_shared_per_block_optin) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": ", kernel.static_shared_bytes, " bytes of static + ",
        launch.dynamic_shared_bytes(), " bytes of dynamic shared memory exceed the device's ",
        device.max_shared_per_block_optin, " bytes per block"));
  }
  return absl::OkStatus();
}

bool NeedsDynamicSharedOptIn(uint32_t dynamic_shared_bytes, uint32_t current_max_dynamic) {
  return dynamic_shared_bytes > current_max_dynamic;
}

std::span<const uint8_t> PackedArgs::bytes(size_t i) const { return {slots_[i].data, sizes_[i]}; }

absl::StatusOr<PackedArgs> PackKernelArgs(
    const google::protobuf::RepeatedPtrField<internal::KernelArg>& args,
    const std::function<std::optional<CUdeviceptr>(absl::string_view)>& buffer_address) {
  PackedArgs packed;
  packed.slots_.resize(args.size());
  packed.sizes_.resize(args.size());
  for (int i = 0; i < args.size(); ++i) {
    const internal::KernelArg& arg = args.Get(i);
    auto& slot = packed.slots_[i];
    std::memset(slot.data, 0, sizeof(slot.data));
    const uint32_t size = arg.size_bytes();
    const std::string where = absl::StrCat("argument ", i);
    switch (arg.value_case()) {
      case internal::KernelArg::kBuffer: {
        if (size != 0 && size != sizeof(CUdeviceptr)) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, " (buffer '", arg.buffer(), "') is declared with ", size,
                           " bytes; a pointer has ", sizeof(CUdeviceptr)));
        }
        const std::optional<CUdeviceptr> address = buffer_address(arg.buffer());
        if (!address.has_value()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, " names unknown buffer '", arg.buffer(), "'"));
        }
        const uint64_t value = *address;
        std::memcpy(slot.data, &value, sizeof(value));
        packed.sizes_[i] = sizeof(CUdeviceptr);
        break;
      }
      case internal::KernelArg::kScalar: {
        if (size != 1 && size != 2 && size != 4 && size != 8) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": integer size ", size, " is not 1, 2, 4 or 8 bytes"));
        }
        const int64_t value = arg.scalar();
        const int bits = static_cast<int>(size) * 8;
        bool fits;
        if (arg.is_signed()) {
          fits = bits == 64 ||
                 (value >= -(int64_t{1} << (bits - 1)) && value <= (int64_t{1} << (bits - 1)) - 1);
        } else {
          // Unsigned 64-bit parameters arrive as int64 (two's complement).
          fits = bits == 64 ||
                 (value >= 0 && value <= static_cast<int64_t>((uint64_t{1} << bits) - 1));
        }
        if (!fits) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": value ", value, " does not fit a ", size, "-byte ",
                           arg.is_signed() ? "signed" : "unsigned", " integer"));
        }
        // Little-endian host and device: the low `size` bytes are the value.
        const uint64_t bits_value = static_cast<uint64_t>(value);
        std::memcpy(slot.data, &bits_value, size);
        packed.sizes_[i] = size;
        break;
      }
      case internal::KernelArg::kReal: {
        if (size == 4) {
          const float value = static_cast<float>(arg.real());
          std::memcpy(slot.data, &value, sizeof(value));
        } else if (size == 8) {
          const double value = arg.real();
          std::memcpy(slot.data, &value, sizeof(value));
        } else {
          return absl::InvalidArgumentError(absl::StrCat(where, ": floating-point size ", size,
                                                         " is not 4 (float) or 8 (double)"));
        }
        packed.sizes_[i] = size;
        break;
      }
      case internal::KernelArg::VALUE_NOT_SET:
        return absl::InvalidArgumentError(absl::StrCat(where, " has no value"));
    }
  }
  packed.pointers_.reserve(args.size());
  for (auto& slot : packed.slots_) packed.pointers_.push_back(slot.data);
  return packed;
}

}  // namespace kerneleval::cuda
