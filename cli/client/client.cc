#include "cli/client/client.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <fstream>
#include <future>
#include <optional>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "kerneleval/v1/kerneleval.grpc.pb.h"

namespace kerneleval::client {

struct KernelEvalClient::Stub {
  std::unique_ptr<v1::KernelEval::Stub> kernel_eval;
  std::unique_ptr<grpc::GenericStub> generic;
};

namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("--tls-ca: cannot read ", path));
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Minimal protobuf wire encoding of grpc.health.v1.HealthCheckRequest
// {string service = 1;}; avoids linking a second copy of health.proto.
grpc::ByteBuffer EncodeHealthRequest(const std::string& service) {
  std::string wire;
  if (!service.empty()) {
    wire.push_back(0x0a);  // field 1, length-delimited
    size_t length = service.size();
    while (length >= 0x80) {
      wire.push_back(static_cast<char>((length & 0x7f) | 0x80));
      length >>= 7;
    }
    wire.push_back(static_cast<char>(length));
    wire += service;
  }
  grpc::Slice slice(wire);
  return grpc::ByteBuffer(&slice, 1);
}

// HealthCheckResponse {ServingStatus status = 1;}: 0 UNKNOWN, 1 SERVING,
// 2 NOT_SERVING, 3 SERVICE_UNKNOWN.
HealthStatus DecodeHealthResponse(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Dump(&slices).ok()) return HealthStatus::kUnknown;
  std::string wire;
  for (const auto& slice : slices) {
    wire.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  if (wire.size() >= 2 && wire[0] == 0x08) {
    switch (wire[1]) {
      case 1:
        return HealthStatus::kServing;
      case 2:
        return HealthStatus::kNotServing;
      case 3:
        return HealthStatus::kServiceUnknown;
      default:
        break;
    }
  }
  return HealthStatus::kUnknown;
}

}  // namespace

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

int ExitCodeForStatus(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return cli::kExitOk;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kAlreadyExists:
      return cli::kExitUsage;
    default:
      return cli::kExitUnavailable;
  }
}

absl::StatusOr<std::unique_ptr<KernelEvalClient>> KernelEvalClient::Create(
    const ClientOptions& options) {
  if (options.target.empty()) return absl::InvalidArgumentError("--server: empty target");
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (!options.tls_ca.empty()) {
    auto ca = ReadFile(options.tls_ca);
    if (!ca.ok()) return ca.status();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *std::move(ca);
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  // Requests are bounded by the server, which says so (by default 1 MiB per
  // source x 128 sources + 16 MiB: 144 MiB); capped here at the response
  // limit, a group of 80 sources of 1 MiB failed before it was sent.
  args.SetMaxSendMessageSize(-1);
  std::string policy = options.lb_policy;
  if (policy.empty() && absl::StartsWith(options.target, "dns:")) policy = "round_robin";
  if (!policy.empty()) {
    if (policy != "round_robin" && policy != "pick_first") {
      return absl::InvalidArgumentError(
          absl::StrCat("--lb-policy: \"", policy, "\" is not round_robin or pick_first"));
    }
    // The service config is the supported way to pick the policy (the
    // grpc.lb_policy_name channel arg is its older spelling).
    args.SetServiceConfigJSON(absl::StrCat("{\"loadBalancingConfig\":[{\"", policy, "\":{}}]}"));
  }
  auto channel = grpc::CreateCustomChannel(options.target, credentials, args);
  if (!channel) return absl::InvalidArgumentError("--server: cannot create a channel");
  return std::unique_ptr<KernelEvalClient>(new KernelEvalClient(options, std::move(channel)));
}

KernelEvalClient::KernelEvalClient(const ClientOptions& options,
                                   std::shared_ptr<grpc::Channel> channel)
    : options_(options), channel_(std::move(channel)), stub_(std::make_unique<Stub>()) {
  stub_->kernel_eval = v1::KernelEval::NewStub(channel_);
  stub_->generic = std::make_unique<grpc::GenericStub>(channel_);
}

KernelEvalClient::~KernelEvalClient() = default;

namespace {

void Prepare(grpc::ClientContext* context, const ClientOptions& options, const CallInfo* info) {
  if (!options.token.empty()) context->AddMetadata("authorization", "Bearer " + options.token);
  if (info != nullptr && !info->request_id.empty()) {
    context->AddMetadata("x-request-id", info->request_id);
  }
  if (options.timeout > absl::ZeroDuration()) {
    context->set_deadline(absl::ToChronoTime(absl::Now() + options.timeout));
  }
}

void Collect(const grpc::ClientContext& context, CallInfo* info) {
  if (info == nullptr) return;
  const auto& metadata = context.GetServerInitialMetadata();
  const auto it = metadata.find("x-request-id");
  if (it != metadata.end()) info->response_request_id.assign(it->second.data(), it->second.size());
}

}  // namespace

absl::StatusOr<v1::Verdict> KernelEvalClient::Evaluate(const v1::EvaluateRequest& request,
                                                       CallInfo* info) {
  grpc::ClientContext context;
  Prepare(&context, options_, info);
  v1::EvaluateResponse response;
  const grpc::Status status = stub_->kernel_eval->Evaluate(&context, request, &response);
  Collect(context, info);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::move(*response.mutable_verdict());
}

absl::StatusOr<v1::Verdict> KernelEvalClient::EvaluateStream(
    const v1::EvaluateRequest& request,
    const std::function<void(const v1::EvaluateEvent&)>& on_event, CallInfo* info) {
  grpc::ClientContext context;
  Prepare(&context, options_, info);
  auto reader = stub_->kernel_eval->EvaluateStream(&context, request);
  std::optional<v1::Verdict> verdict;
  v1::EvaluateEvent event;
  while (reader->Read(&event)) {
    if (on_event) on_event(event);
    if (event.has_verdict()) verdict = std::move(*event.mutable_verdict());
  }
  const grpc::Status status = reader->Finish();
  Collect(context, info);
  if (!status.ok()) return FromGrpcStatus(status);
  if (!verdict) return absl::InternalError("EvaluateStream ended without a verdict event");
  return *std::move(verdict);
}

absl::StatusOr<v1::EvaluateGroupResponse> KernelEvalClient::EvaluateGroup(
    const v1::EvaluateGroupRequest& request, CallInfo* info) {
  grpc::ClientContext context;
  Prepare(&context, options_, info);
  v1::EvaluateGroupResponse response;
  const grpc::Status status = stub_->kernel_eval->EvaluateGroup(&context, request, &response);
  Collect(context, info);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::CompileResult> KernelEvalClient::Compile(const v1::CompileRequest& request,
                                                            CallInfo* info) {
  grpc::ClientContext context;
  Prepare(&context, options_, info);
  v1::CompileResponse response;
  const grpc::Status status = stub_->kernel_eval->Compile(&context, request, &response);
  Collect(context, info);
  if (!status.ok()) return FromGrpcStatus(status);
  return std::move(*response.mutable_result());
}

absl::StatusOr<v1::ListProblemsResponse> KernelEvalClient::ListProblems(
    const v1::ListProblemsRequest& request, CallInfo* info) {
  grpc::ClientContext context;
  Prepare(&context, options_, info);
  v1::ListProblemsResponse response;
  const grpc::Status status = stub_->kernel_eval->ListProblems(&context, request, &response);
  Collect(context, info);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::GetProblemResponse> KernelEvalClient::GetProblem(
    const v1::GetProblemRequest& request, CallInfo* info) {
  grpc::ClientContext context;
  Prepare(&context, options_, info);
  v1::GetProblemResponse response;
  const grpc::Status status = stub_->kernel_eval->GetProblem(&context, request, &response);
  Collect(context, info);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<v1::ListDevicesResponse> KernelEvalClient::ListDevices(CallInfo* info) {
  grpc::ClientContext context;
  Prepare(&context, options_, info);
  v1::ListDevicesResponse response;
  const grpc::Status status =
      stub_->kernel_eval->ListDevices(&context, v1::ListDevicesRequest(), &response);
  Collect(context, info);
  if (!status.ok()) return FromGrpcStatus(status);
  return response;
}

absl::StatusOr<HealthStatus> KernelEvalClient::CheckHealth(const std::string& service) {
  grpc::ClientContext context;
  if (options_.timeout > absl::ZeroDuration()) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  }
  const grpc::ByteBuffer request = EncodeHealthRequest(service);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub_->generic->UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &request,
                            &response,
                            [&done](grpc::Status status) { done.set_value(std::move(status)); });
  const grpc::Status status = done.get_future().get();
  if (!status.ok()) return FromGrpcStatus(status);
  return DecodeHealthResponse(response);
}

}  // namespace kerneleval::client
