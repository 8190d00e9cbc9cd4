#include "evaluator/cpu/device_heap.h"

#include <sys/mman.h>

#include <cstring>

namespace kerneleval::cpu {

DeviceHeap::DeviceHeap(size_t bytes) {
  bytes = bytes / kAlignment * kAlignment;
  if (bytes == 0) return;
  void* mapping = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) return;
  base_ = static_cast<char*>(mapping);
  bytes_ = bytes;
  free_.emplace(0, bytes);
}

DeviceHeap::~DeviceHeap() {
  if (base_) ::munmap(base_, bytes_);
}

void* DeviceHeap::Allocate(size_t bytes) {
  if (bytes == 0 || bytes > bytes_) return nullptr;
  const size_t total = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  char* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < total) continue;
      const size_t offset = it->first, left = it->second - total;
      free_.erase(it);
      if (left > 0) free_.emplace(offset + total, left);
      allocated_.emplace(offset, total);
      used_ += total;
      block = base_ + offset;
      break;
    }
  }
  if (!block) return nullptr;
  ever_allocated_.store(true, std::memory_order_release);
  std::memset(block, kFreshByte, total);
  return block;
}

bool DeviceHeap::Free(void* pointer) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  if (address < begin() || address >= end()) return false;
  size_t offset = address - begin();
  std::lock_guard<std::mutex> lock(mutex_);
  const auto live = allocated_.find(offset);
  if (live == allocated_.end()) return false;
  size_t total = live->second;
  allocated_.erase(live);
  used_ -= total;
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + total) {
    total += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      offset = previous->first;
      total += previous->second;
      free_.erase(previous);
    }
  }
  free_.emplace(offset, total);
  return true;
}

void DeviceHeap::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!base_) return;
  allocated_.clear();
  free_.clear();
  free_.emplace(0, bytes_);
  used_ = 0;
  if (!ever_allocated_.load(std::memory_order_acquire)) return;
  // All of it, not only what was allocated: kernel code may write past its
  // blocks, into pages no allocation reached. Private anonymous pages read
  // zeros again once dropped (a walk of the page table: those never touched
  // cost nothing).
  if (::madvise(base_, bytes_, MADV_DONTNEED) != 0) std::memset(base_, 0, bytes_);
}

size_t DeviceHeap::used() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_;
}

}  // namespace kerneleval::cpu
