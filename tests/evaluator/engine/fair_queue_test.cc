#include "evaluator/engine/fair_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace kerneleval {
namespace {

TEST(FairQueueTest, ServesClientsRoundRobin) {
  FairQueue<int> queue(100);
  for (int i = 0; i < 64; ++i) ASSERT_TRUE(queue.Push("group", i));
  ASSERT_TRUE(queue.Push("single", 1000));
  // The single request is served second, not 65th.
  EXPECT_EQ(queue.Pop(), 0);
  EXPECT_EQ(queue.Pop(), 1000);
  EXPECT_EQ(queue.Pop(), 1);
}

TEST(FairQueueTest, KeepsOrderWithinAClient) {
  FairQueue<int> queue(10);
  queue.Push("a", 1);
  queue.Push("b", 10);
  queue.Push("a", 2);
  queue.Push("b", 20);
  std::vector<int> order;
  for (int i = 0; i < 4; ++i) order.push_back(*queue.Pop());
  EXPECT_EQ(order, (std::vector<int>{1, 10, 2, 20}));
}

TEST(FairQueueTest, RefusesWhenFullAndReportsPosition) {
  FairQueue<int> queue(2);
  EXPECT_EQ(queue.Push("a", 1), 0u);
  EXPECT_EQ(queue.Push("b", 2), 1u);
  // Full: clients with something queued wait their turn.
  EXPECT_EQ(queue.Push("a", 3), std::nullopt);
  EXPECT_EQ(queue.Push("b", 3), std::nullopt);
  queue.Pop();  // a's
  EXPECT_EQ(queue.Push("a", 3), 1u);
}

// One client that keeps the queue full (a request sent again for every one
// answered) locked every other client out: a client may hold its share, and
// one with nothing queued is admitted past a full queue, up to twice its
// capacity in all.
TEST(FairQueueTest, OneClientCannotLockTheOthersOut) {
  FairQueue<int> queue(4, /*client_share=*/2);
  EXPECT_EQ(queue.client_share(), 2u);
  EXPECT_EQ(queue.Push("greedy", 1), 0u);
  EXPECT_EQ(queue.Push("greedy", 2), 1u);
  EXPECT_EQ(queue.Push("greedy", 3), std::nullopt) << "past its share";
  EXPECT_EQ(queue.QueuedFor("greedy"), 2u);
  EXPECT_EQ(queue.Push("b", 4), 2u);
  EXPECT_EQ(queue.Push("b", 5), 3u);  // full now
  EXPECT_EQ(queue.Push("b", 6), std::nullopt);
  // Newcomers still get in, one task each, until twice the capacity.
  for (int client = 0; client < 4; ++client) {
    EXPECT_EQ(queue.Push("new" + std::to_string(client), 10 + client), 4u + client);
  }
  EXPECT_EQ(queue.Push("late", 20), std::nullopt);
  EXPECT_EQ(queue.size(), 8u);
  // Round-robin serves the newcomers before the greedy client's second task.
  std::vector<int> served;
  for (int i = 0; i < 8; ++i) served.push_back(*queue.Pop());
  EXPECT_EQ(served, (std::vector<int>{1, 4, 10, 11, 12, 13, 2, 5}));
}

TEST(FairQueueTest, TryPopOtherThanSkipsOneClientAndKeepsTheRoundRobin) {
  FairQueue<int> queue(10);
  EXPECT_EQ(queue.TryPopOtherThan("a"), std::nullopt);  // empty
  queue.Push("a", 1);
  queue.Push("a", 2);
  EXPECT_EQ(queue.TryPopOtherThan("a"), std::nullopt);  // only a's
  queue.Push("b", 10);
  queue.Push("c", 20);
  queue.Push("b", 11);
  EXPECT_EQ(queue.TryPopOtherThan("a"), 10);  // b, the first other in line
  EXPECT_EQ(queue.size(), 4u);
  // b went to the back: a, c, b.
  EXPECT_EQ(queue.Pop(), 1);
  EXPECT_EQ(queue.Pop(), 20);
  EXPECT_EQ(queue.Pop(), 11);
  EXPECT_EQ(queue.Pop(), 2);
  EXPECT_EQ(queue.size(), 0u);
  // Only tasks the predicate accepts, looking at each client's first.
  queue.Push("b", 10);
  queue.Push("c", 21);
  EXPECT_EQ(queue.TryPopOtherThan("a", [](int task) { return task % 2 == 1; }), 21);
  EXPECT_EQ(queue.TryPopOtherThan("a", [](int task) { return task % 2 == 1; }), std::nullopt);
  EXPECT_EQ(queue.Pop(), 10);
}

TEST(FairQueueTest, RemoveTakesOneQueuedTaskOutAndKeepsTheRest) {
  FairQueue<int> queue(10);
  queue.Push("a", 1);
  queue.Push("b", 10);
  queue.Push("a", 2);
  queue.Push("c", 100);
  EXPECT_TRUE(queue.Remove("b", 10));  // b's only task: b leaves the line
  EXPECT_FALSE(queue.Remove("b", 10));
  EXPECT_FALSE(queue.Remove("a", 10));  // not a's
  EXPECT_TRUE(queue.Remove("a", 2));
  EXPECT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue.Pop(), 1);
  EXPECT_EQ(queue.Pop(), 100);
  EXPECT_EQ(queue.size(), 0u);
  EXPECT_FALSE(queue.Remove("a", 1));  // popped already
  queue.Push("b", 20);
  EXPECT_EQ(queue.Pop(), 20);  // no stale place in line left for b
}

TEST(FairQueueTest, CloseWakesBlockedPoppersAndDrains) {
  FairQueue<int> queue(4);
  queue.Push("a", 7);
  std::optional<int> first, second;
  std::thread popper([&] {
    first = queue.Pop();
    second = queue.Pop();  // blocks until Close
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  queue.Close();
  popper.join();
  EXPECT_EQ(first, 7);
  EXPECT_EQ(second, std::nullopt);
  EXPECT_EQ(queue.Push("a", 1), std::nullopt);
}

TEST(FairQueueTest, PopWithEligibilityServesTheFirstEligibleClientAndWaitsForNotify) {
  FairQueue<int> queue(10);
  std::atomic<int> ready_below{0};  // tasks below it are eligible
  auto eligible = [&](int task) { return task < ready_below.load(); };
  queue.Push("slow", 5);
  queue.Push("slow", 1);  // behind its client's first task: not considered
  queue.Push("quick", 2);
  ready_below = 3;
  EXPECT_EQ(queue.Pop(eligible), 2);  // "slow"'s first task (5) is not eligible
  std::optional<int> next;
  std::thread popper([&] { next = queue.Pop(eligible); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(next.has_value());  // waits: nothing eligible
  ready_below = 6;
  queue.Notify();
  popper.join();
  EXPECT_EQ(next, 5);
  EXPECT_EQ(queue.size(), 1u);
  // Closed: any task, eligible or not, then nothing.
  ready_below = 0;
  queue.Close();
  EXPECT_EQ(queue.Pop(eligible), 1);
  EXPECT_EQ(queue.Pop(eligible), std::nullopt);
}

}  // namespace
}  // namespace kerneleval
