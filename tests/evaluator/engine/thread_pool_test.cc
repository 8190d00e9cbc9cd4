#include "evaluator/engine/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace kerneleval {
namespace {

TEST(ThreadPoolTest, KeysTakeTurnsAndEachKeysTasksRunInOrder) {
  std::vector<std::string> order;
  std::mutex order_mutex;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  {
    ThreadPool pool(1);  // one thread: the order is the pool's
    // Holds the thread until all are queued. (Held by group-0 itself, the
    // order depended on whether the thread had taken group-0 before group-1
    // was queued: 12 runs in 300 put group-1 before "single".)
    ASSERT_TRUE(pool.Submit("gate", [&] { released.wait(); }));
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(pool.Submit("group", [&, i] {
        std::lock_guard lock(order_mutex);
        order.push_back("group-" + std::to_string(i));
      }));
    }
    ASSERT_TRUE(pool.Submit("single", [&] {
      std::lock_guard lock(order_mutex);
      order.push_back("single");
    }));
    release.set_value();
  }  // the destructor runs what is queued, then joins
  // First in, first out, "single" came fifth.
  EXPECT_EQ(order,
            (std::vector<std::string>{"group-0", "single", "group-1", "group-2", "group-3"}));
}

TEST(ThreadPoolTest, RefusesTasksOnceStoppedAndRunsThoseQueued) {
  int ran = 0;
  {
    ThreadPool pool(2);
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(pool.Submit([&, released] {
        released.wait();
        static std::mutex mutex;
        std::lock_guard lock(mutex);
        ++ran;
      }));
    }
    pool.Stop();
    EXPECT_FALSE(pool.Submit([] {}));
    release.set_value();
  }
  EXPECT_EQ(ran, 4);
}

TEST(ThreadPoolTest, AKeyRunsOnAtMostItsCapAndAnotherKeyTakesTheThreadLeft) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> slow_started{0};
  std::atomic<int> most_running{0};
  std::promise<void> other_ran;
  ThreadPool pool(3, /*max_per_key=*/2);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(pool.Submit("slow", [&] {
      ++slow_started;
      int seen = pool.running("slow");
      int most = most_running.load();
      while (seen > most && !most_running.compare_exchange_weak(most, seen)) {
      }
      released.wait();
    }));
  }
  // Two of the four hold their threads; the third thread stays free for
  // another key, which runs while they wait (without the cap all three
  // threads took "slow" tasks and this waited for the release).
  ASSERT_TRUE(pool.Submit("other", [&] { other_ran.set_value(); }));
  EXPECT_EQ(other_ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  // The second slow task may have been taken and not yet begun.
  while (slow_started.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(slow_started.load(), 2);
  release.set_value();
  // The rest ran once the first two ended (the pool not stopped: the cap
  // still applies to them), never more than two at once.
  while (slow_started.load() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  pool.Join();
  EXPECT_EQ(slow_started.load(), 4);
  EXPECT_LE(most_running.load(), 2);
}

// Two keys' slow tasks hold both general threads and one reserve thread; a
// third key starts at once on the other reserve thread, a fourth waits. One
// key never holds two reserve threads (with one reserve thread, the
// one-spare rule before, the third key waited for a release).
TEST(ThreadPoolTest, ReserveThreadsTakeOnlyKeysWithNothingRunning) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  std::promise<void> third_ran;  // before the pool: its tasks may outlive a failed wait
  ThreadPool pool(2, /*max_per_key=*/2, /*reserve_threads=*/2);
  auto blocking = [&] {
    ++started;
    released.wait();
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool.Submit("a", blocking));
  while (started.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(pool.Submit("b", blocking));
  while (started.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(pool.Submit("c", [&] { third_ran.set_value(); }));
  EXPECT_EQ(third_ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  // "c" done: its reserve thread is free again, but not for "a" or "b",
  // which have tasks running.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(pool.running("a"), 2);
  EXPECT_EQ(pool.running("b"), 1);
  EXPECT_EQ(started.load(), 3);
  ASSERT_TRUE(pool.Submit("d", blocking));
  ASSERT_TRUE(pool.Submit("e", blocking));
  while (started.load() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(started.load(), 4) << "a fifth thread ran";
  EXPECT_EQ(pool.running("d"), 1);
  EXPECT_EQ(pool.running("e"), 0);
  release.set_value();
  pool.Join();
  EXPECT_EQ(started.load(), 8);
}

// A task that only a general thread may take is not left waiting when a
// reserve thread is woken for it (the queue wakes every waiter).
TEST(ThreadPoolTest, AKeysSecondTaskFindsTheIdleGeneralThread) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  std::promise<void> second_ran;  // before the pool, as above
  ThreadPool pool(2, /*max_per_key=*/2, /*reserve_threads=*/4);
  ASSERT_TRUE(pool.Submit("a", [&] {
    ++started;
    released.wait();
  }));
  while (started.load() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // every other thread waits
  ASSERT_TRUE(pool.Submit("a", [&] { second_ran.set_value(); }));
  EXPECT_EQ(second_ran.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  release.set_value();
  pool.Join();
}

TEST(ThreadPoolTest, WithoutACapOneKeyTakesEveryThread) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> started{0};
  {
    ThreadPool pool(3);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(pool.Submit("only", [&] {
        ++started;
        released.wait();
      }));
    }
    while (started.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    release.set_value();
  }
  EXPECT_EQ(started.load(), 3);
}

}  // namespace
}  // namespace kerneleval
