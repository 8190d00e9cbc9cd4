#include "server/validation.h"

#include <algorithm>
#include <climits>
#include <string>

#include "absl/strings/str_cat.h"

namespace kerneleval::server {
namespace {

absl::Status CheckSource(const std::string& source, const std::string& field,
                         const RequestLimits& limits) {
  if (source.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  if (source.size() > limits.max_source_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", source.size(), " bytes exceeds the ", limits.max_source_bytes, "-byte limit"));
  }
  return absl::OkStatus();
}

absl::Status CheckLimits(const v1::EvaluationLimits& limits) {
  if (!(limits.timeout_seconds() >= 0)) {  // also catches NaN
    return absl::InvalidArgumentError(
        absl::StrCat("limits.timeout_seconds: ", limits.timeout_seconds(), " is not >= 0"));
  }
  if (!(limits.timing_budget_seconds() >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "limits.timing_budget_seconds: ", limits.timing_budget_seconds(), " is not >= 0"));
  }
  return absl::OkStatus();
}

// "token:<name>" is the fairness key of a named client's calls
// (kNamedClientKeyPrefix): no request may claim it for itself.
absl::Status CheckClientId(const std::string& client_id) {
  if (client_id.rfind(kNamedClientKeyPrefix, 0) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("client_id: \"", kNamedClientKeyPrefix,
                     "\" begins the keys of named clients' tokens (--tokens-file)"));
  }
  return absl::OkStatus();
}

absl::Status CheckEnums(v1::Backend backend, const v1::RewardSettings& reward) {
  if (!v1::Backend_IsValid(backend)) {
    return absl::InvalidArgumentError(absl::StrCat("backend: unknown value ", backend));
  }
  if (!v1::RewardMode_IsValid(reward.mode())) {
    return absl::InvalidArgumentError(absl::StrCat("reward.mode: unknown value ", reward.mode()));
  }
  return absl::OkStatus();
}

template <typename Request>
absl::Status CheckProblemRef(const Request& request) {
  switch (request.problem_ref_case()) {
    case Request::kProblemId:
      if (request.problem_id().empty()) {
        return absl::InvalidArgumentError("problem_id: empty");
      }
      return absl::OkStatus();
    case Request::kProblem:
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError("problem_ref: set problem_id or problem");
  }
}

}  // namespace

absl::Status ValidateEvaluateRequest(const v1::EvaluateRequest& request,
                                     const RequestLimits& limits) {
  if (auto status = CheckProblemRef(request); !status.ok()) return status;
  if (auto status = CheckSource(request.submission().source(), "submission.source", limits);
      !status.ok()) {
    return status;
  }
  if (auto status = CheckEnums(request.backend(), request.reward()); !status.ok()) return status;
  if (auto status = CheckClientId(request.client_id()); !status.ok()) return status;
  return CheckLimits(request.limits());
}

absl::Status ValidateEvaluateGroupRequest(const v1::EvaluateGroupRequest& request,
                                          const RequestLimits& limits) {
  if (auto status = CheckProblemRef(request); !status.ok()) return status;
  const size_t count = static_cast<size_t>(request.submissions_size());
  if (count == 0) return absl::InvalidArgumentError("submissions: empty");
  if (count > limits.max_group_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "submissions: ", count, " submissions exceed the group limit of ", limits.max_group_size));
  }
  for (size_t i = 0; i < count; ++i) {
    if (auto status = CheckSource(request.submissions(static_cast<int>(i)).source(),
                                  absl::StrCat("submissions[", i, "].source"), limits);
        !status.ok()) {
      return status;
    }
  }
  if (auto status = CheckEnums(request.backend(), request.reward()); !status.ok()) return status;
  if (auto status = CheckClientId(request.client_id()); !status.ok()) return status;
  return CheckLimits(request.limits());
}

absl::Status ValidateCompileRequest(const v1::CompileRequest& request,
                                    const RequestLimits& limits) {
  if (auto status = CheckSource(request.source(), "source", limits); !status.ok()) return status;
  return CheckClientId(request.client_id());
}

absl::Status ValidateGetProblemRequest(const v1::GetProblemRequest& request) {
  if (request.problem_id().empty()) return absl::InvalidArgumentError("problem_id: empty");
  return absl::OkStatus();
}

absl::Status CheckDeadline(absl::Time deadline, absl::Time now) {
  if (deadline <= now) {
    return absl::DeadlineExceededError("the call's deadline passed before evaluation began");
  }
  return absl::OkStatus();
}

int MaxRequestMessageBytes(const RequestLimits& limits) {
  // 16 MiB of headroom for a custom Problem (reference source, shapes) and
  // the rest of the request.
  constexpr double kHeadroomBytes = 16.0 * (1 << 20);
  const double bytes = static_cast<double>(limits.max_source_bytes) *
                           static_cast<double>(std::max<size_t>(limits.max_group_size, 1)) +
                       kHeadroomBytes;
  return bytes >= INT_MAX ? INT_MAX : static_cast<int>(bytes);
}

}  // namespace kerneleval::server
