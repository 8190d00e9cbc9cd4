// Request checks done at the edge, before any engine work: the cheap ones
// whose answer needs no engine state (sizes, emptiness, missing fields, enum
// ranges). The engine validates problems, plans and options itself; these do
// not duplicate that. Every error is INVALID_ARGUMENT with a message that
// names the field, e.g.
//   "submission.source: 2000000 bytes exceeds the 1048576-byte limit".
#pragma once

#include <cstddef>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::server {

// The fairness key of a call carrying a named client's token is this prefix
// and the client's name; a request's own client_id may not begin with it, so
// that no caller under the shared token can take a named client's turn.
inline constexpr char kNamedClientKeyPrefix[] = "token:";

struct RequestLimits {
  size_t max_source_bytes = size_t{1} << 20;  // per submission / compile [bytes]
  size_t max_group_size = 128;                // submissions per EvaluateGroup
};

absl::Status ValidateEvaluateRequest(const v1::EvaluateRequest& request,
                                     const RequestLimits& limits);
absl::Status ValidateEvaluateGroupRequest(const v1::EvaluateGroupRequest& request,
                                          const RequestLimits& limits);
absl::Status ValidateCompileRequest(const v1::CompileRequest& request, const RequestLimits& limits);
absl::Status ValidateGetProblemRequest(const v1::GetProblemRequest& request);

// DEADLINE_EXCEEDED when `deadline` is at or before `now`: such a call gets
// no engine work at all.
absl::Status CheckDeadline(absl::Time deadline, absl::Time now);

// The largest request message the server accepts [bytes]: a full group of
// maximum-size sources plus room for a custom problem. Smaller than this the
// transport would refuse valid requests; larger messages are refused by gRPC
// (RESOURCE_EXHAUSTED) before they are parsed.
[[nodiscard]] int MaxRequestMessageBytes(const RequestLimits& limits);

}  // namespace kerneleval::server
