// A client of the kerneleval server: one function per RPC of
// kerneleval.v1.KernelEval, errors as absl::Status (gRPC codes carried code
// for code), plus the gRPC health check and the CLI's exit-code mapping.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cli/client/client_options.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace grpc {
class Channel;
class Status;
}  // namespace grpc

namespace kerneleval::client {

// Per-call extras: what to send and what came back.
struct CallInfo {
  std::string request_id;           // in: sent as x-request-id when set
  std::string response_request_id;  // out: the server's x-request-id
};

// grpc.health.v1 serving status.
enum class HealthStatus { kUnknown, kServing, kNotServing, kServiceUnknown };

class KernelEvalClient {
 public:
  // Builds the channel (reads the CA file when options.tls_ca is set). Does
  // not connect: an unreachable server shows up as UNAVAILABLE on the first
  // call.
  static absl::StatusOr<std::unique_ptr<KernelEvalClient>> Create(const ClientOptions& options);
  ~KernelEvalClient();
  KernelEvalClient(const KernelEvalClient&) = delete;
  KernelEvalClient& operator=(const KernelEvalClient&) = delete;

  absl::StatusOr<v1::Verdict> Evaluate(const v1::EvaluateRequest& request,
                                       CallInfo* info = nullptr);
  // Calls `on_event` for every progress event (in order, from this thread),
  // then returns the verdict carried by the last event.
  absl::StatusOr<v1::Verdict> EvaluateStream(
      const v1::EvaluateRequest& request,
      const std::function<void(const v1::EvaluateEvent&)>& on_event, CallInfo* info = nullptr);
  absl::StatusOr<v1::EvaluateGroupResponse> EvaluateGroup(const v1::EvaluateGroupRequest& request,
                                                          CallInfo* info = nullptr);
  absl::StatusOr<v1::CompileResult> Compile(const v1::CompileRequest& request,
                                            CallInfo* info = nullptr);
  absl::StatusOr<v1::ListProblemsResponse> ListProblems(const v1::ListProblemsRequest& request,
                                                        CallInfo* info = nullptr);
  absl::StatusOr<v1::GetProblemResponse> GetProblem(const v1::GetProblemRequest& request,
                                                    CallInfo* info = nullptr);
  absl::StatusOr<v1::ListDevicesResponse> ListDevices(CallInfo* info = nullptr);

  // grpc.health.v1.Health/Check for `service` ("" = the whole server,
  // "kerneleval.v1.KernelEval" = the evaluation service). No token needed.
  absl::StatusOr<HealthStatus> CheckHealth(const std::string& service);

  [[nodiscard]] const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

 private:
  struct Stub;
  KernelEvalClient(const ClientOptions& options, std::shared_ptr<grpc::Channel> channel);

  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Stub> stub_;
};

// gRPC status -> absl::Status, code for code, message kept.
[[nodiscard]] absl::Status FromGrpcStatus(const grpc::Status& status);

// The CLI's exit code for an RPC outcome (cli/command.h): OK 0; a request the
// server judged malformed (INVALID_ARGUMENT, NOT_FOUND, OUT_OF_RANGE,
// ALREADY_EXISTS) 2; anything that means the server could not or would not
// serve it (UNAVAILABLE, UNAUTHENTICATED, PERMISSION_DENIED,
// RESOURCE_EXHAUSTED, FAILED_PRECONDITION, DEADLINE_EXCEEDED, CANCELLED,
// INTERNAL, ...) 3.
[[nodiscard]] int ExitCodeForStatus(const absl::Status& status);

}  // namespace kerneleval::client
