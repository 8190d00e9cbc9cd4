// kerneleval.v1.KernelEval on gRPC's callback API. Every handler returns at
// once: evaluations go to Engine::EvaluateAsync / EvaluateGroupAsync and the
// reactor is finished from the engine's callback; Compile runs on a small
// pool; the listing RPCs answer inline (in-memory lookups).
//
// Per call, before any engine work: a request id (the client's x-request-id
// or a new one, returned as initial metadata x-request-id and put in every
// log line), the bearer token, cancellation, the deadline, then the edge
// validation of server/validation.h. Engine errors become gRPC statuses in
// ToGrpcStatus (server/status.h) and nowhere else.
#pragma once

#include <memory>
#include <string>

// <optional> before engine.h: it uses std::optional without including it.
#include <optional>

#include "evaluator/engine/engine.h"
#include "evaluator/engine/thread_pool.h"
#include "kerneleval/v1/kerneleval.grpc.pb.h"
#include "server/auth.h"
#include "server/validation.h"

namespace kerneleval::server {

class ServerMetrics;

struct ServiceOptions {
  RequestLimits limits;
  std::string token;         // empty: no authentication
  int blocking_threads = 4;  // pool for the synchronous engine calls (Compile)
};

class KernelEvalService final : public v1::KernelEval::CallbackService {
 public:
  // `engine` must outlive the service; `metrics` may be null.
  KernelEvalService(Engine* engine, ServiceOptions options, std::shared_ptr<ServerMetrics> metrics);
  ~KernelEvalService() override;

  grpc::ServerUnaryReactor* Evaluate(grpc::CallbackServerContext* context,
                                     const v1::EvaluateRequest* request,
                                     v1::EvaluateResponse* response) override;
  grpc::ServerWriteReactor<v1::EvaluateEvent>* EvaluateStream(
      grpc::CallbackServerContext* context, const v1::EvaluateRequest* request) override;
  grpc::ServerUnaryReactor* EvaluateGroup(grpc::CallbackServerContext* context,
                                          const v1::EvaluateGroupRequest* request,
                                          v1::EvaluateGroupResponse* response) override;
  grpc::ServerUnaryReactor* Compile(grpc::CallbackServerContext* context,
                                    const v1::CompileRequest* request,
                                    v1::CompileResponse* response) override;
  grpc::ServerUnaryReactor* ListProblems(grpc::CallbackServerContext* context,
                                         const v1::ListProblemsRequest* request,
                                         v1::ListProblemsResponse* response) override;
  grpc::ServerUnaryReactor* GetProblem(grpc::CallbackServerContext* context,
                                       const v1::GetProblemRequest* request,
                                       v1::GetProblemResponse* response) override;
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* context,
                                        const v1::ListDevicesRequest* request,
                                        v1::ListDevicesResponse* response) override;

  // Refuses new Compile work (UNAVAILABLE) and lets queued Compile calls
  // finish. Call after the gRPC server stopped accepting calls.
  void StopBlockingWork();

 private:
  Engine* engine_;
  ServiceOptions options_;
  TokenAuthenticator authenticator_;
  std::shared_ptr<ServerMetrics> metrics_;
  std::unique_ptr<ThreadPool> blocking_pool_;
};

// The fairness key when a request names none: the peer's host without the
// port ("ipv4:10.0.0.7:51234" -> "ipv4:10.0.0.7"), so that every process of
// one rollout host shares it.
[[nodiscard]] std::string ClientIdFromPeer(const std::string& peer);

}  // namespace kerneleval::server
