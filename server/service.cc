#include "server/service.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/byte_buffer.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/log_throttle.h"
#include "server/metrics.h"
#include "server/request_id.h"
#include "server/status.h"

namespace kerneleval::server {
namespace {

// Log lines a second for finished calls, all clients together.
constexpr int kCallLogLinesPerSecond = 50;

LogThrottle& CallLogThrottle() {
  static LogThrottle throttle(kCallLogLinesPerSecond);
  return throttle;
}

std::string_view CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

// Why gRPC cancelled a call: the server's shutdown, the call's deadline, or
// the client (all three were logged and counted as the client's CANCELLED:
// slow answers and clients going away looked alike).
// A client's deadline usually reaches the server as a cancellation (its
// own timer fires first), just before the server's copy of the deadline,
// which started when the request arrived: within kDeadlineSlack of it, a
// cancellation counts as the deadline.
constexpr absl::Duration kDeadlineSlack = absl::Milliseconds(500);

grpc::Status CancelledStatus(absl::Time shutdown_deadline, absl::Time deadline) {
  if (shutdown_deadline <= absl::Now()) {
    return {grpc::StatusCode::UNAVAILABLE, "the server shut down before the call finished"};
  }
  if (deadline - kDeadlineSlack <= absl::Now()) {
    return {grpc::StatusCode::DEADLINE_EXCEEDED, "the call's deadline passed"};
  }
  return {grpc::StatusCode::CANCELLED, "the client cancelled the call"};
}

// The typed messages of a call. gRPC hands the service bytes (service.h):
// the request is parsed here and the response serialized into gRPC's buffer
// just before Finish.
struct WireMessages {
  WireMessages() = default;
  WireMessages(const WireMessages&) = delete;
  WireMessages& operator=(const WireMessages&) = delete;
  WireMessages(WireMessages&&) = delete;
  WireMessages& operator=(WireMessages&&) = delete;
  virtual ~WireMessages() = default;
  [[nodiscard]] virtual grpc::Status SerializeResponse() = 0;
};

// OK, or INVALID_ARGUMENT naming the message the bytes are not. Fields this
// server does not know (a newer client's) are dropped: nothing reads them,
// and they would be held as long as the request.
//
// `bytes` is gRPC's request buffer, released here: it otherwise lives until
// the call finishes, and a queued group then held its bytes beside its
// message. (The handlers get it as const, but gRPC does not read it again
// and the object itself is not const.)
template <typename Message>
absl::Status ParseRequest(const grpc::ByteBuffer* bytes, Message* message) {
  auto* request_bytes = const_cast<grpc::ByteBuffer*>(bytes);
  const size_t length = request_bytes->Length();
  // Deserializing consumes the buffer.
  const bool parsed = grpc::SerializationTraits<Message>::Deserialize(request_bytes, message).ok();
  request_bytes->Clear();
  if (parsed) {
    message->DiscardUnknownFields();
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "request: ", length, " bytes that do not parse as ", Message::descriptor()->full_name(),
      " (not protobuf, or a string field that is not UTF-8)"));
}

template <typename Request, typename Response>
struct UnaryMessages final : WireMessages {
  explicit UnaryMessages(grpc::ByteBuffer* response_bytes_in) : response_bytes(response_bytes_in) {}

  grpc::Status SerializeResponse() override {
    bool own_buffer = false;
    return grpc::SerializationTraits<Response>::Serialize(response, response_bytes, &own_buffer);
  }

  Request request;
  Response response;
  grpc::ByteBuffer* const response_bytes;  // gRPC's, alive until Finish
};

// What every call carries from arrival to finish. Shared (shared_ptr) by the
// reactor and every engine callback, so that a callback arriving after the
// client left never touches freed memory.
struct CallState {
  CallState(std::string_view rpc_name, std::string id,
            const KernelEvalService::CallEnvironment& environment)
      : rpc(rpc_name),
        request_id(std::move(id)),
        metrics(environment.metrics),
        server_shutdown_deadline(environment.shutdown_deadline) {
    if (metrics) metrics->OnRequestStarted();
  }

  [[nodiscard]] grpc::Status Cancelled() const {
    return CancelledStatus(server_shutdown_deadline
                               ? absl::FromUnixNanos(server_shutdown_deadline->load())
                               : absl::InfiniteFuture(),
                           deadline);
  }

  // True for exactly one caller: the one that finishes the RPC (and may
  // write its response). Until then the reactor and response are alive.
  [[nodiscard]] bool Claim() { return !finished.exchange(true); }

  // Metrics and the log line of a finished call (at most
  // kCallLogLinesPerSecond a second; metrics count every call).
  void Record(const grpc::Status& status, std::string_view detail = {}) const {
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (metrics) metrics->OnRequestFinished(rpc, CodeName(status.error_code()), seconds);
    const LogThrottle::Decision decision = CallLogThrottle().Admit(absl::Now());
    if (!decision.log) return;
    if (decision.left_out_before > 0) {
      spdlog::warn("{} call log lines left out (more than {} a second)", decision.left_out_before,
                   kCallLogLinesPerSecond);
    }
    if (status.ok()) {
      const bool evaluation = rpc.rfind("Evaluate", 0) == 0;
      spdlog::log(evaluation ? spdlog::level::info : spdlog::level::debug,
                  "[{}] {} OK{}{}{} {:.3f}s", request_id, rpc, detail.empty() ? "" : " ", detail,
                  client.empty() ? "" : " client=" + client, seconds);
    } else {
      const bool client_side = status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
                               status.error_code() == grpc::StatusCode::NOT_FOUND ||
                               status.error_code() == grpc::StatusCode::CANCELLED ||
                               status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                               status.error_code() == grpc::StatusCode::UNAUTHENTICATED;
      spdlog::log(client_side ? spdlog::level::info : spdlog::level::warn,
                  "[{}] {} {}: {}{} {:.3f}s", request_id, rpc, CodeName(status.error_code()),
                  status.error_message(), client.empty() ? "" : " client=" + client, seconds);
    }
  }

  const std::string_view rpc;
  const std::string request_id;
  const absl::Time start = absl::Now();
  const std::shared_ptr<ServerMetrics> metrics;
  // [Unix ns] When the server's shutdown cancels what is left (its grace
  // period's end); the far future until then.
  const std::shared_ptr<const std::atomic<int64_t>> server_shutdown_deadline;
  absl::Time deadline = absl::InfiniteFuture();  // the client's, set at admission
  // The fairness key of a call that does engine work, for its log line (set
  // before the engine starts, so read after without a lock).
  std::string client;
  std::atomic<bool> cancelled{false};
  std::atomic<bool> finished{false};
  // The named client whose token the call carries (set at admission, before
  // any engine work); empty for the shared token or without authentication.
  std::string token_client;
  // A unary call's messages: alive while any engine callback may write the
  // response.
  std::shared_ptr<WireMessages> messages;
};

// The log line's detail: the problem, and whether the verdict was another
// call's (a cached answer looked like a real 0-second evaluation; rt7 #20).
std::string VerdictSummary(const v1::Verdict& verdict) {
  return absl::StrCat("problem=", verdict.problem_id(), " stage=", verdict.stage(),
                      " reward=", verdict.reward(), verdict.deduplicated() ? " deduplicated" : "");
}

// A unary call finished by whoever claims it first: the engine's callback,
// OnCancel, or the handler itself for an early error.
class UnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit UnaryReactor(std::shared_ptr<CallState> state) : state_(std::move(state)) {}
  void OnCancel() override {
    // Claimed before the engine is told: its answer to the cancellation
    // would otherwise race this one to record the call.
    const bool claimed = state_->Claim();
    state_->cancelled.store(true);
    if (!claimed) return;
    const grpc::Status status = state_->Cancelled();
    state_->Record(status);
    Finish(status);
  }
  void OnDone() override { delete this; }

 private:
  const std::shared_ptr<CallState> state_;
};

// Finishes `reactor` unless someone else did; `fill_response` runs first (the
// response is alive until Finish). Safe from any thread: the reactor is only
// dereferenced after a successful claim.
template <typename FillResponse>
void FinishUnary(const std::shared_ptr<CallState>& state, grpc::ServerUnaryReactor* reactor,
                 const grpc::Status& status, FillResponse&& fill_response,
                 std::string_view detail = {}) {
  if (!state->Claim()) return;
  grpc::Status final_status = status;
  if (final_status.ok()) {
    fill_response();
    if (state->messages) final_status = state->messages->SerializeResponse();
  }
  state->Record(final_status, detail);
  reactor->Finish(final_status);
}

void FinishUnary(const std::shared_ptr<CallState>& state, grpc::ServerUnaryReactor* reactor,
                 const grpc::Status& status) {
  FinishUnary(state, reactor, status, [] {});
}

// EvaluateStream: progress events then the verdict, one write in flight at a
// time. Decisions are taken under `mutex`; calls into gRPC happen after it is
// released (gRPC may run reactions on the calling thread).
class StreamReactor;

struct StreamState : CallState {
  using CallState::CallState;

  // Actions decided under the lock, performed outside it.
  struct Action {
    const grpc::ByteBuffer* write = nullptr;
    std::optional<grpc::Status> finish;
  };

  void Enqueue(v1::EvaluateEvent event) {
    Action action;
    {
      std::lock_guard lock(mutex);
      if (final_status) return;
      pending.push_back(std::move(event));
      action = PumpLocked();
    }
    Perform(action);
  }

  // The final status (and for OK the verdict event, written before it).
  void Complete(const grpc::Status& status, std::optional<v1::EvaluateEvent> last,
                std::string_view detail = {}) {
    Action action;
    {
      std::lock_guard lock(mutex);
      if (final_status) return;
      if (last) pending.push_back(*std::move(last));
      final_status = status;
      Record(status, detail);
      action = PumpLocked();
    }
    Perform(action);
  }

  void OnWriteDone(bool ok) {
    Action action;
    {
      std::lock_guard lock(mutex);
      write_in_flight = false;
      if (!ok) {  // the stream broke: the client is gone
        cancelled.store(true);
        pending.clear();
        if (!final_status) {
          final_status = Cancelled();
          Record(*final_status);
        }
      }
      action = PumpLocked();
    }
    Perform(action);
  }

  void OnCancel() {
    Action action;
    {
      std::lock_guard lock(mutex);
      pending.clear();
      if (!final_status) {
        final_status = Cancelled();
        Record(*final_status);
      }
      action = PumpLocked();
    }
    // Told after the status is decided, as for a unary call: the engine's
    // answer to the cancellation would otherwise race this one.
    cancelled.store(true);
    Perform(action);
  }

  Action PumpLocked() {
    Action action;
    if (finish_called || write_in_flight) return action;
    if (!pending.empty()) {
      bool own_buffer = false;
      writing.Clear();  // the last write is done; serializing needs an empty buffer
      const grpc::Status serialized = grpc::SerializationTraits<v1::EvaluateEvent>::Serialize(
          pending.front(), &writing, &own_buffer);
      pending.pop_front();
      if (serialized.ok()) {
        write_in_flight = true;
        action.write = &writing;
        return action;
      }
      // Never in practice (an event over 2 GiB): end the call with the error.
      pending.clear();
      if (!final_status) {
        final_status = serialized;
        Record(*final_status);
      } else if (final_status->ok()) {
        final_status = serialized;  // already recorded as OK
      }
    }
    if (final_status) {
      finish_called = true;
      action.finish = *final_status;
    }
    return action;
  }

  void Perform(const Action& action);

  std::mutex mutex;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* reactor = nullptr;  // alive until Finish
  std::deque<v1::EvaluateEvent> pending;
  grpc::ByteBuffer writing;  // the event being written, serialized; stable until OnWriteDone
  bool write_in_flight = false;
  std::optional<grpc::Status> final_status;
  bool finish_called = false;
};

class StreamReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  explicit StreamReactor(std::shared_ptr<StreamState> state) : state_(std::move(state)) {
    state_->reactor = this;
  }
  void OnWriteDone(bool ok) override {
    const auto state = state_;  // keeps the state alive across the call
    state->OnWriteDone(ok);
  }
  void OnCancel() override {
    const auto state = state_;
    state->OnCancel();
  }
  void OnDone() override { delete this; }

 private:
  const std::shared_ptr<StreamState> state_;
};

void StreamState::Perform(const Action& action) {
  if (action.write != nullptr) {
    reactor->StartWrite(action.write);
  } else if (action.finish) {
    reactor->Finish(*action.finish);
  }
}

absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

std::string ClientRequestId(const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(kRequestIdHeader);
  if (it == metadata.end()) return NewRequestId();
  return RequestIdFromClient(std::string_view(it->second.data(), it->second.size()));
}

}  // namespace

std::string ClientIdFromPeer(const std::string& peer) {
  const size_t colon = peer.rfind(':');
  const size_t bracket = peer.rfind(']');
  // "ipv6:[::1]:5000": the port follows the bracket; "unix:/path" has none.
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) return peer;
  if (peer.rfind("unix:", 0) == 0) return peer;
  const std::string_view port(peer.data() + colon + 1, peer.size() - colon - 1);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string_view::npos) return peer;
  const size_t first_colon = peer.find(':');
  if (first_colon == colon) return peer;  // "host" part only after the scheme
  return peer.substr(0, colon);
}

namespace {

// The checks every call passes before any engine work; sets the request id
// as initial metadata. OK: proceed.
grpc::Status Admit(grpc::CallbackServerContext* context, CallState& state,
                   const TokenAuthenticator& authenticator) {
  context->AddInitialMetadata(kRequestIdHeader, state.request_id);
  state.deadline = DeadlineOf(*context);
  std::optional<std::string> client = authenticator.Identify(*context);
  if (!client) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "authorization: missing or wrong bearer token");
  }
  state.token_client = *std::move(client);
  if (context->IsCancelled()) return state.Cancelled();
  return ToGrpcStatus(CheckDeadline(DeadlineOf(*context), absl::Now()));
}

// Sends the initial metadata (the request id) as soon as a call that does
// engine work is admitted, not with its answer: a client's gRPC retries a
// call until it has the server's headers (transparent retries, the Python
// client's retry policy), so an evaluation in flight on a server that went
// away was run a second time on another (red team, 2026-12-05: a group ran
// twice, 10.7 s). Called by the handler before it returns the reactor: gRPC
// keeps the request and applies it before any Finish.
void SendHeadersNow(grpc::ServerUnaryReactor* reactor) { reactor->StartSendInitialMetadata(); }

CallContext MakeCallContext(const grpc::CallbackServerContext& context,
                            const std::shared_ptr<CallState>& state, const std::string& client_id) {
  CallContext call;
  call.request_id = state->request_id;
  // A named client's token decides its fairness key; what the request says
  // of itself counts only under the shared token (or none).
  if (!state->token_client.empty()) {
    call.client_id = absl::StrCat(kNamedClientKeyPrefix, state->token_client);
  } else {
    call.client_id = client_id.empty() ? ClientIdFromPeer(context.peer()) : client_id;
  }
  call.deadline = DeadlineOf(context);
  call.cancelled = [state] { return state->cancelled.load(); };
  state->client = call.client_id;
  return call;
}

// The start every unary call shares: its state, messages and reactor,
// admission (token, cancellation, deadline), the request's parse, then
// `validate(request)` (its own checks, an absl::Status). On an early error
// the call is finished here and `proceed` is false: return `reactor` to gRPC.
template <typename Request, typename Response>
struct UnaryStart {
  std::shared_ptr<CallState> state;
  UnaryReactor* reactor = nullptr;
  UnaryMessages<Request, Response>* messages = nullptr;  // owned by `state`
  bool proceed = false;
};

template <typename Request, typename Response, typename Validate>
UnaryStart<Request, Response> BeginUnary(std::string_view rpc, grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer& request_bytes,
                                         grpc::ByteBuffer* response_bytes,
                                         const KernelEvalService::CallEnvironment& environment,
                                         const TokenAuthenticator& authenticator,
                                         Validate&& validate) {
  UnaryStart<Request, Response> start;
  start.state = std::make_shared<CallState>(rpc, ClientRequestId(*context), environment);
  auto messages = std::make_shared<UnaryMessages<Request, Response>>(response_bytes);
  start.messages = messages.get();
  start.state->messages = std::move(messages);
  start.reactor = new UnaryReactor(start.state);
  if (grpc::Status status = Admit(context, *start.state, authenticator); !status.ok()) {
    FinishUnary(start.state, start.reactor, status);
    return start;
  }
  // Parsed once admitted, as the stream's request is: a caller without the
  // token costs no parse.
  if (absl::Status parsed = ParseRequest(&request_bytes, &start.messages->request); !parsed.ok()) {
    FinishUnary(start.state, start.reactor, ToGrpcStatus(parsed));
    return start;
  }
  if (absl::Status status = validate(std::as_const(start.messages->request)); !status.ok()) {
    FinishUnary(start.state, start.reactor, ToGrpcStatus(status));
    return start;
  }
  start.proceed = true;
  return start;
}

template <typename Request, typename Response>
UnaryStart<Request, Response> BeginUnary(std::string_view rpc, grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer& request_bytes,
                                         grpc::ByteBuffer* response_bytes,
                                         const KernelEvalService::CallEnvironment& environment,
                                         const TokenAuthenticator& authenticator) {
  return BeginUnary<Request, Response>(rpc, context, request_bytes, response_bytes, environment,
                                       authenticator,
                                       [](const Request&) { return absl::OkStatus(); });
}

}  // namespace

KernelEvalService::KernelEvalService(Engine* engine, ServiceOptions options,
                                     std::shared_ptr<ServerMetrics> metrics)
    : engine_(engine),
      options_(std::move(options)),
      authenticator_(
          std::make_shared<const TokenAuthenticator>(options_.token, options_.client_tokens)),
      metrics_(std::move(metrics)),
      environment_{.metrics = metrics_, .shutdown_deadline = shutdown_deadline_} {}

void KernelEvalService::BeginShutdown(absl::Time deadline) {
  shutdown_deadline_->store(absl::ToUnixNanos(deadline));
}

KernelEvalService::~KernelEvalService() = default;

std::shared_ptr<const TokenAuthenticator> KernelEvalService::Authenticator() const {
  std::lock_guard lock(authenticator_mutex_);
  return authenticator_;
}

void KernelEvalService::SetClientTokens(std::vector<ClientToken> client_tokens) {
  auto replacement =
      std::make_shared<const TokenAuthenticator>(options_.token, std::move(client_tokens));
  std::lock_guard lock(authenticator_mutex_);
  authenticator_ = std::move(replacement);
}

grpc::ServerUnaryReactor* KernelEvalService::Evaluate(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request_bytes,
                                                      grpc::ByteBuffer* response_bytes) {
  const auto start = BeginUnary<v1::EvaluateRequest, v1::EvaluateResponse>(
      "Evaluate", context, *request_bytes, response_bytes, environment_, *Authenticator(),
      [&](const v1::EvaluateRequest& request) {
        return ValidateEvaluateRequest(request, options_.limits);
      });
  if (!start.proceed) return start.reactor;
  const std::shared_ptr<CallState>& state = start.state;
  UnaryReactor* reactor = start.reactor;
  SendHeadersNow(reactor);
  v1::EvaluateRequest& request = start.messages->request;
  v1::EvaluateResponse* response = &start.messages->response;
  spdlog::debug("[{}] Evaluate problem={} from {}", state->request_id,
                request.has_problem() ? request.problem().id() : request.problem_id(),
                context->peer());
  CallContext call = MakeCallContext(*context, state, request.client_id());
  // The engine takes the request by value: moved, not copied (a source is
  // up to max_source_bytes).
  engine_->EvaluateAsync(std::move(request), std::move(call),
                         [state, reactor, response](absl::StatusOr<v1::Verdict> verdict) {
                           if (!verdict.ok()) {
                             FinishUnary(state, reactor, ToGrpcStatus(verdict.status()));
                             return;
                           }
                           if (verdict->request_id().empty())
                             verdict->set_request_id(state->request_id);
                           const std::string summary = VerdictSummary(*verdict);
                           FinishUnary(
                               state, reactor, grpc::Status::OK,
                               [&] { *response->mutable_verdict() = *std::move(verdict); },
                               summary);
                         });
  return reactor;
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* KernelEvalService::EvaluateStream(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes) {
  auto state =
      std::make_shared<StreamState>("EvaluateStream", ClientRequestId(*context), environment_);
  auto* reactor = new StreamReactor(state);
  if (auto status = Admit(context, *state, *Authenticator()); !status.ok()) {
    state->Complete(status, std::nullopt);
    return reactor;
  }
  v1::EvaluateRequest request;
  if (auto status = ParseRequest(request_bytes, &request); !status.ok()) {
    state->Complete(ToGrpcStatus(status), std::nullopt);
    return reactor;
  }
  if (auto status = ValidateEvaluateRequest(request, options_.limits); !status.ok()) {
    state->Complete(ToGrpcStatus(status), std::nullopt);
    return reactor;
  }
  spdlog::debug("[{}] EvaluateStream problem={} from {}", state->request_id,
                request.has_problem() ? request.problem().id() : request.problem_id(),
                context->peer());
  // Stream events are sent as they come; the initial metadata (with the
  // request id) goes out with the first one.
  CallContext call = MakeCallContext(*context, state, request.client_id());
  call.on_event = [state](const v1::EvaluateEvent& event) {
    if (event.has_verdict()) return;  // the verdict comes through `done`
    state->Enqueue(event);
  };
  engine_->EvaluateAsync(std::move(request), std::move(call),
                         [state](absl::StatusOr<v1::Verdict> verdict) {
                           if (!verdict.ok()) {
                             state->Complete(ToGrpcStatus(verdict.status()), std::nullopt);
                             return;
                           }
                           if (verdict->request_id().empty()) {
                             verdict->set_request_id(state->request_id);
                           }
                           const std::string summary = VerdictSummary(*verdict);
                           v1::EvaluateEvent last;
                           *last.mutable_verdict() = *std::move(verdict);
                           state->Complete(grpc::Status::OK, std::move(last), summary);
                         });
  return reactor;
}

grpc::ServerUnaryReactor* KernelEvalService::EvaluateGroup(grpc::CallbackServerContext* context,
                                                           const grpc::ByteBuffer* request_bytes,
                                                           grpc::ByteBuffer* response_bytes) {
  const auto start = BeginUnary<v1::EvaluateGroupRequest, v1::EvaluateGroupResponse>(
      "EvaluateGroup", context, *request_bytes, response_bytes, environment_, *Authenticator(),
      [&](const v1::EvaluateGroupRequest& request) {
        return ValidateEvaluateGroupRequest(request, options_.limits);
      });
  if (!start.proceed) return start.reactor;
  const std::shared_ptr<CallState>& state = start.state;
  UnaryReactor* reactor = start.reactor;
  SendHeadersNow(reactor);
  v1::EvaluateGroupRequest& request = start.messages->request;
  v1::EvaluateGroupResponse* response = &start.messages->response;
  spdlog::debug("[{}] EvaluateGroup problem={} submissions={} from {}", state->request_id,
                request.has_problem() ? request.problem().id() : request.problem_id(),
                request.submissions_size(), context->peer());
  CallContext call = MakeCallContext(*context, state, request.client_id());
  engine_->EvaluateGroupAsync(
      std::move(request), std::move(call),
      [state, reactor, response](absl::StatusOr<v1::EvaluateGroupResponse> group) {
        if (!group.ok()) {
          FinishUnary(state, reactor, ToGrpcStatus(group.status()));
          return;
        }
        int passed = 0;
        int deduplicated = 0;
        int not_evaluated = 0;  // left unjudged at the group's deadline
        for (auto& verdict : *group->mutable_verdicts()) {
          if (verdict.request_id().empty()) verdict.set_request_id(state->request_id);
          passed += verdict.correct() ? 1 : 0;
          deduplicated += verdict.deduplicated() ? 1 : 0;
          not_evaluated += verdict.stage() == "not_evaluated" ? 1 : 0;
        }
        const std::string summary = absl::StrCat(
            "problem=", group->verdicts_size() > 0 ? group->verdicts(0).problem_id() : "",
            " verdicts=", group->verdicts_size(), " correct=", passed,
            deduplicated > 0 ? absl::StrCat(" deduplicated=", deduplicated) : "",
            not_evaluated > 0 ? absl::StrCat(" not_evaluated=", not_evaluated) : "");
        FinishUnary(
            state, reactor, grpc::Status::OK, [&] { *response = *std::move(group); }, summary);
      });
  return reactor;
}

grpc::ServerUnaryReactor* KernelEvalService::Compile(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request_bytes,
                                                     grpc::ByteBuffer* response_bytes) {
  const auto start = BeginUnary<v1::CompileRequest, v1::CompileResponse>(
      "Compile", context, *request_bytes, response_bytes, environment_, *Authenticator(),
      [&](const v1::CompileRequest& request) {
        return ValidateCompileRequest(request, options_.limits);
      });
  if (!start.proceed) return start.reactor;
  const std::shared_ptr<CallState>& state = start.state;
  UnaryReactor* reactor = start.reactor;
  SendHeadersNow(reactor);
  // The response lives as long as `state`, which the callback holds. The
  // engine answers once the caller's turn on its compile pool came; no
  // thread of the front waits for it.
  v1::CompileResponse* response = &start.messages->response;
  CallContext call = MakeCallContext(*context, state, start.messages->request.client_id());
  engine_->CompileAsync(std::move(start.messages->request), std::move(call),
                        [state, reactor, response](absl::StatusOr<v1::CompileResult> result) {
                          if (!result.ok()) {
                            FinishUnary(state, reactor, ToGrpcStatus(result.status()));
                            return;
                          }
                          FinishUnary(state, reactor, grpc::Status::OK,
                                      [&] { *response->mutable_result() = *std::move(result); });
                        });
  return reactor;
}

grpc::ServerUnaryReactor* KernelEvalService::ListProblems(grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* request_bytes,
                                                          grpc::ByteBuffer* response_bytes) {
  const auto start = BeginUnary<v1::ListProblemsRequest, v1::ListProblemsResponse>(
      "ListProblems", context, *request_bytes, response_bytes, environment_, *Authenticator());
  if (!start.proceed) return start.reactor;
  absl::StatusOr<v1::ListProblemsResponse> result = engine_->ListProblems(start.messages->request);
  FinishUnary(start.state, start.reactor, ToGrpcStatus(result.status()),
              [&] { start.messages->response = *std::move(result); });
  return start.reactor;
}

grpc::ServerUnaryReactor* KernelEvalService::GetProblem(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request_bytes,
                                                        grpc::ByteBuffer* response_bytes) {
  const auto start = BeginUnary<v1::GetProblemRequest, v1::GetProblemResponse>(
      "GetProblem", context, *request_bytes, response_bytes, environment_, *Authenticator(),
      [](const v1::GetProblemRequest& request) { return ValidateGetProblemRequest(request); });
  if (!start.proceed) return start.reactor;
  absl::StatusOr<v1::GetProblemResponse> result = engine_->GetProblem(start.messages->request);
  FinishUnary(start.state, start.reactor, ToGrpcStatus(result.status()),
              [&] { start.messages->response = *std::move(result); });
  return start.reactor;
}

grpc::ServerUnaryReactor* KernelEvalService::ListDevices(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request_bytes,
                                                         grpc::ByteBuffer* response_bytes) {
  const auto start = BeginUnary<v1::ListDevicesRequest, v1::ListDevicesResponse>(
      "ListDevices", context, *request_bytes, response_bytes, environment_, *Authenticator());
  if (!start.proceed) return start.reactor;
  v1::ListDevicesResponse devices = engine_->ListDevices();
  FinishUnary(start.state, start.reactor, grpc::Status::OK,
              [&] { start.messages->response = std::move(devices); });
  return start.reactor;
}

}  // namespace kerneleval::server
