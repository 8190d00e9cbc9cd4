#include "evaluator/cpu/library_image.h"

#include <elf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "evaluator/cpu/remote_pages.h"

namespace kerneleval::cpu {
namespace {

// The program headers sit at the start of the file: this much is read.
constexpr size_t kHeaderBytes = 64 << 10;

absl::Status TransferError(const char* call, uint64_t address, uint64_t bytes, ssize_t moved) {
  if (moved < 0 && (errno == EPERM || errno == EACCES)) {
    return absl::PermissionDeniedError(absl::StrCat(call, ": ", std::strerror(errno)));
  }
  if (moved < 0 && errno == ENOSYS) {
    return absl::UnimplementedError(absl::StrCat(call, ": ", std::strerror(errno)));
  }
  return absl::DataLossError(absl::StrCat(
      call, " of ", bytes, " bytes at 0x", absl::Hex(address), ": ",
      moved < 0 ? std::strerror(errno) : absl::StrCat("only ", moved, " bytes moved")));
}

}  // namespace

absl::StatusOr<std::vector<LibraryImage::Range>> LibraryImage::WritableRanges(
    const std::string& elf, uint64_t page_bytes) {
  Elf64_Ehdr header;
  if (elf.size() < sizeof(header)) return absl::FailedPreconditionError("not an ELF file");
  std::memcpy(&header, elf.data(), sizeof(header));
  if (std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_type != ET_DYN || header.e_phentsize != sizeof(Elf64_Phdr)) {
    return absl::FailedPreconditionError("not an ELF64 shared object");
  }
  if (header.e_phoff > elf.size() ||
      header.e_phnum > (elf.size() - header.e_phoff) / sizeof(Elf64_Phdr)) {
    return absl::FailedPreconditionError("program headers past the end of the file");
  }
  std::vector<Range> writable;
  Range relro;
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr p;
    std::memcpy(&p, elf.data() + header.e_phoff + i * sizeof(Elf64_Phdr), sizeof(p));
    if (p.p_vaddr > UINT64_MAX / 2 || p.p_memsz > UINT64_MAX / 2) {
      return absl::FailedPreconditionError("a segment out of range");
    }
    if (p.p_type == PT_LOAD && (p.p_flags & PF_W) != 0 && p.p_memsz > 0) {
      writable.push_back({p.p_vaddr, p.p_vaddr + p.p_memsz});
    }
    if (p.p_type == PT_GNU_RELRO) {
      // The loader protects whole pages only: the start rounded down and
      // the end rounded down (glibc's _dl_protect_relro).
      relro.begin = p.p_vaddr / page_bytes * page_bytes;
      relro.end = (p.p_vaddr + p.p_memsz) / page_bytes * page_bytes;
    }
  }
  std::vector<Range> ranges;
  for (const Range& r : writable) {
    if (relro.end <= relro.begin || relro.end <= r.begin || relro.begin >= r.end) {
      ranges.push_back(r);
      continue;
    }
    if (r.begin < relro.begin) ranges.push_back({r.begin, relro.begin});
    if (relro.end < r.end) ranges.push_back({relro.end, r.end});
  }
  return ranges;
}

absl::StatusOr<LibraryImage::Layout> LibraryImage::ReadLayout(const std::string& library_path) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::string headers(kHeaderBytes, '\0');
  {
    std::ifstream file(library_path, std::ios::binary);
    if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", library_path));
    file.read(headers.data(), static_cast<std::streamsize>(headers.size()));
    headers.resize(static_cast<size_t>(file.gcount()));
  }
  absl::StatusOr<std::vector<Range>> ranges = WritableRanges(headers, page);
  if (!ranges.ok()) return ranges.status();
  struct stat file_stat {};
  if (::stat(library_path.c_str(), &file_stat) != 0) {
    return absl::NotFoundError(absl::StrCat("stat ", library_path, ": ", std::strerror(errno)));
  }
  return Layout{*std::move(ranges), static_cast<uint64_t>(file_stat.st_dev),
                static_cast<uint64_t>(file_stat.st_ino)};
}

absl::StatusOr<LibraryImage> LibraryImage::Capture(pid_t pid, const Layout& layout) {
  // The base: where the runner mapped the file's offset 0. Matched by
  // device and inode, not by path (the runner sees its own mount namespace).
  // Kernel code could map the file again (its static initialisers ran): a
  // second mapping at offset 0 makes the base ambiguous and is refused.
  absl::StatusOr<std::vector<ProcessMapping>> mappings = ReadProcessMappings(pid);
  if (!mappings.ok()) return mappings.status();
  int found = 0;
  uint64_t base = 0;
  for (const ProcessMapping& m : *mappings) {
    if (m.inode != layout.inode || m.major_id != major(layout.device) ||
        m.minor_id != minor(layout.device) || m.offset != 0) {
      continue;
    }
    ++found;
    base = m.begin;
  }
  if (found != 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the compiled kernel's library is mapped ", found,
        " times at its start in the kernel's process (once when loaded; more means the "
        "kernel code mapped it again)"));
  }
  LibraryImage image;
  uint64_t total = 0;
  for (const Range& r : layout.ranges) {
    total += r.end - r.begin;
    if (total > kMaxBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "its __device__ variables and other writable data take more than ", kMaxBytes >> 20,
          " MiB, which the CPU backend keeps to restore before every timed run"));
    }
    Copy copy{base + r.begin, std::string(r.end - r.begin, '\0')};
    iovec local{copy.bytes.data(), copy.bytes.size()};
    iovec remote{reinterpret_cast<void*>(copy.address), copy.bytes.size()};
    const ssize_t moved = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (moved != static_cast<ssize_t>(copy.bytes.size())) {
      return TransferError("process_vm_readv", copy.address, copy.bytes.size(), moved);
    }
    image.copies_.push_back(std::move(copy));
  }
  return image;
}

absl::Status LibraryImage::Restore(pid_t pid) const {
  for (const Copy& copy : copies_) {
    iovec local{const_cast<char*>(copy.bytes.data()), copy.bytes.size()};
    iovec remote{reinterpret_cast<void*>(copy.address), copy.bytes.size()};
    const ssize_t moved = ::process_vm_writev(pid, &local, 1, &remote, 1, 0);
    if (moved != static_cast<ssize_t>(copy.bytes.size())) {
      return TransferError("process_vm_writev", copy.address, copy.bytes.size(), moved);
    }
  }
  return absl::OkStatus();
}

}  // namespace kerneleval::cpu
