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

absl::StatusOr<GuardedBuffer> GuardedBuffer::Allocate(size_t bytes) {
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
  if (data_pages > 0 && ::mprotect(base + page, data_pages, PROT_READ | PROT_WRITE) != 0) {
    const int error = errno;
    ::munmap(mapping, mapping_bytes);
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot map a buffer of ", bytes, " bytes: ", std::strerror(error)));
  }
  // Ends at the trailing guard page; the start keeps GuardedBufferAlignment.
  char* data = base + page + data_pages - padded;
  return GuardedBuffer(mapping, mapping_bytes, data, bytes);
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
