#include "evaluator/engine/byte_budget.h"

#include <utility>

namespace kerneleval {

ByteBudget::Hold& ByteBudget::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    Release();
    held_ = std::move(other.held_);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

ByteBudget::Hold::~Hold() { Release(); }

void ByteBudget::Hold::Release() {
  if (held_) held_->fetch_sub(bytes_);
  held_.reset();
  bytes_ = 0;
}

std::optional<ByteBudget::Hold> ByteBudget::TryHold(uint64_t bytes) {
  uint64_t held = held_->load();
  do {
    if (held > 0 && (held + bytes > limit_bytes_ || held + bytes < held)) return std::nullopt;
  } while (!held_->compare_exchange_weak(held, held + bytes));
  return Hold(held_, bytes);
}

}  // namespace kerneleval
