#include "evaluator/cpu/remote_pages.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"

namespace kerneleval::cpu {
namespace {

constexpr uint64_t kPageBytes = 4096;
// /proc/PID/pagemap: one 64-bit entry per page; bit 63 present in RAM,
// bit 62 swapped out (Documentation/admin-guide/mm/pagemap.rst). Both are
// readable without privileges (the frame numbers are not).
constexpr uint64_t kPagePresent = uint64_t{1} << 63;
constexpr uint64_t kPageSwapped = uint64_t{1} << 62;
constexpr size_t kEntriesPerRead = 4096;
constexpr size_t kPagesPerWrite = 1024;  // IOV_MAX

// A page of zeros, the source of every write.
const char kZeroPage[kPageBytes] = {};

// The private anonymous mappings of `pid` (no path, "p"), in address order,
// adjacent ones merged.
absl::StatusOr<std::vector<AddressRange>> PrivateAnonymousMappings(pid_t pid) {
  absl::StatusOr<std::vector<ProcessMapping>> mappings = ReadProcessMappings(pid);
  if (!mappings.ok()) return mappings.status();
  std::vector<AddressRange> ranges;
  for (const ProcessMapping& m : *mappings) {
    // [heap], [stack] and the like have a path; so do files.
    if (m.perms.size() != 4 || m.perms[3] != 'p' || !m.path.empty() || m.inode != 0) continue;
    if (!ranges.empty() && ranges.back().end == m.begin) {
      ranges.back().end = m.end;
    } else {
      ranges.push_back({.begin = m.begin, .end = m.end});
    }
  }
  return ranges;
}

// Whether [begin, end) lies inside one of `mappings` (sorted, merged).
bool Inside(const std::vector<AddressRange>& mappings, const AddressRange& range) {
  auto after = std::upper_bound(
      mappings.begin(), mappings.end(), range.begin,
      [](uint64_t address, const AddressRange& mapping) { return address < mapping.begin; });
  if (after == mappings.begin()) return false;
  const AddressRange& holder = *std::prev(after);
  return range.begin >= holder.begin && range.end <= holder.end;
}

}  // namespace

absl::StatusOr<std::vector<ProcessMapping>> ReadProcessMappings(pid_t pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/maps");
  std::ifstream maps(path);
  if (!maps) return absl::DataLossError(absl::StrCat("cannot read ", path));
  std::vector<ProcessMapping> mappings;
  for (std::string line; std::getline(maps, line);) {
    ProcessMapping m;
    unsigned long long begin = 0, end = 0, offset = 0, inode = 0;
    char perms[8] = {};
    int path_at = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %x:%x %llu %n", &begin, &end, perms, &offset,
                    &m.major_id, &m.minor_id, &inode, &path_at) != 7) {
      continue;
    }
    m.begin = begin;
    m.end = end;
    m.perms = perms;
    m.offset = offset;
    m.inode = inode;
    if (path_at > 0) m.path = line.substr(static_cast<size_t>(path_at));
    mappings.push_back(std::move(m));
  }
  return mappings;
}

absl::StatusOr<uint64_t> ZeroTouchedPages(pid_t pid, std::span<const AddressRange> ranges,
                                          uint64_t max_bytes) {
  uint64_t total = 0;
  for (const AddressRange& range : ranges) {
    if (range.begin % kPageBytes != 0 || range.end % kPageBytes != 0 || range.end < range.begin ||
        range.end - range.begin > max_bytes - total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fiber stack range [0x", absl::Hex(range.begin), ", 0x", absl::Hex(range.end),
          ") is not page-aligned or exceeds ", max_bytes, " bytes in all"));
    }
    total += range.end - range.begin;
  }
  // Only the process's own private anonymous memory, as its fiber stacks
  // are: a range reported over a buffer (shared with the worker through
  // the memfd, or an alias of it made with mremap) would have zeroed the
  // poison of its outputs after the worker wrote it.
  absl::StatusOr<std::vector<AddressRange>> anonymous = PrivateAnonymousMappings(pid);
  if (!anonymous.ok()) return anonymous.status();
  for (const AddressRange& range : ranges) {
    if (range.begin != range.end && !Inside(*anonymous, range)) {
      return absl::InvalidArgumentError(
          absl::StrCat("fiber stack range [0x", absl::Hex(range.begin), ", 0x",
                       absl::Hex(range.end), ") is not private anonymous memory of the process"));
    }
  }
  const std::string path = absl::StrCat("/proc/", pid, "/pagemap");
  const int pagemap = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (pagemap < 0) return absl::UnavailableError(absl::StrCat(path, ": ", std::strerror(errno)));
  const absl::Cleanup close_pagemap = [pagemap] { ::close(pagemap); };
  std::vector<uint64_t> entries(kEntriesPerRead);
  std::vector<iovec> local(kPagesPerWrite, iovec{const_cast<char*>(kZeroPage), kPageBytes});
  std::vector<iovec> remote;
  remote.reserve(kPagesPerWrite);
  uint64_t zeroed = 0;
  auto flush = [&]() -> absl::Status {
    if (remote.empty()) return absl::OkStatus();
    const ssize_t moved =
        ::process_vm_writev(pid, local.data(), remote.size(), remote.data(), remote.size(), 0);
    if (moved != static_cast<ssize_t>(remote.size() * kPageBytes)) {
      return absl::DataLossError(absl::StrCat(
          "process_vm_writev of ", remote.size(), " stack pages from 0x",
          absl::Hex(reinterpret_cast<uintptr_t>(remote.front().iov_base)), ": ",
          moved < 0 ? std::strerror(errno) : absl::StrCat("only ", moved, " bytes moved")));
    }
    zeroed += remote.size();
    remote.clear();
    return absl::OkStatus();
  };
  for (const AddressRange& range : ranges) {
    for (uint64_t first = range.begin / kPageBytes; first < range.end / kPageBytes;) {
      const size_t count =
          static_cast<size_t>(std::min<uint64_t>(kEntriesPerRead, range.end / kPageBytes - first));
      const ssize_t read = ::pread(pagemap, entries.data(), count * sizeof(uint64_t),
                                   static_cast<off_t>(first * sizeof(uint64_t)));
      if (read != static_cast<ssize_t>(count * sizeof(uint64_t))) {
        return absl::DataLossError(
            absl::StrCat(path, ": ", read < 0 ? std::strerror(errno) : "short read"));
      }
      for (size_t k = 0; k < count; ++k) {
        if ((entries[k] & (kPagePresent | kPageSwapped)) == 0) continue;
        remote.push_back(iovec{reinterpret_cast<void*>((first + k) * kPageBytes), kPageBytes});
        if (remote.size() == kPagesPerWrite) {
          if (absl::Status s = flush(); !s.ok()) return s;
        }
      }
      first += count;
    }
  }
  if (absl::Status s = flush(); !s.ok()) return s;
  return zeroed;
}

}  // namespace kerneleval::cpu
