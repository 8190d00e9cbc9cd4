// A fixed pool of threads running submitted tasks: round-robin across the
// keys they are submitted under, first in, first out within a key (the
// engine's compile stage keys them by client, so one client's group of 128
// slow compiles does not hold every other client's compile behind it; the
// server's blocking handlers use one key). The destructor runs the tasks
// already queued, then joins; it never throws.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "evaluator/engine/fair_queue.h"

namespace kerneleval {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) : tasks_(std::numeric_limits<size_t>::max()) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool() {
    Stop();
    for (auto& thread : threads_) thread.join();
  }

  // False once Stop() was called: the task was not queued.
  [[nodiscard]] bool Submit(std::function<void()> task) { return Submit({}, std::move(task)); }
  [[nodiscard]] bool Submit(const std::string& key, std::function<void()> task) {
    return tasks_.Push(key, std::move(task)).has_value();
  }

  // No new tasks; queued ones still run. Idempotent.
  void Stop() { tasks_.Close(); }

 private:
  void Loop() {
    while (std::optional<std::function<void()>> task = tasks_.Pop()) (*task)();
  }

  FairQueue<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
};

}  // namespace kerneleval
