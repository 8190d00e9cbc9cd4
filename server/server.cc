#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/resource_quota.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/metrics.h"

namespace kerneleval::server {
namespace {

// Takes gRPC's reflection plugin out of one builder: the plugin registers
// itself for every builder of the process, so there is no other way to serve
// without it.
class WithoutReflection : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    std::erase_if(*plugins, [](const std::unique_ptr<grpc::ServerBuilderPlugin>& plugin) {
      return plugin->name() == "proto_server_reflection";
    });
  }
};

absl::StatusOr<std::string> ReadPem(const std::string& path, std::string_view flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::InvalidArgumentError(absl::StrCat(std::string(flag), ": cannot read ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials(
    const ServerOptions& options) {
  if (options.tls_cert_path.empty() != options.tls_key_path.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key: give both or neither");
  }
  if (options.tls_cert_path.empty()) return grpc::InsecureServerCredentials();
  auto cert = ReadPem(options.tls_cert_path, "--tls-cert");
  if (!cert.ok()) return cert.status();
  auto key = ReadPem(options.tls_key_path, "--tls-key");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

KernelEvalServer::KernelEvalServer(Engine* engine, ServerOptions options,
                                   std::shared_ptr<ServerMetrics> metrics)
    : engine_(engine), options_(std::move(options)), metrics_(std::move(metrics)) {}

absl::StatusOr<std::unique_ptr<KernelEvalServer>> KernelEvalServer::Start(
    Engine* engine, ServerOptions options, std::shared_ptr<ServerMetrics> metrics) {
  auto credentials = MakeCredentials(options);
  if (!credentials.ok()) return credentials.status();

  std::unique_ptr<KernelEvalServer> server(
      new KernelEvalServer(engine, std::move(options), std::move(metrics)));
  const ServerOptions& opts = server->options_;
  server->service_ = std::make_unique<KernelEvalService>(engine, opts.service, server->metrics_);

  if (server->metrics_ && !opts.metrics_address.empty()) {
    auto exposer = MetricsExposer::Start(opts.metrics_address, server->metrics_->registry());
    if (!exposer.ok()) return exposer.status();
    server->exposer_ = *std::move(exposer);
  }

  // Both are process-wide switches read when a builder is created (linking
  // grpc++_reflection already registers the reflection plugin for every
  // builder; WithoutReflection takes it out of this one).
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  grpc::ServerBuilder builder;
  builder.AddListeningPort(opts.listen_address, *credentials, &server->port_);
  // Requests over this size are refused by the transport before parsing;
  // below it the edge validation names the offending field.
  builder.SetMaxReceiveMessageSize(MaxRequestMessageBytes(opts.service.limits));
  builder.RegisterService(server->service_.get());
  // Keepalive: a client that vanished (host down, partitioned) is dropped
  // within ~80 s, its calls cancelled (their evaluations end at once).
  // Clients may ping every 20 s while a call waits with no data, which an
  // evaluation in a queue does for minutes (gRPC's default allows one ping
  // in 5 minutes and closes the connection of a client pinging more):
  // the Python client pings every 60 s to learn of a frozen server.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 20'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  if (opts.transport_memory_bytes > 0) {
    grpc::ResourceQuota quota("kerneleval-transport");
    quota.Resize(static_cast<size_t>(opts.transport_memory_bytes));
    builder.SetResourceQuota(quota);
  }
  if (!opts.reflection) builder.SetOption(std::make_unique<WithoutReflection>());
  if (opts.configure_builder) opts.configure_builder(builder);
  server->server_ = builder.BuildAndStart();
  if (!server->server_ || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("--listen: cannot listen on ", opts.listen_address));
  }

  // NOT_SERVING until the first readiness poll says otherwise.
  server->server_->GetHealthCheckService()->SetServingStatus(kHealthServiceName, false);
  server->readiness_poller_ = std::thread([raw = server.get()] { raw->PollReadiness(); });
  server->started_ = true;
  std::string auth;
  if (!opts.service.token.empty() || !opts.service.client_tokens.empty()) {
    auth = ", bearer token required";
    if (!opts.service.client_tokens.empty()) {
      absl::StrAppend(&auth, " (", opts.service.client_tokens.size(), " named clients",
                      opts.service.token.empty() ? "" : " and a shared token", ")");
    }
  }
  spdlog::info("kerneleval-server listening on port {} ({}){}", server->port_,
               opts.tls_cert_path.empty() ? "plaintext" : "TLS", auth);
  if (server->exposer_) {
    spdlog::info("metrics on http://{}/metrics (port {})", opts.metrics_address,
                 server->exposer_->port());
  }
  return server;
}

KernelEvalServer::~KernelEvalServer() {
  if (started_) Shutdown(absl::Now());
  if (readiness_poller_.joinable()) readiness_poller_.join();
}

int KernelEvalServer::metrics_port() const { return exposer_ ? exposer_->port() : 0; }

void KernelEvalServer::PollReadiness() {
  std::optional<bool> reported;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const bool ready = engine_->Ready();
    if (reported != ready) {
      server_->GetHealthCheckService()->SetServingStatus(kHealthServiceName, ready);
      if (metrics_) metrics_->SetReady(ready);
      spdlog::info("health {}: {}", kHealthServiceName, ready ? "SERVING" : "NOT_SERVING");
      reported = ready;
    }
    lock.lock();
    changed_.wait_for(lock, absl::ToChronoMilliseconds(options_.health_poll_interval),
                      [this] { return stopping_; });
  }
}

void KernelEvalServer::Shutdown(absl::Time deadline) {
  std::call_once(shutdown_once_, [&] {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (readiness_poller_.joinable()) readiness_poller_.join();
    spdlog::info("shutting down: draining calls for up to {:.1f}s",
                 absl::ToDoubleSeconds(std::max(deadline - absl::Now(), absl::ZeroDuration())));
    // Health first, so that load balancers stop sending work; then gRPC
    // (stops accepting, waits for calls, cancels what is left at the
    // deadline) and the engine (finishes or cancels its work by the same
    // deadline, which lets the waiting calls finish) in parallel.
    server_->GetHealthCheckService()->Shutdown();
    service_->BeginShutdown(deadline);
    if (metrics_) metrics_->SetReady(false);
    std::thread grpc_shutdown(
        [this, deadline] { server_->Shutdown(absl::ToChronoTime(deadline)); });
    engine_->Shutdown(deadline);
    grpc_shutdown.join();
    server_->Wait();
    spdlog::info("shut down");
    {
      std::lock_guard lock(mutex_);
      stopped_ = true;
    }
    changed_.notify_all();
  });
}

void KernelEvalServer::Wait() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return stopped_; });
}

void KernelEvalServer::SetClientTokens(std::vector<ClientToken> client_tokens) {
  service_->SetClientTokens(std::move(client_tokens));
}

}  // namespace kerneleval::server
