#include "cli/client/server_flags.h"

#include "cli/client/number_checks.h"

namespace kerneleval::client {

void AddServerOptions(CLI::App* app, ServerFlags* flags) {
  const std::string group = "Server";
  app->add_option("--server", flags->server,
                  "Use a kerneleval server instead of the in-process engine: HOST:PORT or a gRPC "
                  "target such as dns:///kerneleval-headless.default.svc.cluster.local:50051")
      ->envname("KERNELEVAL_SERVER")
      ->group(group);
  app->add_option("--token", flags->token,
                  "Bearer token for a server started with --token (env KERNELEVAL_TOKEN)")
      ->envname("KERNELEVAL_TOKEN")
      ->group(group);
  app->add_option("--tls-ca", flags->tls_ca,
                  "PEM file of the CA that signed the server's certificate; given: TLS")
      ->check(CLI::ExistingFile)
      ->group(group);
  app->add_option("--rpc-timeout", flags->rpc_timeout_seconds,
                  "Deadline of each server call [s]; 0 = none")
      ->check(NonNegativeNumber())
      ->group(group);
  app->add_option("--lb-policy", flags->lb_policy,
                  "round_robin or pick_first; default round_robin for dns: targets (spread a "
                  "group of calls over every address of a headless Service)")
      ->check(CLI::IsMember({"round_robin", "pick_first"}))
      ->group(group);
}

ClientOptions ToClientOptions(const ServerFlags& flags) {
  ClientOptions options;
  options.target = flags.server;
  options.token = flags.token;
  options.tls_ca = flags.tls_ca;
  options.timeout = absl::Seconds(flags.rpc_timeout_seconds);
  options.lb_policy = flags.lb_policy;
  return options;
}

}  // namespace kerneleval::client
