// Request ids: one per call, in every log line about it, returned to the
// client as initial metadata `x-request-id`.
#pragma once

#include <string>
#include <string_view>

namespace kerneleval::server {

inline constexpr char kRequestIdHeader[] = "x-request-id";

// 16 lowercase hex digits, random (not a counter: ids from several server
// replicas must not collide in a shared log store).
[[nodiscard]] std::string NewRequestId();

// The client's `x-request-id` when it is usable (1..128 characters of
// [A-Za-z0-9._:/-]); otherwise a new id. The check keeps log lines intact.
[[nodiscard]] std::string RequestIdFromClient(std::string_view client_value);

}  // namespace kerneleval::server
