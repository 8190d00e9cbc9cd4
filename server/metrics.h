// Prometheus metrics: the engine's (through EngineObserver) and the server's
// own (requests by RPC and status code). Served over HTTP by MetricsExposer.
//
//   kerneleval_requests_total{rpc,code}            counter
//   kerneleval_request_duration_seconds{rpc}       histogram [s], RPC start to finish
//   kerneleval_requests_in_flight                  gauge
//   kerneleval_verdicts_total{stage}               counter ("passed", "compile", ...)
//   kerneleval_stage_duration_seconds{stage}       histogram [s]: compile_wait, compile,
//                                                  host_build, correctness, timing,
//                                                  queue_wait, total
//   kerneleval_queue_depth{device}                 gauge
//   kerneleval_worker_restarts_total{backend}      counter
//   kerneleval_compile_cache_hits_total            counter
//   kerneleval_compile_cache_misses_total          counter
//   kerneleval_reference_cache_total{result}       counter: "hit", "miss" (prepared
//                                                  references by problem and device)
//   kerneleval_deduplicated_total                  counter
//   kerneleval_ready                               gauge, 1 when Engine::Ready()
//   kerneleval_client_device_seconds_total{client} counter [s]: device time of
//                                                  evaluations, by named client
//                                                  ("token:<name>", --tokens-file)
//                                                  or "unnamed" (bounded labels)
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
// <optional> before engine.h: it uses std::optional without including it.
#include <optional>

#include "evaluator/engine/engine.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace kerneleval::server {

class ServerMetrics final : public EngineObserver {
 public:
  ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;
  ~ServerMetrics() override;

  // EngineObserver (called from engine threads; prometheus-cpp is thread-safe).
  void OnLatency(std::string_view stage, double seconds) override;
  void OnVerdict(std::string_view stage) override;
  void OnWorkerRestart(std::string_view backend) override;
  void OnCompileCache(bool hit) override;
  void OnReferenceCache(bool hit) override;
  void OnQueueDepth(std::string_view device, int depth) override;
  void OnDeduplicated() override;
  void OnDeviceSeconds(std::string_view client_id, double seconds) override;

  // Server side.
  void OnRequestStarted();
  // `code_name` as in grpc (e.g. "OK", "RESOURCE_EXHAUSTED").
  void OnRequestFinished(std::string_view rpc, std::string_view code_name, double seconds);
  void SetReady(bool ready);

  [[nodiscard]] const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& request_duration_;
  prometheus::Gauge& in_flight_;
  prometheus::Family<prometheus::Counter>& verdicts_;
  prometheus::Family<prometheus::Histogram>& stage_duration_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Counter>& worker_restarts_;
  prometheus::Counter& cache_hits_;
  prometheus::Counter& cache_misses_;
  prometheus::Family<prometheus::Counter>& reference_cache_;
  prometheus::Counter& deduplicated_;
  prometheus::Gauge& ready_;
  prometheus::Family<prometheus::Counter>& client_device_seconds_;
};

// The HTTP endpoint GET /metrics in Prometheus text format.
class MetricsExposer {
 public:
  // `bind_address` "HOST:PORT"; port 0 picks a free one (see port()).
  static absl::StatusOr<std::unique_ptr<MetricsExposer>> Start(
      const std::string& bind_address, const std::shared_ptr<prometheus::Registry>& registry);
  ~MetricsExposer();
  MetricsExposer(const MetricsExposer&) = delete;
  MetricsExposer& operator=(const MetricsExposer&) = delete;

  [[nodiscard]] int port() const { return port_; }

 private:
  MetricsExposer(std::unique_ptr<prometheus::Exposer> exposer, int port);
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_;
};

// Bucket bounds [s] shared by the latency histograms: 1 ms to ~5 min.
[[nodiscard]] const prometheus::Histogram::BucketBoundaries& LatencyBucketsSeconds();

}  // namespace kerneleval::server
