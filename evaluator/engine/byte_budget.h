// A bound on the bytes that admitted requests hold across the engine
// (submissions' sources and plans, custom problems, Compile sources) while
// they wait and run. The queue bounds requests by number; a request may
// carry up to 128 sources of 1 MiB, so by number alone 6 groups took a
// server to 1.9 GiB (server review, 2026-12-04).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

namespace kerneleval {

class ByteBudget {
 public:
  // Bytes held until it is destroyed (move-only).
  class Hold {
   public:
    Hold(Hold&& other) noexcept = default;
    Hold& operator=(Hold&& other) noexcept;
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    ~Hold();
    [[nodiscard]] uint64_t bytes() const { return bytes_; }

   private:
    friend class ByteBudget;
    Hold(std::shared_ptr<std::atomic<uint64_t>> held, uint64_t bytes)
        : held_(std::move(held)), bytes_(bytes) {}
    void Release();
    std::shared_ptr<std::atomic<uint64_t>> held_;  // shared: a hold may outlive the budget
    uint64_t bytes_ = 0;
  };

  explicit ByteBudget(uint64_t limit_bytes)
      : held_(std::make_shared<std::atomic<uint64_t>>(0)), limit_bytes_(limit_bytes) {}

  // Holds `bytes`, or nullopt when they would pass the limit while other
  // holds exist. A request arriving when nothing is held is always admitted:
  // one within the per-request limits is never refused for good.
  std::optional<Hold> TryHold(uint64_t bytes);

  [[nodiscard]] uint64_t held() const { return held_->load(); }
  [[nodiscard]] uint64_t limit() const { return limit_bytes_; }

 private:
  std::shared_ptr<std::atomic<uint64_t>> held_;
  uint64_t limit_bytes_;
};

}  // namespace kerneleval
