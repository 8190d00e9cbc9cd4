#include "server/status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace kerneleval::server {

// absl::StatusCode and grpc::StatusCode are both the canonical google.rpc.Code
// numbering; pin that so a future divergence fails to compile, not at run time.
static_assert(static_cast<int>(absl::StatusCode::kCancelled) == grpc::StatusCode::CANCELLED);
static_assert(static_cast<int>(absl::StatusCode::kInvalidArgument) ==
              grpc::StatusCode::INVALID_ARGUMENT);
static_assert(static_cast<int>(absl::StatusCode::kDeadlineExceeded) ==
              grpc::StatusCode::DEADLINE_EXCEEDED);
static_assert(static_cast<int>(absl::StatusCode::kResourceExhausted) ==
              grpc::StatusCode::RESOURCE_EXHAUSTED);
static_assert(static_cast<int>(absl::StatusCode::kUnauthenticated) ==
              grpc::StatusCode::UNAUTHENTICATED);
static_assert(static_cast<int>(absl::StatusCode::kDataLoss) == grpc::StatusCode::DATA_LOSS);

namespace {

// The message travels in the grpc-message header, percent-encoded (3 bytes
// per non-ASCII byte), within the metadata limit of 8 KiB (soft) to 16 KiB:
// an error echoing a 10 000-character device name came back as
// RESOURCE_EXHAUSTED "received metadata size exceeds soft limit" instead.
std::string BoundedMessage(absl::string_view message) {
  if (message.size() <= kMaxStatusMessageBytes) return std::string(message);
  size_t cut = kMaxStatusMessageBytes;
  // Not inside a UTF-8 sequence: back up over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(message.substr(0, cut), "... (", message.size() - cut, " more bytes)");
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  // A code outside the canonical range (absl allows any int) is UNKNOWN.
  if (code < grpc::StatusCode::CANCELLED || code > grpc::StatusCode::UNAUTHENTICATED) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, BoundedMessage(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code), BoundedMessage(status.message()));
}

}  // namespace kerneleval::server
