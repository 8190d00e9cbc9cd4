// A KernelEvalServer on loopback (a free port) in front of a FakeEngine.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "cli/client/client.h"
#include "server/metrics.h"
#include "server/server.h"
#include "tests/server/fake_engine.h"

namespace kerneleval::testing {

class TestServer {
 public:
  // `adjust` may change the options before the start (token, TLS, limits).
  explicit TestServer(const std::function<void(server::ServerOptions&)>& adjust = {})
      : metrics_(std::make_shared<server::ServerMetrics>()) {
    engine_.set_observer(metrics_);
    server::ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    // No metrics endpoint unless a test asks: stopping civetweb takes ~2 s.
    options.health_poll_interval = absl::Milliseconds(10);
    if (adjust) adjust(options);
    auto started = server::KernelEvalServer::Start(&engine_, options, metrics_);
    if (!started.ok()) {
      ADD_FAILURE() << "server start: " << started.status();
      return;
    }
    server_ = *std::move(started);
  }

  [[nodiscard]] bool ok() const { return server_ != nullptr; }
  FakeEngine& engine() { return engine_; }
  server::KernelEvalServer& server() { return *server_; }
  [[nodiscard]] std::string target() const {
    return "127.0.0.1:" + std::to_string(server_->port());
  }

  std::unique_ptr<client::KernelEvalClient> Client(client::ClientOptions options = {}) {
    if (options.target.empty()) options.target = target();
    auto created = client::KernelEvalClient::Create(options);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *std::move(created) : nullptr;
  }

 private:
  FakeEngine engine_;  // declared first: outlives the server
  std::shared_ptr<server::ServerMetrics> metrics_;
  std::unique_ptr<server::KernelEvalServer> server_;
};

inline v1::EvaluateRequest EvaluateRequestWith(const std::string& source,
                                               const std::string& problem_id = "softmax") {
  v1::EvaluateRequest request;
  request.set_problem_id(problem_id);
  request.mutable_submission()->set_source(source);
  return request;
}

inline v1::EvaluateGroupRequest GroupRequestWith(const std::vector<std::string>& sources,
                                                 const std::string& problem_id = "softmax") {
  v1::EvaluateGroupRequest request;
  request.set_problem_id(problem_id);
  for (const auto& source : sources) request.add_submissions()->set_source(source);
  return request;
}

}  // namespace kerneleval::testing
