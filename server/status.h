// The one place where engine errors (absl::Status) become gRPC statuses.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace kerneleval::server {

// Code for code (absl and gRPC share the canonical numbering), message kept.
[[nodiscard]] grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace kerneleval::server
