// A running kerneleval gRPC server: KernelEvalService plus the standard
// grpc.health.v1 service (kerneleval.v1.KernelEval NOT_SERVING while
// Engine::Ready() is false), server reflection, optional TLS and bearer
// token, and the Prometheus endpoint.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
// <optional> before engine.h: it uses std::optional without including it.
#include <optional>

#include "evaluator/engine/engine.h"
#include "server/service.h"

namespace grpc {
class Server;
class ServerBuilder;
}  // namespace grpc

namespace kerneleval::server {

class MetricsExposer;
class ServerMetrics;

// The health service name that follows Engine::Ready(). The overall server
// ("") is SERVING from start to shutdown (liveness).
inline constexpr char kHealthServiceName[] = "kerneleval.v1.KernelEval";

struct ServerOptions {
  std::string listen_address = "0.0.0.0:50051";  // port 0: pick a free one (see port())
  ServiceOptions service;
  // PEM files; both set: TLS, both empty: plaintext.
  std::string tls_cert_path;
  std::string tls_key_path;
  // "HOST:PORT" for GET /metrics; empty: no endpoint. Port 0: pick one.
  std::string metrics_address;
  absl::Duration health_poll_interval = absl::Milliseconds(250);
  // gRPC server reflection (it describes the public schema and, like health,
  // answers without the token).
  bool reflection = true;
  // [bytes] Bound on the memory gRPC's transport may use for calls (messages
  // being received among them: every request is read whole, token or not,
  // before the service sees it); beyond it calls are refused with
  // RESOURCE_EXHAUSTED. Nine concurrent 128 MiB requests without the token
  // took the server to 980 MiB; under a 256 MiB bound, 437 MiB. A request
  // larger than about half the bound is refused whole. 0: no bound.
  uint64_t transport_memory_bytes = uint64_t{4} << 30;
  // Extra builder settings (tests add interceptors here).
  std::function<void(grpc::ServerBuilder&)> configure_builder;
};

class KernelEvalServer {
 public:
  // Binds and starts serving. `engine` must outlive the server; `metrics`
  // may be null (then there is no metrics endpoint either).
  static absl::StatusOr<std::unique_ptr<KernelEvalServer>> Start(
      Engine* engine, ServerOptions options, std::shared_ptr<ServerMetrics> metrics);
  // Shuts down with an immediate deadline if Shutdown was not called.
  ~KernelEvalServer();
  KernelEvalServer(const KernelEvalServer&) = delete;
  KernelEvalServer& operator=(const KernelEvalServer&) = delete;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] int metrics_port() const;  // 0 without an endpoint

  // Graceful stop: health NOT_SERVING, no new calls, in-flight calls finish
  // or are cancelled by `deadline` (gRPC and Engine::Shutdown together).
  // Returns when every call has finished. Idempotent.
  void Shutdown(absl::Time deadline);
  // Blocks until Shutdown has completed.
  void Wait();
  // Replaces the named clients' tokens (SIGHUP re-reads --tokens-file).
  void SetClientTokens(std::vector<ClientToken> client_tokens);

 private:
  KernelEvalServer(Engine* engine, ServerOptions options, std::shared_ptr<ServerMetrics> metrics);
  void PollReadiness();

  Engine* engine_;
  ServerOptions options_;
  std::shared_ptr<ServerMetrics> metrics_;
  std::unique_ptr<KernelEvalService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<MetricsExposer> exposer_;
  int port_ = 0;
  bool started_ = false;  // Start succeeded: the destructor shuts down

  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  bool stopped_ = false;
  std::thread readiness_poller_;
  std::once_flag shutdown_once_;
};

}  // namespace kerneleval::server
