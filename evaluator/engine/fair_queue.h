// A bounded queue fair between clients: tasks are served round-robin across
// client ids (first in, first out within one), so one client's group of 64
// does not starve another's single request. Thread-safe; Pop blocks until a
// task arrives or the queue closes.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace kerneleval {

template <class Task>
class FairQueue {
 public:
  // `capacity`: tasks queued in all. `client_share`: the most one client
  // may have queued (0: capacity). A client with nothing queued is admitted
  // even when the queue is full, up to twice `capacity` in all: one client
  // that kept the queue full (a task sent again for every one answered)
  // locked every other out, 20 tries of 20 refused.
  explicit FairQueue(size_t capacity, size_t client_share = 0)
      : capacity_(capacity), client_share_(client_share == 0 ? capacity : client_share) {}

  // Adds a task for `client`. Returns the number of tasks ahead of it, or
  // nullopt when the queue is full, or `client` holds its share of it, or
  // the queue is closed (the caller answers at once).
  std::optional<size_t> Push(const std::string& client, Task task) {
    std::lock_guard lock(mutex_);
    if (closed_) return std::nullopt;
    const size_t queued = QueuedLocked(client);
    if (queued >= client_share_) return std::nullopt;
    if (size_ >= capacity_ && (queued > 0 || size_ - capacity_ >= capacity_)) {
      return std::nullopt;
    }
    auto& tasks = by_client_[client];
    if (tasks.empty()) ready_.push_back(client);
    tasks.push_back(std::move(task));
    const size_t ahead = size_++;
    // Every waiter: they may take different tasks (ThreadPool's reserve
    // threads take fewer than its general ones), and one woken that cannot
    // take this task would leave it to wait for the next event.
    ready_cv_.notify_all();
    return ahead;
  }

  // Takes the next task in round-robin order over clients; nullopt once the
  // queue is closed and drained.
  std::optional<Task> Pop() {
    return Pop([](const Task&) { return true; });
  }

  // The next task in round-robin order among the clients whose first task
  // `eligible` accepts, waiting until there is one; once the queue is
  // closed, any task (nullopt when drained). `eligible` runs under the
  // queue's lock and must not block; whatever makes a task eligible must be
  // followed by Notify(). The first task `eligible` accepts is the one
  // returned, in the same hold of the lock (ThreadPool counts a key's
  // running tasks there). The engine's device takes only jobs whose
  // compiles are done, so one client's slow compiles do not hold it while
  // another's job is ready.
  template <class Eligible>
  std::optional<Task> Pop(Eligible eligible) {
    std::unique_lock lock(mutex_);
    auto chosen = ready_.end();
    ready_cv_.wait(lock, [&] {
      if (closed_) {
        chosen = ready_.begin();  // any task, or none when drained
        return true;
      }
      chosen = FirstEligible([&](const std::string&, const Task& task) { return eligible(task); });
      return chosen != ready_.end();
    });
    if (chosen == ready_.end()) return std::nullopt;
    return TakeFrontOf(chosen);
  }

  // Wakes every waiting Pop to look at eligibility again.
  void Notify() {
    std::lock_guard lock(mutex_);
    ready_cv_.notify_all();
  }

  // Without waiting: the next task in round-robin order of a client other
  // than `client` whose first task `eligible` accepts, or nullopt when there
  // is none. The engine serves such a task between the steps of a long
  // request, so that one client's group does not hold a device for others.
  template <class Eligible>
  std::optional<Task> TryPopOtherThan(const std::string& client, Eligible eligible) {
    std::lock_guard lock(mutex_);
    const auto chosen = FirstEligible([&](const std::string& other, const Task& task) {
      return other != client && eligible(task);
    });
    if (chosen == ready_.end()) return std::nullopt;
    return TakeFrontOf(chosen);
  }
  std::optional<Task> TryPopOtherThan(const std::string& client) {
    return TryPopOtherThan(client, [](const Task&) { return true; });
  }

  // Takes `task` (compared with ==) out of `client`'s line without serving
  // anyone; false when it is no longer queued (popped already). The engine
  // answers a request that needs no device (every submission decided at
  // compile time) this way, instead of after whatever the device runs.
  bool Remove(const std::string& client, const Task& task) {
    std::lock_guard lock(mutex_);
    auto it = by_client_.find(client);
    if (it == by_client_.end()) return false;
    auto found = std::find(it->second.begin(), it->second.end(), task);
    if (found == it->second.end()) return false;
    it->second.erase(found);
    if (it->second.empty()) {
      by_client_.erase(it);
      ready_.erase(std::find(ready_.begin(), ready_.end(), client));
    }
    --size_;
    return true;
  }

  // Wakes every Pop; later Pushes fail. Queued tasks can still be popped.
  void Close() {
    std::lock_guard lock(mutex_);
    closed_ = true;
    ready_cv_.notify_all();
  }

  size_t size() const {
    std::lock_guard lock(mutex_);
    return size_;
  }
  size_t capacity() const { return capacity_; }
  size_t client_share() const { return client_share_; }
  // Tasks `client` has queued now.
  size_t QueuedFor(const std::string& client) const {
    std::lock_guard lock(mutex_);
    return QueuedLocked(client);
  }

 private:
  // Tasks `client` has queued. mutex_ held.
  size_t QueuedLocked(const std::string& client) const {
    auto found = by_client_.find(client);
    return found == by_client_.end() ? 0 : found->second.size();
  }

  // The first client in service order whose first task `eligible(client,
  // task)` accepts, or ready_.end(). mutex_ held.
  template <class Eligible>
  std::deque<std::string>::iterator FirstEligible(Eligible eligible) {
    return std::find_if(ready_.begin(), ready_.end(), [&](const std::string& client) {
      return eligible(client, by_client_.find(client)->second.front());
    });
  }

  // The first task of the client at `ready` (taken out of ready_). mutex_ held.
  Task TakeFrontOf(std::deque<std::string>::iterator ready) {
    const std::string client = std::move(*ready);
    ready_.erase(ready);
    return TakeFront(client);
  }

  // `client`'s first task; `client` (just taken out of ready_) goes to the
  // back of the line if it has more. mutex_ held.
  Task TakeFront(const std::string& client) {
    auto it = by_client_.find(client);
    Task task = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) {
      by_client_.erase(it);
    } else {
      ready_.push_back(client);  // served once: to the back of the line
    }
    --size_;
    return task;
  }

  const size_t capacity_;
  const size_t client_share_;
  mutable std::mutex mutex_;
  std::condition_variable ready_cv_;
  std::map<std::string, std::deque<Task>> by_client_;
  std::deque<std::string> ready_;  // clients with queued tasks, in service order
  size_t size_ = 0;
  bool closed_ = false;
};

}  // namespace kerneleval
