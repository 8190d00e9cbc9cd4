#ifndef KERNELEVAL_EVALUATOR_CPU_DEVICE_HEAP_H_
#define KERNELEVAL_EVALUATOR_CPU_DEVICE_HEAP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace kerneleval::cpu {

// The kernels' device malloc() heap on the CPU backend: one mapping of a
// fixed size (CUDA's cudaLimitMallocHeapSize, 8 MiB by default), so that
// the cross-block race check can cover it as one range (with each
// allocation taken from the host's heap, `acc[row] += s` into malloc()
// memory from blocks far apart was never checked: sweep 10, a11) and so
// that a kernel can take no more than a GPU would give it. First fit over
// free blocks kept in address order, merged with their neighbours when
// freed; every block starts 16-byte aligned, as a GPU's malloc() does.
// The bookkeeping (which blocks are free, each allocation's size) lives
// outside the mapping: kernel code writes anywhere in it, and a size kept
// in a header before the block could be rewritten and then freed.
// A new allocation reads 0xff until written: a GPU's heap holds whatever
// was there, and a kernel counting on zeros from malloc() is wrong there.
// Thread-safe (a mutex: blocks on several OS threads allocate at once).
class DeviceHeap {
 public:
  static constexpr size_t kAlignment = 16;  // [bytes]
  static constexpr unsigned char kFreshByte = 0xff;

  // Maps `bytes` (rounded down to kAlignment) of address space, reserved
  // lazily (MAP_NORESERVE); an empty heap when `bytes` is 0 or the mapping
  // fails.
  explicit DeviceHeap(size_t bytes);
  ~DeviceHeap();
  DeviceHeap(const DeviceHeap&) = delete;
  DeviceHeap& operator=(const DeviceHeap&) = delete;

  // [bytes] usable, nullptr when no free block is large enough (or bytes is 0).
  void* Allocate(size_t bytes);
  // A pointer Allocate returned, once. nullptr, and any pointer that is not
  // a live allocation's (freed twice, inside a block, outside the heap),
  // are ignored: false.
  bool Free(void* pointer);

  // Forgets every allocation and drops the heap's pages, so that they read
  // zeros: nothing one run of a program leaves in the heap,
  // in an allocation it never freed or in free memory next to one, is
  // there for the next (a result cached across timed runs). Call while no
  // kernel runs.
  void Reset();

  // The mapping [begin, end): the race check's range.
  uintptr_t begin() const { return reinterpret_cast<uintptr_t>(base_); }
  uintptr_t end() const { return begin() + bytes_; }
  // [bytes] held by allocations (each rounded up to kAlignment).
  size_t used() const;
  // Whether Allocate ever returned memory.
  bool ever_allocated() const { return ever_allocated_.load(std::memory_order_acquire); }

 private:
  char* base_ = nullptr;
  size_t bytes_ = 0;
  mutable std::mutex mutex_;
  std::map<size_t, size_t> free_;       // offset -> bytes, no two adjacent
  std::map<size_t, size_t> allocated_;  // offset -> bytes, each live allocation
  size_t used_ = 0;
  std::atomic<bool> ever_allocated_{false};
};

}  // namespace kerneleval::cpu

#endif  // KERNELEVAL_EVALUATOR_CPU_DEVICE_HEAP_H_
