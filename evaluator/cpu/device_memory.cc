#include "evaluator/cpu/device_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kerneleval::cpu {
namespace {

size_t PageSize() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }
size_t RoundUp(size_t value, size_t unit) { return (value + unit - 1) / unit * unit; }

}  // namespace

size_t GuardedBufferAlignment(size_t bytes) {
  const size_t padded = RoundUp(bytes == 0 ? 16 : bytes, 16);
  const size_t lowest_bit = padded & (~padded + 1);
  return lowest_bit > 256 ? 256 : lowest_bit;
}

size_t GuardedDataPagesBytes(size_t bytes) {
  return RoundUp(bytes == 0 ? 0 : RoundUp(bytes, 16), PageSize());
}

size_t GuardedDataOffset(size_t bytes) {
  return GuardedDataPagesBytes(bytes) - (bytes == 0 ? 0 : RoundUp(bytes, 16));
}

// Reserves guard page + data pages + guard page (no access), then makes the
// data pages usable with `make_data(start, length)` (which returns false and
// sets errno on failure).
template <typename MakeData>
absl::StatusOr<GuardedBuffer> GuardedBuffer::Map(size_t bytes, MakeData&& make_data) {
  const size_t page = PageSize();
  const size_t padded = bytes == 0 ? 0 : RoundUp(bytes, 16);
  const size_t data_pages = RoundUp(padded, page);
  if (padded < bytes || data_pages > (SIZE_MAX >> 2)) {
    return absl::ResourceExhaustedError(absl::StrCat("buffer of ", bytes, " bytes is too large"));
  }
  const size_t mapping_bytes = data_pages + 2 * page;
  void* mapping =
      ::mmap(nullptr, mapping_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map a buffer of ", bytes, " bytes: ", std::strerror(errno)));
  }
  char* base = static_cast<char*>(mapping);
  if (data_pages > 0 && !make_data(base + page, data_pages)) {
    const int error = errno;
    ::munmap(mapping, mapping_bytes);
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map a buffer of ", bytes, " bytes: ", std::strerror(error)));
  }
  // Ends at the trailing guard page; the start keeps GuardedBufferAlignment.
  return GuardedBuffer(mapping, mapping_bytes, base + page + data_pages - padded, bytes);
}

absl::StatusOr<GuardedBuffer> GuardedBuffer::Allocate(size_t bytes) {
  return Map(bytes, [](char* start, size_t length) {
    return ::mprotect(start, length, PROT_READ | PROT_WRITE) == 0;
  });
}

absl::StatusOr<GuardedBuffer> GuardedBuffer::MapShared(int fd, uint64_t file_offset, size_t bytes) {
  if (file_offset % PageSize() != 0) {
    return absl::InvalidArgumentError("shared buffer offset is not page-aligned");
  }
  return Map(bytes, [&](char* start, size_t length) {
    return ::mmap(start, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                  static_cast<off_t>(file_offset)) != MAP_FAILED;
  });
}

GuardedBuffer::GuardedBuffer(GuardedBuffer&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

GuardedBuffer& GuardedBuffer::operator=(GuardedBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

GuardedBuffer::~GuardedBuffer() { Release(); }

void GuardedBuffer::Release() noexcept {
  if (mapping_) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
}

}  // namespace kerneleval::cpu
