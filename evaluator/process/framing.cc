#include "evaluator/process/framing.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kerneleval::process {
namespace {

absl::Status WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(
          absl::StrCat("write to worker channel: ", std::strerror(errno)));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

// Waits until fd is readable or the deadline passes.
absl::Status WaitReadable(int fd, absl::Time deadline) {
  for (;;) {
    int timeout_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      const absl::Duration left = deadline - absl::Now();
      if (left <= absl::ZeroDuration())
        return absl::DeadlineExceededError("worker did not answer in time");
      timeout_ms =
          static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1 << 30));
    }
    pollfd pfd{fd, POLLIN, 0};
    const int rc = ::poll(&pfd, 1, timeout_ms);
    if (rc > 0) return absl::OkStatus();
    if (rc == 0) continue;  // re-check the deadline
    if (errno != EINTR) return absl::UnavailableError(absl::StrCat("poll: ", std::strerror(errno)));
  }
}

absl::Status ReadAll(int fd, char* data, size_t size, absl::Time deadline) {
  while (size > 0) {
    if (absl::Status s = WaitReadable(fd, deadline); !s.ok()) return s;
    const ssize_t n = ::read(fd, data, size);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return absl::UnavailableError(
          absl::StrCat("read from worker channel: ", std::strerror(errno)));
    }
    if (n == 0) return absl::UnavailableError("worker channel closed");
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WriteFrame(int fd, std::string_view payload) {
  unsigned char header[8];
  uint64_t length = payload.size();
  for (int i = 0; i < 8; ++i) header[i] = static_cast<unsigned char>(length >> (8 * i));
  if (absl::Status s = WriteAll(fd, reinterpret_cast<const char*>(header), sizeof header);
      !s.ok()) {
    return s;
  }
  return WriteAll(fd, payload.data(), payload.size());
}

absl::Status CheckMessageSize(const google::protobuf::MessageLite& message, uint64_t max_bytes) {
  const uint64_t bytes = message.ByteSizeLong();
  if (bytes <= max_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "a message of ", bytes, " bytes exceeds the wire's limit of ", max_bytes, " bytes"));
}

absl::Status WriteMessage(int fd, const google::protobuf::MessageLite& message) {
  if (absl::Status fits = CheckMessageSize(message); !fits.ok()) return fits;
  std::string payload;
  if (!message.SerializeToString(&payload)) return absl::InternalError("cannot serialise message");
  return WriteFrame(fd, payload);
}

absl::Status ReadFrame(int fd, std::string* payload, absl::Time deadline, uint64_t max_bytes) {
  unsigned char header[8];
  if (absl::Status s = ReadAll(fd, reinterpret_cast<char*>(header), sizeof header, deadline);
      !s.ok()) {
    return s;
  }
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= uint64_t{header[i]} << (8 * i);
  if (length > max_bytes) {
    return absl::DataLossError(
        absl::StrCat("worker frame of ", length, " bytes exceeds the limit of ", max_bytes));
  }
  payload->resize(length);
  return ReadAll(fd, payload->data(), length, deadline);
}

absl::Status ReadMessage(int fd, google::protobuf::MessageLite* message, absl::Time deadline,
                         uint64_t max_bytes) {
  std::string payload;
  if (absl::Status s = ReadFrame(fd, &payload, deadline, max_bytes); !s.ok()) return s;
  if (!message->ParseFromString(payload)) return absl::DataLossError("malformed worker message");
  return absl::OkStatus();
}

}  // namespace kerneleval::process
