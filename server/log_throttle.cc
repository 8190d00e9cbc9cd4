#include "server/log_throttle.h"

namespace kerneleval::server {

LogThrottle::Decision LogThrottle::Admit(absl::Time now) {
  std::lock_guard lock(mutex_);
  const int64_t second = absl::ToUnixSeconds(now);
  if (second != second_) {
    second_ = second;
    admitted_ = 0;
  }
  Decision decision;
  if (admitted_ >= lines_per_second_) {
    ++left_out_;
    return decision;
  }
  ++admitted_;
  decision.log = true;
  decision.left_out_before = left_out_;
  left_out_ = 0;
  return decision;
}

}  // namespace kerneleval::server
