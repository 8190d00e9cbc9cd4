#include "evaluator/engine/byte_budget.h"

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <thread>
#include <vector>

namespace kerneleval {
namespace {

TEST(ByteBudgetTest, RefusesPastTheLimitWhileOthersHoldAndReleasesOnDestruction) {
  ByteBudget budget(100);
  std::optional<ByteBudget::Hold> a = budget.TryHold(60);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(budget.held(), 60u);
  EXPECT_FALSE(budget.TryHold(41).has_value());
  {
    std::optional<ByteBudget::Hold> b = budget.TryHold(40);
    ASSERT_TRUE(b.has_value());
    EXPECT_EQ(budget.held(), 100u);
    EXPECT_FALSE(budget.TryHold(1).has_value());
  }
  EXPECT_EQ(budget.held(), 60u);
  a.reset();
  EXPECT_EQ(budget.held(), 0u);
}

TEST(ByteBudgetTest, OneRequestOverTheLimitIsAdmittedWhenNothingIsHeld) {
  ByteBudget budget(100);
  std::optional<ByteBudget::Hold> big = budget.TryHold(500);
  ASSERT_TRUE(big.has_value());
  EXPECT_FALSE(budget.TryHold(1).has_value());
  big.reset();
  EXPECT_TRUE(budget.TryHold(1).has_value());
}

TEST(ByteBudgetTest, MovedHoldsReleaseOnceAndOutliveTheBudget) {
  std::optional<ByteBudget::Hold> kept;
  {
    ByteBudget budget(100);
    std::optional<ByteBudget::Hold> a = budget.TryHold(30);
    ASSERT_TRUE(a.has_value());
    ByteBudget::Hold moved = std::move(*a);
    a.reset();  // the moved-from hold releases nothing
    EXPECT_EQ(budget.held(), 30u);
    std::optional<ByteBudget::Hold> b = budget.TryHold(20);
    ASSERT_TRUE(b.has_value());
    moved = std::move(*b);  // releases its 30, takes b's 20
    EXPECT_EQ(budget.held(), 20u);
    kept.emplace(std::move(moved));
  }
  EXPECT_EQ(kept->bytes(), 20u);
  kept.reset();  // after the budget: no use after free
}

TEST(ByteBudgetTest, ConcurrentHoldsNeverPassTheLimit) {
  ByteBudget budget(1000);
  std::optional<ByteBudget::Hold> first = budget.TryHold(10);  // others are held from here on
  std::atomic<bool> over{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        std::optional<ByteBudget::Hold> hold = budget.TryHold(97);
        if (budget.held() > 1000) over = true;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_FALSE(over.load());
  first.reset();
  EXPECT_EQ(budget.held(), 0u);
}

}  // namespace
}  // namespace kerneleval
