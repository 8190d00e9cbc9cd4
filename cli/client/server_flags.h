// Options every `kerneleval` subcommand that can talk to a server shares:
// --server, --token, --tls-ca, --rpc-timeout, --lb-policy.
//
//   kerneleval::client::ServerFlags server_flags;
//   kerneleval::client::AddServerOptions(sub, &server_flags);
//   ...
//   if (server_flags.remote()) {
//     auto client = kerneleval::client::KernelEvalClient::Create(ToClientOptions(server_flags));
//     if (!client.ok()) return SetExitCode(ExitCodeForStatus(client.status()));
//     ...
//   } else { /* embedded engine */ }
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/client/client_options.h"

namespace kerneleval::client {

struct ServerFlags {
  // gRPC target: "HOST:PORT" or a URI such as
  // "dns:///kerneleval-headless.default.svc.cluster.local:50051". Empty: no
  // server, the subcommand runs the engine in-process. Env KERNELEVAL_SERVER.
  std::string server;
  // Bearer token sent as "authorization: Bearer <token>". Env KERNELEVAL_TOKEN.
  std::string token;
  // PEM file of the CA that signed the server's certificate; set: TLS.
  std::string tls_ca;
  // [s] deadline of each RPC; 0: none.
  double rpc_timeout_seconds = 0;
  // "round_robin" | "pick_first"; empty: round_robin for dns: targets, else
  // gRPC's default (pick_first).
  std::string lb_policy;

  [[nodiscard]] bool remote() const { return !server.empty(); }
};

// Adds the options above to `app` (a subcommand), in an option group
// "Server". `flags` must outlive the parse.
void AddServerOptions(CLI::App* app, ServerFlags* flags);

[[nodiscard]] ClientOptions ToClientOptions(const ServerFlags& flags);

}  // namespace kerneleval::client
