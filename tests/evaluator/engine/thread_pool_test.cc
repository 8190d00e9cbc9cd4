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
    ASSERT_TRUE(pool.Submit("group", [&] {
      released.wait();  // holds the thread until all are queued
      std::lock_guard lock(order_mutex);
      order.push_back("group-0");
    }));
    for (int i = 1; i < 4; ++i) {
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
