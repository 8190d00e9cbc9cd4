#include "server/status.h"

#include <string>

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

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  // A code outside the canonical range (absl allows any int) is UNKNOWN.
  if (code < grpc::StatusCode::CANCELLED || code > grpc::StatusCode::UNAUTHENTICATED) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, std::string(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code), std::string(status.message()));
}

}  // namespace kerneleval::server
