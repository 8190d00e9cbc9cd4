// The engine a subcommand talks to: the embedded one (in-process, the
// default) or a server (--server HOST:PORT), with the same calls and output.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cli/client/json.h"
#include "cli/client/server_flags.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::cli {

struct EngineSessionFlags {
  client::ServerFlags server;
  std::string problems_dir;          // embedded engine only
  std::string backend;               // embedded engine only: "cpu" skips probing for GPUs
  bool cpu_interleaved_runs = true;  // embedded engine only (EngineOptions)
};

// Adds --server/--token/--tls-ca/... and --problems-dir to a subcommand.
void AddEngineSessionFlags(CLI::App* app, EngineSessionFlags* flags);

class EngineSession {
 public:
  virtual ~EngineSession() = default;
  // `live`: show progress on stderr (queued, compiled, checked, timing).
  virtual absl::StatusOr<v1::Verdict> Evaluate(const v1::EvaluateRequest& request, bool live) = 0;
  virtual absl::StatusOr<v1::EvaluateGroupResponse> EvaluateGroup(
      const v1::EvaluateGroupRequest& request) = 0;
  virtual absl::StatusOr<v1::CompileResult> Compile(const v1::CompileRequest& request) = 0;
  virtual absl::StatusOr<v1::ListProblemsResponse> ListProblems(
      const v1::ListProblemsRequest& request) = 0;
  virtual absl::StatusOr<v1::GetProblemResponse> GetProblem(
      const v1::GetProblemRequest& request) = 0;
  virtual absl::StatusOr<v1::ListDevicesResponse> ListDevices() = 0;
};

absl::StatusOr<std::unique_ptr<EngineSession>> OpenEngineSession(const EngineSessionFlags& flags);

// 2 for bad input (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION...), 3 for
// a server that is unreachable or refused (UNAVAILABLE, UNAUTHENTICATED,
// RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED).
int ExitCodeFor(const absl::Status& status);

// One-line JSON with proto field names and every field present.
inline std::string ToJson(const google::protobuf::Message& message) {
  return client::ToJson(message, /*pretty=*/false);
}

}  // namespace kerneleval::cli
