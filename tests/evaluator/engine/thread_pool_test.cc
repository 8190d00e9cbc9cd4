#include "evaluator/engine/thread_pool.h"

#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <string>
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

}  // namespace
}  // namespace kerneleval
