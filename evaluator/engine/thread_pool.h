// A fixed pool of threads running submitted tasks: round-robin across the
// keys they are submitted under, first in, first out within a key (the
// engine's compile stage keys them by client, so one client's group of 128
// slow compiles does not hold every other client's compile behind it, and
// the Compile RPC takes the same turns). With a cap per key, one key's
// tasks run on at most that many threads at once. Reserve threads, beyond
// those, run only a task whose key has nothing running: a client arriving
// while other clients' slow compiles hold every general thread starts at
// once instead of waiting up to the compile limit (30 s) for one, and one
// client holds at most one reserve thread, so R reserve threads serve R
// such clients at once. The destructor runs the tasks already queued, then
// joins; it never throws.
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "evaluator/engine/fair_queue.h"

namespace kerneleval {

class ThreadPool {
 public:
  // `threads` general threads; `max_per_key` > 0: at most that many run one
  // key's tasks at once (0: no cap); `reserve_threads` more, each taking only
  // a task of a key with no task running.
  explicit ThreadPool(int threads, int max_per_key = 0, int reserve_threads = 0)
      : max_per_key_(max_per_key),
        idle_general_(threads),  // idle until they take a task, started or not yet
        tasks_(std::numeric_limits<size_t>::max()) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(/*reserve=*/false); });
    for (int i = 0; i < reserve_threads; ++i) {
      threads_.emplace_back([this] { Loop(/*reserve=*/true); });
    }
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() { Join(); }

  // False once Stop() was called: the task was not queued.
  [[nodiscard]] bool Submit(std::function<void()> task) { return Submit({}, std::move(task)); }
  [[nodiscard]] bool Submit(const std::string& key, std::function<void()> task) {
    return tasks_.Push(key, KeyedTask{key, std::move(task)}).has_value();
  }

  // No new tasks; queued ones still run (the cap no longer applies). Idempotent.
  void Stop() { tasks_.Close(); }
  // Stop(), then waits until the queued tasks ran and the threads ended.
  // Idempotent; not from one of the pool's own tasks.
  void Join() {
    Stop();
    std::lock_guard lock(join_mutex_);
    for (auto& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }

  // Tasks of `key` running now (tests).
  int running(const std::string& key) const {
    std::lock_guard lock(running_mutex_);
    const auto it = running_.find(key);
    return it == running_.end() ? 0 : it->second;
  }

 private:
  struct KeyedTask {
    std::string key;
    std::function<void()> run;
  };

  void Loop(bool reserve) {
    for (;;) {
      // The queue accepts a task under its lock and takes it at once, so a
      // key's count rises in the same step as its task leaves the queue (two
      // threads cannot both see room for the key's last slot, or both take
      // reserve threads for one key). After Close() tasks are taken without
      // asking: `claimed` stays false.
      bool claimed = false;
      std::optional<KeyedTask> task = tasks_.Pop([&](const KeyedTask& next) {
        // Counted with no cap too: reserve threads read the counts.
        std::lock_guard lock(running_mutex_);
        int& running = running_[next.key];
        if (reserve) {
          // Only beside busy general threads (an idle one takes any key
          // with nothing running): a key given a reserve thread while a
          // general one was free would take that one too, for its next task.
          if (running > 0 || idle_general_ > 0) return false;
        } else if (max_per_key_ > 0 && running >= max_per_key_) {
          return false;
        }
        ++running;
        if (!reserve) --idle_general_;
        claimed = true;
        return true;
      });
      if (!task) return;
      // One general thread fewer idle: a reserve thread may now take a task
      // it left to this one.
      if (!reserve && claimed) tasks_.Notify();
      task->run();
      if (claimed) {
        {
          std::lock_guard lock(running_mutex_);
          if (--running_[task->key] == 0) running_.erase(task->key);
          // Idle again in the same step: a reserve thread woken below does
          // not take a task this thread is about to look for.
          if (!reserve) ++idle_general_;
        }
        tasks_.Notify();  // the key's next task may start now
      }
    }
  }

  const int max_per_key_;
  mutable std::mutex running_mutex_;  // taken inside the queue's lock, never around it
  std::map<std::string, int> running_;
  // General threads not running a claimed task (running_mutex_).
  int idle_general_;
  FairQueue<KeyedTask> tasks_;
  std::mutex join_mutex_;  // one Join at a time
  std::vector<std::thread> threads_;
};

}  // namespace kerneleval
