// The kerneleval-server command line: flags (each with an environment
// variable), their defaults, and how they map onto ServerOptions and
// EngineOptions.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
// <optional> before engine.h: it uses std::optional without including it.
#include <optional>

#include "evaluator/engine/engine.h"
#include "server/server.h"

namespace kerneleval::server {

struct ServerConfig {
  ServerOptions server;
  EngineOptions engine;
  std::string backend = "auto";  // auto | cuda | cpu
  std::string log_level = "info";
  int metrics_port = 0;  // 0: no metrics endpoint
  double shutdown_grace_seconds = 30;
  std::string reward_mode;  // speedup | roofline; empty: KERNEL_ENV_REWARD, else speedup
  bool partial_credit = false;
  bool partial_credit_given = false;  // set by FinalizeServerConfig from the parse
  std::string tokens_file;  // read by FinalizeServerConfig into server.service.client_tokens
};

// Registers every flag on `app`; values land in `config`.
void AddServerFlags(CLI::App& app, ServerConfig* config);

// After parsing: applies the environment defaults the seed uses for the
// reward (KERNEL_ENV_REWARD, KERNEL_ENV_PARTIAL_CREDIT == "1"), maps
// --backend and --metrics-port, checks combinations. INVALID_ARGUMENT names
// the flag.
absl::Status FinalizeServerConfig(const CLI::App& app, ServerConfig* config);

// Reads and checks config.tokens_file: at least one client, none with the
// shared --token. At start (FinalizeServerConfig) and on SIGHUP, when an
// error keeps the tokens in use.
absl::StatusOr<std::vector<ClientToken>> LoadClientTokens(const ServerConfig& config);

}  // namespace kerneleval::server
