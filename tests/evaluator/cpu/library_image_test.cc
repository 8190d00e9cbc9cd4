#include "evaluator/cpu/library_image.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace kerneleval::cpu {
namespace {

// An ELF64 shared object's header and program headers, nothing else.
std::string ElfWith(const std::vector<Elf64_Phdr>& headers, uint16_t type = ET_DYN) {
  Elf64_Ehdr header{};
  std::memcpy(header.e_ident, ELFMAG, SELFMAG);
  header.e_ident[EI_CLASS] = ELFCLASS64;
  header.e_type = type;
  header.e_phoff = sizeof(Elf64_Ehdr);
  header.e_phentsize = sizeof(Elf64_Phdr);
  header.e_phnum = static_cast<uint16_t>(headers.size());
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof(header));
  for (const Elf64_Phdr& p : headers) bytes.append(reinterpret_cast<const char*>(&p), sizeof(p));
  return bytes;
}

Elf64_Phdr Segment(uint32_t type, uint32_t flags, uint64_t vaddr, uint64_t memsz) {
  Elf64_Phdr p{};
  p.p_type = type;
  p.p_flags = flags;
  p.p_vaddr = vaddr;
  p.p_memsz = memsz;
  return p;
}

// The layout g++ gave a submission (readelf -l): one writable segment that
// starts inside the RELRO region; only the pages RELRO protects go.
TEST(LibraryImageTest, WritableRangesLeaveOutThePagesRelroProtects) {
  const std::string elf = ElfWith(
      {Segment(PT_LOAD, PF_R, 0, 0x6d8), Segment(PT_LOAD, PF_R | PF_X, 0x1000, 0xbe5),
       Segment(PT_LOAD, PF_R | PF_W, 0x3d98, 0x42a8), Segment(PT_GNU_RELRO, PF_R, 0x3d98, 0x268)});
  absl::StatusOr<std::vector<LibraryImage::Range>> ranges = LibraryImage::WritableRanges(elf, 4096);
  ASSERT_TRUE(ranges.ok()) << ranges.status();
  // The segment starts in RELRO's page (0x3000-0x4000), read-only after
  // relocation; RELRO ends at 0x4000: the rest is .got.plt, .data, .bss.
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_EQ((*ranges)[0].begin, 0x4000u);
  EXPECT_EQ((*ranges)[0].end, 0x3d98u + 0x42a8u);
}

// The loader protects RELRO's pages up to the last whole one: the page
// where RELRO ends (here 0x3000-0x4000, RELRO's tail to 0x3200) stays
// writable and is kept.
TEST(LibraryImageTest, APartialLastRelroPageStaysWritable) {
  const std::string elf = ElfWith(
      {Segment(PT_LOAD, PF_R | PF_W, 0x2e00, 0x1400), Segment(PT_GNU_RELRO, PF_R, 0x2e00, 0x400)});
  absl::StatusOr<std::vector<LibraryImage::Range>> ranges = LibraryImage::WritableRanges(elf, 4096);
  ASSERT_TRUE(ranges.ok()) << ranges.status();
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_EQ((*ranges)[0].begin, 0x3000u);
  EXPECT_EQ((*ranges)[0].end, 0x4200u);
}

TEST(LibraryImageTest, WithoutRelroTheWholeWritableSegmentIsKept) {
  const std::string elf = ElfWith(
      {Segment(PT_LOAD, PF_R | PF_X, 0, 0x2000), Segment(PT_LOAD, PF_R | PF_W, 0x3000, 0x500)});
  absl::StatusOr<std::vector<LibraryImage::Range>> ranges = LibraryImage::WritableRanges(elf, 4096);
  ASSERT_TRUE(ranges.ok()) << ranges.status();
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_EQ((*ranges)[0].begin, 0x3000u);
  EXPECT_EQ((*ranges)[0].end, 0x3500u);
}

TEST(LibraryImageTest, RefusesWhatIsNotAnElf64SharedObject) {
  EXPECT_FALSE(LibraryImage::WritableRanges("#!/bin/sh\n", 4096).ok());
  EXPECT_FALSE(LibraryImage::WritableRanges(ElfWith({}, ET_EXEC), 4096).ok());
  std::string truncated = ElfWith({Segment(PT_LOAD, PF_R | PF_W, 0, 16)});
  truncated.resize(truncated.size() - 8);
  EXPECT_FALSE(LibraryImage::WritableRanges(truncated, 4096).ok());
}

}  // namespace
}  // namespace kerneleval::cpu
