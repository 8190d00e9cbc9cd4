#include "server/metrics.h"

#include <prometheus/exposer.h>

#include <algorithm>
#include <exception>

#include "absl/strings/str_cat.h"
#include "server/validation.h"

namespace kerneleval::server {

const prometheus::Histogram::BucketBoundaries& LatencyBucketsSeconds() {
  // Compile cache hits are ~1 ms, NVRTC compiles ~0.1-2 s, a full evaluation
  // with timing seconds to minutes.
  static const prometheus::Histogram::BucketBoundaries kBounds = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 300};
  return kBounds;
}

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("kerneleval_requests_total")
                    .Help("RPCs finished, by method and gRPC status code")
                    .Register(*registry_)),
      request_duration_(prometheus::BuildHistogram()
                            .Name("kerneleval_request_duration_seconds")
                            .Help("RPC duration from arrival to finish [s]")
                            .Register(*registry_)),
      in_flight_(prometheus::BuildGauge()
                     .Name("kerneleval_requests_in_flight")
                     .Help("RPCs started and not yet finished")
                     .Register(*registry_)
                     .Add({})),
      verdicts_(prometheus::BuildCounter()
                    .Name("kerneleval_verdicts_total")
                    .Help("Finished evaluations by verdict stage")
                    .Register(*registry_)),
      stage_duration_(prometheus::BuildHistogram()
                          .Name("kerneleval_stage_duration_seconds")
                          .Help("Engine stage durations [s]: compile, host_build (the CPU "
                                "backend's builds in the compile stage), correctness, timing, "
                                "queue_wait, total")
                          .Register(*registry_)),
      queue_depth_(prometheus::BuildGauge()
                       .Name("kerneleval_queue_depth")
                       .Help("Evaluations queued per device")
                       .Register(*registry_)),
      worker_restarts_(prometheus::BuildCounter()
                           .Name("kerneleval_worker_restarts_total")
                           .Help("Worker processes restarted, by backend")
                           .Register(*registry_)),
      cache_hits_(prometheus::BuildCounter()
                      .Name("kerneleval_compile_cache_hits_total")
                      .Help("Compile cache hits")
                      .Register(*registry_)
                      .Add({})),
      cache_misses_(prometheus::BuildCounter()
                        .Name("kerneleval_compile_cache_misses_total")
                        .Help("Compile cache misses")
                        .Register(*registry_)
                        .Add({})),
      reference_cache_(prometheus::BuildCounter()
                           .Name("kerneleval_reference_cache_total")
                           .Help("Prepared references (problem, device) found (hit) or "
                                 "compiled (miss)")
                           .Register(*registry_)),
      deduplicated_(prometheus::BuildCounter()
                        .Name("kerneleval_deduplicated_total")
                        .Help("Evaluate calls answered without a run: the verdict of an identical "
                              "submission in flight or recently judged (the recent-verdict cache)")
                        .Register(*registry_)
                        .Add({})),
      ready_(prometheus::BuildGauge()
                 .Name("kerneleval_ready")
                 .Help("1 when the engine has a ready worker (health SERVING)")
                 .Register(*registry_)
                 .Add({})),
      client_device_seconds_(
          prometheus::BuildCounter()
              .Name("kerneleval_client_device_seconds_total")
              .Help("Device time of evaluations [s] by named client (token:<name>, from "
                    "--tokens-file), the rest as unnamed: who uses the devices")
              .Register(*registry_)) {}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::OnLatency(std::string_view stage, double seconds) {
  stage_duration_.Add({{"stage", std::string(stage)}}, LatencyBucketsSeconds()).Observe(seconds);
}

void ServerMetrics::OnVerdict(std::string_view stage) {
  verdicts_.Add({{"stage", std::string(stage)}}).Increment();
}

void ServerMetrics::OnWorkerRestart(std::string_view backend) {
  worker_restarts_.Add({{"backend", std::string(backend)}}).Increment();
}

void ServerMetrics::OnCompileCache(bool hit) { (hit ? cache_hits_ : cache_misses_).Increment(); }

void ServerMetrics::OnReferenceCache(bool hit) {
  reference_cache_.Add({{"result", hit ? "hit" : "miss"}}).Increment();
}

void ServerMetrics::OnQueueDepth(std::string_view device, int depth) {
  queue_depth_.Add({{"device", std::string(device)}}).Set(depth);
}

void ServerMetrics::OnDeduplicated() { deduplicated_.Increment(); }

void ServerMetrics::OnDeviceSeconds(std::string_view client_id, double seconds) {
  // Named clients only get a label each: a key a request names itself (or a
  // peer address) would let callers grow the label set without bound.
  const bool named = client_id.rfind(kNamedClientKeyPrefix, 0) == 0;
  client_device_seconds_.Add({{"client", named ? std::string(client_id) : "unnamed"}})
      .Increment(std::max(0.0, seconds));
}

void ServerMetrics::OnRequestStarted() { in_flight_.Increment(); }

void ServerMetrics::OnRequestFinished(std::string_view rpc, std::string_view code_name,
                                      double seconds) {
  in_flight_.Decrement();
  requests_.Add({{"rpc", std::string(rpc)}, {"code", std::string(code_name)}}).Increment();
  request_duration_.Add({{"rpc", std::string(rpc)}}, LatencyBucketsSeconds()).Observe(seconds);
}

void ServerMetrics::SetReady(bool ready) { ready_.Set(ready ? 1 : 0); }

MetricsExposer::MetricsExposer(std::unique_ptr<prometheus::Exposer> exposer, int port)
    : exposer_(std::move(exposer)), port_(port) {}

MetricsExposer::~MetricsExposer() = default;

absl::StatusOr<std::unique_ptr<MetricsExposer>> MetricsExposer::Start(
    const std::string& bind_address, const std::shared_ptr<prometheus::Registry>& registry) {
  std::unique_ptr<prometheus::Exposer> exposer;
  try {
    // Two HTTP threads: scrapes are rare and cheap.
    exposer = std::make_unique<prometheus::Exposer>(bind_address, 2);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("--metrics-port: cannot listen on ", bind_address, ": ", e.what()));
  }
  exposer->RegisterCollectable(registry);
  const auto ports = exposer->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("--metrics-port: no port bound for ", bind_address));
  }
  return std::unique_ptr<MetricsExposer>(new MetricsExposer(std::move(exposer), ports.front()));
}

}  // namespace kerneleval::server
