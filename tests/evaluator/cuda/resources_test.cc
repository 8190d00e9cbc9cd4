// Ownership properties of the RAII handles, pinned at compile time, and the
// safety of empty (moved-from, default) handles without a driver.
#include "evaluator/cuda/resources.h"

#include <gtest/gtest.h>

#include <type_traits>

#include "evaluator/cuda/launch.h"

namespace kerneleval::cuda {
namespace {

template <typename T>
constexpr bool kMoveOnly =
    std::is_nothrow_move_constructible_v<T>&& std::is_nothrow_move_assignable_v<T> &&
    !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T> &&
    std::is_nothrow_destructible_v<T>;

static_assert(kMoveOnly<PrimaryContext>);
static_assert(kMoveOnly<Module>);
static_assert(kMoveOnly<DeviceBuffer>);
static_assert(kMoveOnly<PinnedHostBuffer>);
static_assert(kMoveOnly<Stream>);
static_assert(kMoveOnly<Event>);
static_assert(kMoveOnly<PackedArgs>);
// A kernel handle belongs to its module: a plain copyable view.
static_assert(std::is_copy_constructible_v<KernelFunction>);

TEST(ResourcesTest, EmptyHandlesNeedNoDriver) {
  // Default-constructed and moved-from handles own nothing; destroying,
  // moving and scrubbing them makes no driver call (there is none here).
  DeviceBuffer a;
  DeviceBuffer b(std::move(a));
  a = std::move(b);
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(a.ScrubAndFree().ok());
  a.Abandon();
  Stream stream;
  Stream other = std::move(stream);
  EXPECT_EQ(other.get(), nullptr);
  Event event;
  Event moved = std::move(event);
  EXPECT_EQ(moved.get(), nullptr);
  PinnedHostBuffer pinned;
  PinnedHostBuffer pinned2 = std::move(pinned);
  EXPECT_EQ(pinned2.data(), nullptr);
}

}  // namespace
}  // namespace kerneleval::cuda
