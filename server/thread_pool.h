// A fixed set of threads for the few handlers that call the engine
// synchronously (Compile): gRPC's callback threads must never block on NVRTC.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kerneleval::server {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  // Runs the tasks already queued, then joins. Never throws.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // False once Stop() was called: the task was not queued.
  [[nodiscard]] bool Submit(std::function<void()> task);
  // No new tasks; queued ones still run. Idempotent.
  void Stop();

 private:
  void Run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kerneleval::server
