#include "evaluator/cpu/elf_symbols.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace kerneleval::cpu {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// This test's own executable (a PIE linked by g++): its dynamic symbol table
// refers weakly to the linker's names, as every library the host build
// links does (HostCompiler allows those).
TEST(ElfSymbolsTest, FindsTheLinkersWeakReferencesInThisExecutable) {
  const std::string elf = ReadFile("/proc/self/exe");
  ASSERT_FALSE(elf.empty());
  absl::StatusOr<std::vector<std::string>> names = UndefinedWeakSymbols(elf);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_NE(std::find(names->begin(), names->end(), "__gmon_start__"), names->end());
  EXPECT_NE(std::find(names->begin(), names->end(), "_ITM_registerTMCloneTable"), names->end());
  // Defined symbols and strong references are not listed.
  EXPECT_EQ(std::find(names->begin(), names->end(), "main"), names->end());
  EXPECT_EQ(std::find(names->begin(), names->end(), "malloc"), names->end());
}

TEST(ElfSymbolsTest, RefusesWhatIsNotAWholeElf64File) {
  EXPECT_TRUE(absl::IsFailedPrecondition(UndefinedWeakSymbols("").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(UndefinedWeakSymbols("#!/bin/sh\necho\n").status()));
  const std::string elf = ReadFile("/proc/self/exe");
  ASSERT_GT(elf.size(), 4096u);
  // Cut before the section headers (at the end of a g++ executable).
  absl::StatusOr<std::vector<std::string>> cut = UndefinedWeakSymbols(elf.substr(0, 4096));
  EXPECT_TRUE(absl::IsFailedPrecondition(cut.status())) << cut.status();
}

}  // namespace
}  // namespace kerneleval::cpu
