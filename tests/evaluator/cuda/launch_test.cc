// Launch-configuration checks and argument packing: pure functions.
#include "evaluator/cuda/launch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

namespace kerneleval::cuda {
namespace {

internal::ResolvedLaunch Launch(std::vector<uint32_t> grid, std::vector<uint32_t> block,
                                uint32_t dynamic_shared = 0) {
  internal::ResolvedLaunch launch;
  launch.set_kernel("add");
  launch.set_symbol("_Z3addPfS_S_i");
  launch.set_source_line(3);
  for (uint32_t g : grid) launch.add_grid(g);
  for (uint32_t b : block) launch.add_block(b);
  launch.set_dynamic_shared_bytes(dynamic_shared);
  return launch;
}

const LaunchLimits kHopper;  // the defaults are Hopper's
const KernelLimits kPlainKernel{1024, 0, 32};

TEST(CheckLaunchConfigTest, AcceptsOrdinaryLaunches) {
  EXPECT_TRUE(CheckLaunchConfig(Launch({4096}, {256}), kHopper, kPlainKernel).ok());
  EXPECT_TRUE(CheckLaunchConfig(Launch({64, 64, 4}, {32, 32, 1}), kHopper, kPlainKernel).ok());
  EXPECT_TRUE(CheckLaunchConfig(Launch({2147483647u}, {1024}), kHopper, kPlainKernel).ok());
  // 200 KiB of dynamic shared memory: legal with the opt-in.
  EXPECT_TRUE(CheckLaunchConfig(Launch({1}, {128}, 200 * 1024), kHopper, kPlainKernel).ok());
}

TEST(CheckLaunchConfigTest, RejectsWhatTheDeviceCannotRun) {
  absl::Status threads = CheckLaunchConfig(Launch({1}, {32, 32, 2}), kHopper, kPlainKernel);
  EXPECT_EQ(threads.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(threads.message(),
            "kernel 'add' (plan line 3): block 32x32x2 = 2048 threads exceeds the device's 1024 "
            "threads per block");
  absl::Status block_z = CheckLaunchConfig(Launch({1}, {1, 1, 128}), kHopper, kPlainKernel);
  EXPECT_NE(block_z.message().find("block.z = 128 exceeds the device's limit of 64"),
            absl::string_view::npos)
      << block_z;
  absl::Status grid_y = CheckLaunchConfig(Launch({1, 65536}, {32}), kHopper, kPlainKernel);
  EXPECT_NE(grid_y.message().find("grid.y = 65536"), absl::string_view::npos) << grid_y;
  absl::Status zero = CheckLaunchConfig(Launch({0}, {32}), kHopper, kPlainKernel);
  EXPECT_NE(zero.message().find("zero dimension"), absl::string_view::npos) << zero;
  absl::Status four = CheckLaunchConfig(Launch({1, 1, 1, 1}, {32}), kHopper, kPlainKernel);
  EXPECT_FALSE(four.ok());
}

TEST(CheckLaunchConfigTest, RespectsTheKernelsOwnLimits) {
  // 255 registers per thread leave room for 256 threads per block.
  const KernelLimits heavy{256, 0, 255};
  absl::Status status = CheckLaunchConfig(Launch({1}, {512}), kHopper, heavy);
  EXPECT_NE(status.message().find("exceeds the kernel's limit of 256 threads per block (255 "
                                  "registers per thread"),
            absl::string_view::npos)
      << status;
  EXPECT_TRUE(CheckLaunchConfig(Launch({1}, {256}), kHopper, heavy).ok());
  // Static + dynamic shared memory over the opt-in maximum.
  const KernelLimits static_smem{1024, 40 * 1024, 32};
  absl::Status shared = CheckLaunchConfig(Launch({1}, {32}, 200 * 1024), kHopper, static_smem);
  EXPECT_NE(shared.message().find("40960 bytes of static + 204800 bytes of dynamic shared "
                                  "memory exceed the device's 232448 bytes per block"),
            absl::string_view::npos)
      << shared;
}

TEST(CheckLaunchConfigTest, MissingDimensionsAreOne) {
  internal::ResolvedLaunch launch;
  launch.set_kernel("k");
  EXPECT_TRUE(CheckLaunchConfig(launch, kHopper, kPlainKernel).ok());
  EXPECT_EQ(Dim3(launch.grid()), (std::array<uint32_t, 3>{1, 1, 1}));
}

TEST(DynamicSharedOptInTest, AboveTheCurrentLimitOnly) {
  EXPECT_FALSE(NeedsDynamicSharedOptIn(48 * 1024, 48 * 1024));
  EXPECT_TRUE(NeedsDynamicSharedOptIn(48 * 1024 + 1, 48 * 1024));
  EXPECT_TRUE(NeedsDynamicSharedOptIn(40 * 1024, 48 * 1024 - 16 * 1024));  // static smem used
}

google::protobuf::RepeatedPtrField<internal::KernelArg> Args(
    std::initializer_list<internal::KernelArg> list) {
  google::protobuf::RepeatedPtrField<internal::KernelArg> args;
  for (const auto& arg : list) *args.Add() = arg;
  return args;
}

internal::KernelArg Buffer(const std::string& name) {
  internal::KernelArg arg;
  arg.set_buffer(name);
  arg.set_size_bytes(8);
  return arg;
}
internal::KernelArg Int(int64_t value, uint32_t size, bool is_signed) {
  internal::KernelArg arg;
  arg.set_scalar(value);
  arg.set_size_bytes(size);
  arg.set_is_signed(is_signed);
  return arg;
}
internal::KernelArg Real(double value, uint32_t size) {
  internal::KernelArg arg;
  arg.set_real(value);
  arg.set_size_bytes(size);
  return arg;
}

std::optional<CUdeviceptr> Addresses(absl::string_view name) {
  static const std::map<std::string, CUdeviceptr> addresses = {{"a", 0x7f0000001000},
                                                               {"out", 0x7f0000200000}};
  auto it = addresses.find(std::string(name));
  if (it == addresses.end()) return std::nullopt;
  return it->second;
}

template <typename T>
T As(const PackedArgs& packed, size_t i) {
  T value;
  EXPECT_EQ(packed.bytes(i).size(), sizeof(T));
  std::memcpy(&value, packed.bytes(i).data(), sizeof(T));
  return value;
}

TEST(PackKernelArgsTest, SizesValuesAndAlignment) {
  absl::StatusOr<PackedArgs> packed = PackKernelArgs(
      Args({Buffer("a"), Buffer("out"), Int(-1, 1, true), Int(255, 1, false), Int(-2, 2, true),
            Int(65535, 2, false), Int(-3, 4, true), Int(4000000000, 4, false), Int(-5, 8, true),
            Real(0.1, 4), Real(0.1, 8)}),
      Addresses);
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_EQ(packed->size(), 11u);
  EXPECT_EQ(As<uint64_t>(*packed, 0), 0x7f0000001000u);
  EXPECT_EQ(As<uint64_t>(*packed, 1), 0x7f0000200000u);
  EXPECT_EQ(As<int8_t>(*packed, 2), -1);
  EXPECT_EQ(As<uint8_t>(*packed, 3), 255);
  EXPECT_EQ(As<int16_t>(*packed, 4), -2);
  EXPECT_EQ(As<uint16_t>(*packed, 5), 65535);
  EXPECT_EQ(As<int32_t>(*packed, 6), -3);
  EXPECT_EQ(As<uint32_t>(*packed, 7), 4000000000u);
  EXPECT_EQ(As<int64_t>(*packed, 8), -5);
  EXPECT_EQ(As<float>(*packed, 9), 0.1f);  // rounded to float, not the double's bits
  EXPECT_EQ(As<double>(*packed, 10), 0.1);
  // cuLaunchKernel reads each argument through its pointer: every one must be
  // aligned for any parameter type (8 bytes; 16 for vector types).
  void** params = packed->params();
  for (size_t i = 0; i < packed->size(); ++i) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(params[i]) % 16, 0u) << i;
    EXPECT_EQ(params[i], packed->bytes(i).data());
  }
  // Moving keeps the pointers valid (they point into the moved storage).
  PackedArgs moved = *std::move(packed);
  EXPECT_EQ(As<int64_t>(moved, 8), -5);
  EXPECT_EQ(moved.params()[8], moved.bytes(8).data());
}

TEST(PackKernelArgsTest, NoArgumentsGiveNullParams) {
  absl::StatusOr<PackedArgs> packed = PackKernelArgs(Args({}), Addresses);
  ASSERT_TRUE(packed.ok());
  EXPECT_EQ(packed->params(), nullptr);
}

TEST(PackKernelArgsTest, RejectsWhatCannotBePassed) {
  auto error = [](internal::KernelArg arg) {
    absl::StatusOr<PackedArgs> packed = PackKernelArgs(Args({Buffer("a"), arg}), Addresses);
    EXPECT_FALSE(packed.ok());
    EXPECT_EQ(packed.status().code(), absl::StatusCode::kInvalidArgument);
    return std::string(packed.status().message());
  };
  EXPECT_EQ(error(Buffer("missing")), "argument 1 names unknown buffer 'missing'");
  EXPECT_EQ(error(Int(128, 1, true)), "argument 1: value 128 does not fit a 1-byte signed integer");
  EXPECT_EQ(error(Int(-1, 4, false)),
            "argument 1: value -1 does not fit a 4-byte unsigned integer");
  EXPECT_EQ(error(Int(1, 3, true)), "argument 1: integer size 3 is not 1, 2, 4 or 8 bytes");
  EXPECT_EQ(error(Real(1.0, 2)),
            "argument 1: floating-point size 2 is not 4 (float) or 8 (double)");
  EXPECT_EQ(error(internal::KernelArg()), "argument 1 has no value");
  internal::KernelArg narrow_pointer = Buffer("a");
  narrow_pointer.set_size_bytes(4);
  EXPECT_NE(error(narrow_pointer).find("a pointer has 8"), std::string::npos);
}

}  // namespace
}  // namespace kerneleval::cuda
