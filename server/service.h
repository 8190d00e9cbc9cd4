// kerneleval.v1.KernelEval on gRPC's callback API. Every handler returns at
// once: evaluations go to Engine::EvaluateAsync / EvaluateGroupAsync and the
// reactor is finished from the engine's callback; Compile runs on a small
// pool; the listing RPCs answer inline (in-memory lookups).
//
// Per call, before any engine work: a request id (the client's x-request-id
// or a new one, returned as initial metadata x-request-id and put in every
// log line), the bearer token, cancellation, the deadline, the request's parse
// (INVALID_ARGUMENT for bytes that are not the request message), then the edge
// validation of server/validation.h. Engine errors become gRPC statuses in
// ToGrpcStatus (server/status.h) and nowhere else.
#pragma once

#include <atomic>
#include <limits>
#include <memory>
#include <mutex>
#include <string>

// <optional> before engine.h: it uses std::optional without including it.
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "evaluator/engine/engine.h"
#include "kerneleval/v1/kerneleval.grpc.pb.h"
#include "server/auth.h"
#include "server/validation.h"

namespace kerneleval::server {

class ServerMetrics;

struct ServiceOptions {
  RequestLimits limits;
  std::string token;  // shared by its callers; empty with no client_tokens: no authentication
  // Named clients' own tokens (--tokens-file): a call with one has that
  // fairness key token:<name>, whatever its request's client_id says.
  std::vector<ClientToken> client_tokens;
};

// Every method is registered raw (bytes in, bytes out) and parses its request
// here: gRPC 1.51's typed callback handlers answer bytes that do not parse as
// the request message with UNIMPLEMENTED and no message, where a client
// needs INVALID_ARGUMENT saying so.
using RawKernelEvalService = v1::KernelEval::WithRawCallbackMethod_Evaluate<
    v1::KernelEval::WithRawCallbackMethod_EvaluateStream<
        v1::KernelEval::WithRawCallbackMethod_EvaluateGroup<
            v1::KernelEval::WithRawCallbackMethod_Compile<
                v1::KernelEval::WithRawCallbackMethod_ListProblems<
                    v1::KernelEval::WithRawCallbackMethod_GetProblem<
                        v1::KernelEval::WithRawCallbackMethod_ListDevices<
                            v1::KernelEval::Service>>>>>>>;

class KernelEvalService final : public RawKernelEvalService {
 public:
  // `engine` must outlive the service; `metrics` may be null.
  KernelEvalService(Engine* engine, ServiceOptions options, std::shared_ptr<ServerMetrics> metrics);
  KernelEvalService(const KernelEvalService&) = delete;
  KernelEvalService& operator=(const KernelEvalService&) = delete;
  ~KernelEvalService() override;

  // Each parses its request (kerneleval.v1.<Rpc>Request) and serializes its
  // response (kerneleval.v1.<Rpc>Response; EvaluateEvent for the stream).
  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* EvaluateStream(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* EvaluateGroup(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListProblems(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetProblem(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;

  // Replaces the named clients' tokens (the shared token stays): calls
  // admitted from now on are checked against these; calls already admitted
  // keep their key. Thread-safe.
  void SetClientTokens(std::vector<ClientToken> client_tokens);

  // The server shuts down: calls cancelled from `deadline` on (the end of
  // its grace period, when gRPC cancels what is left) were cancelled by the
  // shutdown (logged and counted as UNAVAILABLE, not as the client's
  // cancellation; a client leaving during the grace period is still its own).
  void BeginShutdown(absl::Time deadline);

  // What every call of this service shares: its metrics, and when the
  // server's shutdown cancels calls ([Unix ns]; the far future until then).
  struct CallEnvironment {
    std::shared_ptr<ServerMetrics> metrics;
    std::shared_ptr<const std::atomic<int64_t>> shutdown_deadline;
  };

 private:
  // The tokens as of now (a snapshot a call keeps while it is admitted).
  [[nodiscard]] std::shared_ptr<const TokenAuthenticator> Authenticator() const;

  Engine* engine_;
  ServiceOptions options_;
  mutable std::mutex authenticator_mutex_;
  std::shared_ptr<const TokenAuthenticator> authenticator_;
  std::shared_ptr<ServerMetrics> metrics_;
  std::shared_ptr<std::atomic<int64_t>> shutdown_deadline_ =
      std::make_shared<std::atomic<int64_t>>(std::numeric_limits<int64_t>::max());
  CallEnvironment environment_;
};

// The fairness key when a request names none: the peer's host without the
// port ("ipv4:10.0.0.7:51234" -> "ipv4:10.0.0.7"), so that every process of
// one rollout host shares it.
[[nodiscard]] std::string ClientIdFromPeer(const std::string& peer);

}  // namespace kerneleval::server
