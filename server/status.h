// The one place where engine errors (absl::Status) become gRPC statuses.
#pragma once

#include <grpcpp/support/status.h>

#include <cstddef>

#include "absl/status/status.h"

namespace kerneleval::server {

// [bytes] Longer messages are cut there (at a UTF-8 boundary), with how
// much was left out: they echo the caller's values, which can be long.
inline constexpr size_t kMaxStatusMessageBytes = 1024;

// Code for code (absl and gRPC share the canonical numbering), message kept
// up to kMaxStatusMessageBytes.
[[nodiscard]] grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace kerneleval::server
