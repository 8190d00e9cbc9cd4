#include "evaluator/cpu/device_heap.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace kerneleval::cpu {
namespace {

constexpr size_t kHeapBytes = size_t{1} << 20;

bool Inside(const DeviceHeap& heap, const void* p, size_t bytes) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  return a >= heap.begin() && a + bytes <= heap.end();
}

TEST(DeviceHeapTest, AllocationsLieInTheMappingAlignedAndApart) {
  DeviceHeap heap(kHeapBytes);
  ASSERT_EQ(heap.end() - heap.begin(), kHeapBytes);
  std::vector<char*> blocks;
  for (size_t bytes : {1, 7, 16, 100, 4096, 3}) {
    auto* p = static_cast<char*>(heap.Allocate(bytes));
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_TRUE(Inside(heap, p, bytes));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % DeviceHeap::kAlignment, 0u);
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(static_cast<unsigned char>(p[i]), 0xff) << i;
    std::memset(p, static_cast<int>(blocks.size()), bytes);
    blocks.push_back(p);
  }
  // No block overwrote another.
  const size_t sizes[] = {1, 7, 16, 100, 4096, 3};
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (size_t i = 0; i < sizes[b]; ++i) ASSERT_EQ(blocks[b][i], static_cast<char>(b));
  }
  EXPECT_EQ(heap.Allocate(0), nullptr);
}

TEST(DeviceHeapTest, RunsOutAtItsSizeAndGetsFreedMemoryBack) {
  DeviceHeap heap(kHeapBytes);
  std::vector<void*> blocks;
  while (void* p = heap.Allocate(64 << 10)) blocks.push_back(p);
  // No header in the heap: 16 blocks of 64 KiB fill 1 MiB exactly.
  EXPECT_EQ(blocks.size(), 16u);
  EXPECT_EQ(heap.used(), kHeapBytes);
  EXPECT_EQ(heap.Allocate(1), nullptr);
  for (void* p : blocks) EXPECT_TRUE(heap.Free(p));
  EXPECT_EQ(heap.used(), 0u);
  // Freed neighbours merge: the whole heap is one block again.
  void* whole = heap.Allocate(kHeapBytes);
  ASSERT_NE(whole, nullptr);
  EXPECT_TRUE(heap.Free(whole));
  EXPECT_FALSE(heap.Free(nullptr));
  // Freed in another order (every second one first), they merge too.
  blocks.clear();
  while (void* p = heap.Allocate(10000)) blocks.push_back(p);
  for (size_t i = 0; i < blocks.size(); i += 2) heap.Free(blocks[i]);
  EXPECT_EQ(heap.Allocate(30000), nullptr);
  for (size_t i = 1; i < blocks.size(); i += 2) heap.Free(blocks[i]);
  EXPECT_NE(heap.Allocate(kHeapBytes), nullptr);
}

TEST(DeviceHeapTest, FreeIgnoresWhatIsNotALiveAllocation) {
  DeviceHeap heap(kHeapBytes);
  auto* p = static_cast<char*>(heap.Allocate(256));
  auto* q = static_cast<char*>(heap.Allocate(256));
  ASSERT_NE(p, nullptr);
  ASSERT_NE(q, nullptr);
  // Kernel code may write anywhere in the heap: nothing there tells Free
  // a block's size (a header rewritten before a free once could).
  std::memset(p, 0x7f, 512);
  EXPECT_FALSE(heap.Free(p + 16));  // inside a block
  int outside = 0;
  EXPECT_FALSE(heap.Free(&outside));  // not the heap's
  EXPECT_TRUE(heap.Free(p));
  EXPECT_FALSE(heap.Free(p));  // twice
  EXPECT_EQ(heap.used(), 256u);
  EXPECT_TRUE(heap.Free(q));
  EXPECT_EQ(heap.used(), 0u);
  EXPECT_NE(heap.Allocate(kHeapBytes), nullptr);
}

TEST(DeviceHeapTest, ResetForgetsEveryAllocationAndItsBytes) {
  DeviceHeap heap(kHeapBytes);
  auto* kept = static_cast<unsigned char*>(heap.Allocate(100000));
  auto* freed = static_cast<unsigned char*>(heap.Allocate(64));
  ASSERT_NE(kept, nullptr);
  ASSERT_NE(freed, nullptr);
  // A run leaves data in an allocation it never frees, and next to one it
  // frees (free memory the next run's allocation does not cover).
  std::memset(kept, 0x5a, 100000);
  std::memset(freed, 0x5a, 64 + 4096);
  heap.Free(freed);
  heap.Reset();
  EXPECT_EQ(heap.used(), 0u);
  for (size_t i = 0; i < 100000 + 64 + 4096; ++i) ASSERT_EQ(kept[i], 0) << i;
  // First fit from the start again, and all of it to be had.
  auto* again = static_cast<unsigned char*>(heap.Allocate(kHeapBytes));
  ASSERT_EQ(again, kept);
  EXPECT_EQ(again[0], DeviceHeap::kFreshByte);
  heap.Reset();
  heap.Reset();  // twice, and on an empty heap
  DeviceHeap empty(0);
  empty.Reset();
  EXPECT_EQ(empty.Allocate(1), nullptr);
}

TEST(DeviceHeapTest, ReusedMemoryReadsFreshAgain) {
  DeviceHeap heap(kHeapBytes);
  auto* p = static_cast<unsigned char*>(heap.Allocate(256));
  ASSERT_NE(p, nullptr);
  std::memset(p, 0, 256);
  heap.Free(p);
  auto* q = static_cast<unsigned char*>(heap.Allocate(256));
  ASSERT_EQ(q, p);  // first fit
  for (int i = 0; i < 256; ++i) ASSERT_EQ(q[i], DeviceHeap::kFreshByte) << i;
}

TEST(DeviceHeapTest, ThreadsAllocateAndFreeAtOnce) {
  DeviceHeap heap(kHeapBytes);
  std::vector<std::thread> threads;
  std::vector<std::set<uintptr_t>> seen(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&heap, &seen, t] {
      for (int round = 0; round < 2000; ++round) {
        auto* p = static_cast<unsigned char*>(heap.Allocate(48 + (round % 7) * 16));
        ASSERT_NE(p, nullptr);
        p[0] = static_cast<unsigned char>(t);
        seen[t].insert(reinterpret_cast<uintptr_t>(p));
        ASSERT_EQ(p[0], t);
        heap.Free(p);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(heap.used(), 0u);
}

TEST(DeviceHeapTest, AnEmptyHeapGivesNothing) {
  DeviceHeap heap(0);
  EXPECT_EQ(heap.begin(), heap.end());
  EXPECT_EQ(heap.Allocate(1), nullptr);
}

}  // namespace
}  // namespace kerneleval::cpu
