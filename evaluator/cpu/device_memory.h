// "Device" buffers of the CPU backend: each in a mapping of its own with
// PROT_NONE guard pages before and after, and the data placed so that it ends
// where the trailing guard page begins. An access past the end (by more than
// the < 16 bytes of padding when the size is not a multiple of 16) faults
// with SIGSEGV instead of reading or writing a neighbour.
//
// The data start is aligned to min(256, largest power of two dividing the
// size rounded up to 16) bytes, at least 16 (float4 / double2 accesses).
// Every buffer is a fresh mapping: it never holds bytes of an earlier one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace kerneleval::cpu {

class GuardedBuffer {
 public:
  static absl::StatusOr<GuardedBuffer> Allocate(size_t bytes);
  // The same placement, but the data pages are `GuardedDataPagesBytes(bytes)`
  // bytes of `fd` from `file_offset` (page-aligned), mapped shared: another
  // process mapping the same range sees the same bytes.
  static absl::StatusOr<GuardedBuffer> MapShared(int fd, uint64_t file_offset, size_t bytes);

  GuardedBuffer(GuardedBuffer&& other) noexcept;
  GuardedBuffer& operator=(GuardedBuffer&& other) noexcept;
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  ~GuardedBuffer();

  [[nodiscard]] void* data() const { return data_; }
  [[nodiscard]] size_t size() const { return size_; }  // [bytes]

 private:
  GuardedBuffer(void* mapping, size_t mapping_bytes, char* data, size_t size)
      : mapping_(mapping), mapping_bytes_(mapping_bytes), data_(data), size_(size) {}
  void Release() noexcept;
  template <typename MakeData>
  static absl::StatusOr<GuardedBuffer> Map(size_t bytes, MakeData&& make_data);

  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  char* data_ = nullptr;
  size_t size_ = 0;
};

// [bytes] The alignment GuardedBuffer gives a buffer of `bytes`.
size_t GuardedBufferAlignment(size_t bytes);
// [bytes] The whole pages holding the data of a buffer of `bytes`, and where
// in them the data starts (its end meets the trailing guard page).
size_t GuardedDataPagesBytes(size_t bytes);
size_t GuardedDataOffset(size_t bytes);

}  // namespace kerneleval::cpu
