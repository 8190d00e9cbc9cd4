// Length-prefixed messages over a stream socket: the engine <-> worker wire.
// Each frame is an 8-byte little-endian payload length, then the payload.
#pragma once

#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace kerneleval::process {

// Largest frame either side accepts [bytes]; a bigger length is a protocol
// error (a corrupt or hostile peer), not an allocation.
inline constexpr uint64_t kMaxFrameBytes = uint64_t{3} << 30;

// Largest message WriteMessage sends [bytes]: protobuf serialises at most
// INT_MAX bytes (2 GiB - 1), below kMaxFrameBytes.
inline constexpr uint64_t kMaxMessageBytes = uint64_t{std::numeric_limits<int32_t>::max()};

// OK when `message` serialises to at most `max_bytes`; otherwise a
// RESOURCE_EXHAUSTED error that gives both sizes. WriteMessage checks it
// (a sender can check first and send the error instead).
absl::Status CheckMessageSize(const google::protobuf::MessageLite& message,
                              uint64_t max_bytes = kMaxMessageBytes);

// Writes one frame; retries on EINTR and short writes. SIGPIPE must be
// ignored by the caller's process (the engine does it once at start-up).
absl::Status WriteFrame(int fd, std::string_view payload);
// WriteMessage refuses (CheckMessageSize) a message over kMaxMessageBytes.
absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& message);

// Reads one frame, waiting at most until `deadline` (absl::InfiniteFuture()
// to block). Returns DeadlineExceeded on timeout, Unavailable on EOF.
absl::Status ReadFrame(int fd, std::string* payload, absl::Time deadline,
                       uint64_t max_bytes = kMaxFrameBytes);
absl::Status ReadMessage(int fd, google::protobuf::MessageLite* message, absl::Time deadline,
                         uint64_t max_bytes = kMaxFrameBytes);

}  // namespace kerneleval::process
