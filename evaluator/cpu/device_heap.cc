#include "evaluator/cpu/device_heap.h"

#include <sys/mman.h>

#include <cstring>

namespace kerneleval::cpu {
namespace {

// Each block starts with its size [bytes, header included], kept in a
// header of one alignment unit so that the pointer handed out stays aligned.
constexpr size_t kHeader = DeviceHeap::kAlignment;

}  // namespace

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
  const size_t total = (bytes + kHeader + kAlignment - 1) / kAlignment * kAlignment;
  char* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < total) continue;
      const size_t offset = it->first, left = it->second - total;
      free_.erase(it);
      if (left > 0) free_.emplace(offset + total, left);
      used_ += total;
      block = base_ + offset;
      break;
    }
  }
  if (!block) return nullptr;
  ever_allocated_.store(true, std::memory_order_release);
  std::memcpy(block, &total, sizeof(total));
  std::memset(block + kHeader, kFreshByte, total - kHeader);
  return block + kHeader;
}

void DeviceHeap::Free(void* pointer) {
  if (!pointer) return;
  char* block = static_cast<char*>(pointer) - kHeader;
  size_t total = 0;
  std::memcpy(&total, block, sizeof(total));
  size_t offset = static_cast<size_t>(block - base_);
  std::lock_guard<std::mutex> lock(mutex_);
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
}

size_t DeviceHeap::used() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_;
}

}  // namespace kerneleval::cpu
