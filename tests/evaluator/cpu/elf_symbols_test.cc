#include "evaluator/cpu/elf_symbols.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// One function of each kind the loader calls, in this test's executable.
// g++ -O2 may merge a constructor with the file's static initialisers into
// one `_GLOBAL__sub_I_<its name>` (and a destructor alike), so the tests
// look for the names as parts of the entries'.
volatile int kerneleval_test_calls = 0;
extern "C" __attribute__((constructor)) void kerneleval_test_at_load() {
  kerneleval_test_calls = kerneleval_test_calls + 1;
}
extern "C" __attribute__((destructor)) void kerneleval_test_at_exit() {
  kerneleval_test_calls = kerneleval_test_calls + 1;
}
extern "C" int kerneleval_test_implementation() { return 1; }
extern "C" int (*kerneleval_test_resolver())() { return &kerneleval_test_implementation; }
extern "C" int kerneleval_test_indirect() __attribute__((ifunc("kerneleval_test_resolver")));

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

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool HasOneNaming(const std::vector<std::string>& names, const std::string& part) {
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& name) { return name.find(part) != std::string::npos; });
}

// The host build refuses a library with load-time functions beyond
// frame_dummy and __do_global_dtors_aux (sweep 43): each kind is found by
// name, through the arrays' relocations.
TEST(ElfSymbolsTest, FindsTheFunctionsTheLoaderCallsInThisExecutable) {
  const std::string elf = ReadFile("/proc/self/exe");
  ASSERT_FALSE(elf.empty());
  absl::StatusOr<LoadTimeFunctions> found = ReadLoadTimeFunctions(elf);
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_TRUE(Has(found->init_array, "frame_dummy"));
  EXPECT_TRUE(HasOneNaming(found->init_array, "kerneleval_test_at_load"));
  EXPECT_FALSE(HasOneNaming(found->init_array, "kerneleval_test_at_exit"));
  EXPECT_TRUE(Has(found->fini_array, "__do_global_dtors_aux"));
  EXPECT_TRUE(HasOneNaming(found->fini_array, "kerneleval_test_at_exit"));
  EXPECT_TRUE(Has(found->indirect, "kerneleval_test_indirect"));
  EXPECT_FALSE(Has(found->indirect, "kerneleval_test_implementation"));
  EXPECT_TRUE(found->preinit_array.empty());
  EXPECT_TRUE(found->in_init_sections.empty()) << found->in_init_sections.front();
  EXPECT_EQ(kerneleval_test_indirect(), 1);  // the resolver's pick
}

TEST(ElfSymbolsTest, RefusesWhatIsNotAWholeElf64File) {
  EXPECT_TRUE(absl::IsFailedPrecondition(UndefinedWeakSymbols("").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(UndefinedWeakSymbols("#!/bin/sh\necho\n").status()));
  const std::string elf = ReadFile("/proc/self/exe");
  ASSERT_GT(elf.size(), 4096u);
  // Cut before the section headers (at the end of a g++ executable).
  absl::StatusOr<std::vector<std::string>> cut = UndefinedWeakSymbols(elf.substr(0, 4096));
  EXPECT_TRUE(absl::IsFailedPrecondition(cut.status())) << cut.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadLoadTimeFunctions("").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadLoadTimeFunctions(elf.substr(0, 4096)).status()));
}

}  // namespace
}  // namespace kerneleval::cpu
