// A bound on how many lines a second a source of log lines may write: every
// call's outcome is logged, and clients choose how many calls they make (one
// without a token wrote 8.5k lines, 2 MB, a second). Past the bound, lines
// are counted instead, and the next line admitted says how many were left
// out. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

#include "absl/time/time.h"

namespace kerneleval::server {

class LogThrottle {
 public:
  explicit LogThrottle(int lines_per_second) : lines_per_second_(lines_per_second) {}

  struct Decision {
    bool log = false;
    uint64_t left_out_before = 0;  // lines left out since the last admitted one
  };

  // Whether a line at `now` may be written.
  Decision Admit(absl::Time now);

 private:
  const int lines_per_second_;
  std::mutex mutex_;
  int64_t second_ = 0;  // [s since the epoch] of the current window
  int admitted_ = 0;    // lines admitted in that second
  uint64_t left_out_ = 0;
};

}  // namespace kerneleval::server
