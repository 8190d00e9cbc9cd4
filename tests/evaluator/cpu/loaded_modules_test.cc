#include "evaluator/cpu/loaded_modules.h"

#include <gtest/gtest.h>
#include <link.h>

#include <cstdint>
#include <thread>

namespace kerneleval::cpu {
namespace {

int writable_global = 7;
thread_local int thread_local_value = 3;  // .tdata: initialised
thread_local int thread_local_zeroed[4];  // .tbss: zero-initialised

void CodeOfThisTest() {}

TEST(LoadedModulesTest, FindsTheModuleHoldingAnAddressAndItsWritableData) {
  const auto code = reinterpret_cast<uintptr_t>(&CodeOfThisTest);
  const std::optional<LoadedModule> module =
      FindLoadedModule([code](const LoadedModule& m) { return m.Holds(code); });
  ASSERT_TRUE(module.has_value());
  const auto global = reinterpret_cast<uintptr_t>(&writable_global);
  bool in_writable_segment = false;
  for (const LoadedSegment& segment : module->SegmentsOf(PT_LOAD, PF_W)) {
    EXPECT_NE(segment.flags & PF_W, 0u);
    in_writable_segment |= global - segment.begin < segment.bytes;
  }
  EXPECT_TRUE(in_writable_segment);
  // The code itself lies in no writable segment.
  for (const LoadedSegment& segment : module->SegmentsOf(PT_LOAD, PF_W)) {
    EXPECT_FALSE(code - segment.begin < segment.bytes);
  }
  // Found again by its path.
  const std::string path = module->path;
  const std::optional<LoadedModule> by_path =
      FindLoadedModule([&path](const LoadedModule& m) { return m.path == path; });
  ASSERT_TRUE(by_path.has_value());
  EXPECT_TRUE(by_path->Holds(code));
}

TEST(LoadedModulesTest, GivesEachThreadItsOwnInstanceOfTheTlsBlock) {
  auto tls_of_this_thread = [] {
    thread_local_value += 1;  // touched, so allocated
    thread_local_zeroed[1] += 1;
    const auto code = reinterpret_cast<uintptr_t>(&CodeOfThisTest);
    const std::optional<LoadedModule> module =
        FindLoadedModule([code](const LoadedModule& m) { return m.Holds(code); });
    EXPECT_TRUE(module.has_value());
    const std::vector<LoadedSegment> tls = module->SegmentsOf(PT_TLS);
    EXPECT_EQ(tls.size(), 1u);
    const auto begin = reinterpret_cast<uintptr_t>(ThisThreadsTlsBlock(*module));
    const auto variable = reinterpret_cast<uintptr_t>(&thread_local_value);
    EXPECT_TRUE(!tls.empty() && variable - begin < tls.front().bytes);
    EXPECT_NE(module->tls_module_id, 0u);
    // The initialised part comes first: the zero-initialised variable lies
    // past the file's bytes, the initialised one before them.
    const auto zeroed = reinterpret_cast<uintptr_t>(&thread_local_zeroed[0]);
    EXPECT_TRUE(!tls.empty() && tls.front().file_bytes <= tls.front().bytes);
    EXPECT_TRUE(!tls.empty() && variable - begin < tls.front().file_bytes);
    EXPECT_TRUE(!tls.empty() && zeroed - begin >= tls.front().file_bytes &&
                zeroed - begin < tls.front().bytes);
    return begin;
  };
  const uintptr_t mine = tls_of_this_thread();
  uintptr_t other = 0;
  std::thread([&] { other = tls_of_this_thread(); }).join();
  EXPECT_NE(mine, 0u);
  EXPECT_NE(other, 0u);
  EXPECT_NE(mine, other);
}

TEST(LoadedModulesTest, NothingMatchesNothing) {
  EXPECT_FALSE(FindLoadedModule([](const LoadedModule&) { return false; }).has_value());
  EXPECT_FALSE(FindLoadedModule([](const LoadedModule& m) { return m.Holds(0); }).has_value());
}

}  // namespace
}  // namespace kerneleval::cpu
