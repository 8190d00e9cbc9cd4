// kerneleval-health-probe: grpc.health.v1 Check against a kerneleval server,
// for Docker HEALTHCHECK (there is no grpc_health_probe package in Debian or
// Ubuntu). Exit 0 SERVING, 1 NOT_SERVING or unknown, 2 usage, 3 unreachable.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/client/client.h"

// Only a bug throws here (CLI11's ConstructionError for a bad option definition):
// the user's parse errors are caught below, and the client reports by status.
// NOLINTNEXTLINE(bugprone-exception-escape): only a bug throws, see above.
int main(int argc, char** argv) {
  CLI::App app{"kerneleval-health-probe: exit 0 when the server's health service is SERVING"};
  kerneleval::client::ClientOptions options;
  options.target = "127.0.0.1:50051";
  std::string service = "kerneleval.v1.KernelEval";
  double timeout_seconds = 5;
  app.add_option("--server", options.target, "HOST:PORT or gRPC target")->capture_default_str();
  app.add_option("--service", service, "Health service name; \"\" = the whole server")
      ->capture_default_str();
  app.add_option("--tls-ca", options.tls_ca, "PEM CA of the server's certificate; set: TLS")
      ->check(CLI::ExistingFile);
  app.add_option("--timeout", timeout_seconds, "[s]")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  options.timeout = absl::Seconds(timeout_seconds);
  auto client = kerneleval::client::KernelEvalClient::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 2;
  }
  auto status = (*client)->CheckHealth(service);
  if (!status.ok()) {
    std::fprintf(stderr, "unreachable: %s\n", status.status().ToString().c_str());
    return 3;
  }
  const bool serving = *status == kerneleval::client::HealthStatus::kServing;
  std::printf("%s\n", serving ? "SERVING" : "NOT_SERVING");
  return serving ? 0 : 1;
}
