// KernelEvalService over loopback against the scripted FakeEngine.
#include <arpa/inet.h>
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>
#include <utility>

#include "kerneleval/v1/kerneleval.grpc.pb.h"
#include "tests/server/reflection_client.h"
#include "tests/server/test_server.h"
#include "tests/support/scoped_temp_dir.h"

namespace kerneleval::testing {
namespace {

using client::CallInfo;
using client::HealthStatus;
using std::chrono::milliseconds;

// ------------------------------------------------------------------ each RPC

TEST(Service, EvaluateReturnsTheEnginesVerdict) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  auto verdict = client->Evaluate(EvaluateRequestWith("pass 0.75"));
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_TRUE(verdict->correct());
  EXPECT_EQ(verdict->stage(), "passed");
  EXPECT_DOUBLE_EQ(verdict->reward(), 0.75);
  EXPECT_EQ(verdict->problem_id(), "softmax");

  verdict = client->Evaluate(EvaluateRequestWith("fail correctness"));
  ASSERT_TRUE(verdict.ok()) << verdict.status();  // a wrong kernel is a result, not an error
  EXPECT_FALSE(verdict->correct());
  EXPECT_EQ(verdict->stage(), "correctness");
  EXPECT_EQ(server.engine().evaluate_calls.load(), 2);
}

TEST(Service, EvaluateStreamSendsEveryEventThenTheVerdict) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  std::vector<v1::EvaluateEvent> events;
  auto verdict = client->EvaluateStream(EvaluateRequestWith("events 5 pass 0.5"),
                                        [&](const v1::EvaluateEvent& e) { events.push_back(e); });
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_DOUBLE_EQ(verdict->reward(), 0.5);
  ASSERT_EQ(events.size(), 6u);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(events[i].has_timing());
    EXPECT_EQ(events[i].timing().samples(), static_cast<uint32_t>(i + 1));  // in order
  }
  EXPECT_TRUE(events.back().has_verdict());
}

TEST(Service, EvaluateStreamErrorIsTheStreamsStatus) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  int events = 0;
  auto verdict = client->EvaluateStream(EvaluateRequestWith("events 2 error 14 worker down"),
                                        [&](const v1::EvaluateEvent&) { ++events; });
  EXPECT_EQ(verdict.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(verdict.status().message(), "worker down");
  EXPECT_EQ(events, 2);
}

TEST(Service, EvaluateGroupKeepsSubmissionOrder) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  auto group = client->EvaluateGroup(
      GroupRequestWith({"pass 0.1", "fail compile", "delay 20 pass 0.3", "fail runtime"}));
  ASSERT_TRUE(group.ok()) << group.status();
  ASSERT_EQ(group->verdicts_size(), 4);
  EXPECT_DOUBLE_EQ(group->verdicts(0).reward(), 0.1);
  EXPECT_EQ(group->verdicts(1).stage(), "compile");
  EXPECT_DOUBLE_EQ(group->verdicts(2).reward(), 0.3);
  EXPECT_EQ(group->verdicts(3).stage(), "runtime");
  EXPECT_EQ(group->reference_timing().samples(), 10u);
  EXPECT_EQ(server.engine().group_calls.load(), 1);
}

TEST(Service, CompileListAndGet) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  v1::CompileRequest compile;
  compile.set_source("__global__ void kernel() {}");
  compile.mutable_options()->set_arch("sm_80");
  auto compiled = client->Compile(compile);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_TRUE(compiled->success());
  EXPECT_EQ(compiled->arch(), "sm_80");
  compile.set_source("fail compile");
  compiled = client->Compile(compile);
  ASSERT_TRUE(compiled.ok());
  EXPECT_FALSE(compiled->success());
  EXPECT_EQ(compiled->diagnostics_size(), 1);

  auto problems = client->ListProblems(v1::ListProblemsRequest());
  ASSERT_TRUE(problems.ok());
  EXPECT_EQ(problems->problems_size(), 2);
  v1::ListProblemsRequest by_tag;
  by_tag.set_tag("level2");
  problems = client->ListProblems(by_tag);
  ASSERT_TRUE(problems.ok());
  ASSERT_EQ(problems->problems_size(), 1);
  EXPECT_EQ(problems->problems(0).id(), "gemm");

  v1::GetProblemRequest get;
  get.set_problem_id("softmax");
  auto problem = client->GetProblem(get);
  ASSERT_TRUE(problem.ok());
  EXPECT_EQ(problem->problem().id(), "softmax");
  get.set_problem_id("nope");
  problem = client->GetProblem(get);
  EXPECT_EQ(problem.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(problem.status().message(), "problem_id: unknown problem \"nope\"");

  auto devices = client->ListDevices();
  ASSERT_TRUE(devices.ok());
  ASSERT_EQ(devices->devices_size(), 1);
  EXPECT_EQ(devices->devices(0).id(), "cpu");
}

// ------------------------------------------------------------ status mapping

TEST(Service, EveryEngineErrorCodeReachesTheClientUnchanged) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  for (int code = 1; code <= 16; ++code) {
    SCOPED_TRACE(code);
    const std::string message = "scripted " + std::to_string(code);
    const std::string script = "error " + std::to_string(code) + " " + message;
    const auto expected = static_cast<absl::StatusCode>(code);

    auto verdict = client->Evaluate(EvaluateRequestWith(script));
    EXPECT_EQ(verdict.status().code(), expected);
    EXPECT_EQ(verdict.status().message(), message);

    auto streamed = client->EvaluateStream(EvaluateRequestWith(script), nullptr);
    EXPECT_EQ(streamed.status().code(), expected);
    EXPECT_EQ(streamed.status().message(), message);

    auto group = client->EvaluateGroup(GroupRequestWith({script, "pass"}));
    EXPECT_EQ(group.status().code(), expected);
    EXPECT_EQ(group.status().message(), message);

    v1::CompileRequest compile;
    compile.set_source(script);
    auto compiled = client->Compile(compile);
    EXPECT_EQ(compiled.status().code(), expected);
    EXPECT_EQ(compiled.status().message(), message);
  }
}

TEST(Service, EdgeValidationAnswersWithoutTheEngine) {
  TestServer server([](server::ServerOptions& options) {
    options.service.limits = {/*max_source_bytes=*/1 << 20, /*max_group_size=*/4};
  });
  ASSERT_TRUE(server.ok());
  auto client = server.Client();

  auto verdict = client->Evaluate(EvaluateRequestWith(std::string(2'000'000, 'x')));
  EXPECT_EQ(verdict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(verdict.status().message(),
            "submission.source: 2000000 bytes exceeds the 1048576-byte limit");

  verdict = client->Evaluate(EvaluateRequestWith(""));
  EXPECT_EQ(verdict.status().message(), "submission.source: empty");

  v1::EvaluateRequest no_problem = EvaluateRequestWith("pass");
  no_problem.clear_problem_ref();
  verdict = client->EvaluateStream(no_problem, nullptr);
  EXPECT_EQ(verdict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(verdict.status().message(), "problem_ref: set problem_id or problem");

  auto group = client->EvaluateGroup(GroupRequestWith({"a", "b", "c", "d", "e"}));
  EXPECT_EQ(group.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(group.status().message(), "submissions: 5 submissions exceed the group limit of 4");

  v1::CompileRequest compile;
  EXPECT_EQ(client->Compile(compile).status().message(), "source: empty");
  v1::GetProblemRequest get;
  EXPECT_EQ(client->GetProblem(get).status().message(), "problem_id: empty");

  EXPECT_EQ(server.engine().evaluate_calls.load(), 0);
  EXPECT_EQ(server.engine().group_calls.load(), 0);
  EXPECT_EQ(server.engine().compile_calls.load(), 0);
}

TEST(Service, OversizedMessageIsRefusedByTheTransport) {
  TestServer server([](server::ServerOptions& options) {
    options.service.limits = {/*max_source_bytes=*/1000, /*max_group_size=*/1};
  });
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  // Over MaxRequestMessageBytes (1000 * 1 + 16 MiB): never parsed.
  auto verdict = client->Evaluate(EvaluateRequestWith(std::string(17 << 20, 'x')));
  EXPECT_EQ(verdict.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(server.engine().evaluate_calls.load(), 0);
}

TEST(Service, ARequestOverTheTransportsMemoryBoundIsRefusedWhole) {
  TestServer server([](server::ServerOptions& options) {
    options.service.limits = {/*max_source_bytes=*/1 << 20, /*max_group_size=*/64};
    options.transport_memory_bytes = 8 << 20;
  });
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  // 16 MiB: under the transport's size limit (80 MiB), over its memory bound.
  const std::vector<std::string> big(16, std::string(1 << 20, 'x'));
  auto refused = client->EvaluateGroup(GroupRequestWith(big));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_EQ(server.engine().group_calls.load(), 0);
  auto small = client->EvaluateGroup(GroupRequestWith({"pass", "pass"}));
  EXPECT_TRUE(small.ok()) << small.status();
}

// The client caps responses (64 MiB by default), not requests: the server
// bounds those and says so. A group of 80 sources of 1 MiB (80 MiB, within
// the server's 1 MiB x 128 + 16 MiB) failed in the client before it was sent.
TEST(Service, AGroupLargerThanTheClientsResponseLimitIsSent) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  const std::vector<std::string> big(80, std::string(1 << 20, 'x'));
  auto group = client->EvaluateGroup(GroupRequestWith(big));
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ(group->verdicts_size(), 80);
}

// A call whose request is `bytes` as they are, as a client built from
// another schema (or a broken one) sends them. A server-streaming method
// answers it like a unary one when it sends no message before its status.
grpc::Status CallWithBytes(const std::string& target, const std::string& method,
                           const std::string& bytes, const std::string& token = {}) {
  grpc::GenericStub stub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/kerneleval.v1.KernelEval/" + method, grpc::StubOptions(), &request,
                 &response, [&done](grpc::Status status) { done.set_value(std::move(status)); });
  return done.get_future().get();
}

TEST(Service, BytesThatAreNotTheRequestAreInvalidArgumentNamingTheMessage) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  // 0xff is no protobuf tag (field 31, wire type 7).
  const std::string garbage = "\xff\xff\xff\xff not a protobuf message";
  const std::pair<std::string, std::string> methods[] = {
      {"Evaluate", "kerneleval.v1.EvaluateRequest"},
      {"EvaluateStream", "kerneleval.v1.EvaluateRequest"},
      {"EvaluateGroup", "kerneleval.v1.EvaluateGroupRequest"},
      {"Compile", "kerneleval.v1.CompileRequest"},
      {"ListProblems", "kerneleval.v1.ListProblemsRequest"},
      {"GetProblem", "kerneleval.v1.GetProblemRequest"},
      {"ListDevices", "kerneleval.v1.ListDevicesRequest"}};
  for (const auto& [method, message] : methods) {
    const grpc::Status status = CallWithBytes(server.target(), method, garbage);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_EQ(status.error_message(), "request: " + std::to_string(garbage.size()) +
                                          " bytes that do not parse as " + message +
                                          " (not protobuf, or a string field that is not UTF-8)")
        << method;
  }
  // A well-formed message whose string is not UTF-8 (protobuf serializes it
  // with a logged complaint; the server's parse refuses it).
  const std::string not_utf8 =
      EvaluateRequestWith("__global__ void k() {} // \xc3\x28").SerializeAsString();
  for (const std::string method : {"Evaluate", "EvaluateStream"}) {
    const grpc::Status status = CallWithBytes(server.target(), method, not_utf8);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method;
    EXPECT_NE(status.error_message().find("kerneleval.v1.EvaluateRequest"), std::string::npos);
  }
  // The same bytes, well-formed, reach the engine.
  const grpc::Status good =
      CallWithBytes(server.target(), "Evaluate", EvaluateRequestWith("pass").SerializeAsString());
  EXPECT_TRUE(good.ok()) << good.error_message();
  EXPECT_EQ(server.engine().evaluate_calls.load(), 1);
  EXPECT_EQ(server.engine().group_calls.load(), 0);
  EXPECT_EQ(server.engine().compile_calls.load(), 0);
}

TEST(Service, FieldsTheServerDoesNotKnowAreDroppedBeforeTheEngine) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  // As a newer client (or one padding its request) sends them: 1 MiB each,
  // which the request would otherwise carry through the queue.
  v1::EvaluateRequest request = EvaluateRequestWith("pass");
  request.GetReflection()->MutableUnknownFields(&request)->AddLengthDelimited(
      1000, std::string(1 << 20, 'x'));
  v1::Submission* submission = request.mutable_submission();
  submission->GetReflection()
      ->MutableUnknownFields(submission)
      ->AddLengthDelimited(1001, std::string(1 << 20, 'y'));
  const grpc::Status status =
      CallWithBytes(server.target(), "Evaluate", request.SerializeAsString());
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(server.engine().evaluate_calls.load(), 1);
  EXPECT_EQ(server.engine().last_request_unknown_fields.load(), 0);
}

TEST(Service, BytesFromAClientWithoutTheTokenAreUnauthenticatedFirst) {
  TestServer server([](server::ServerOptions& options) { options.service.token = "s3cret"; });
  ASSERT_TRUE(server.ok());
  EXPECT_EQ(CallWithBytes(server.target(), "Evaluate", "\xff").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallWithBytes(server.target(), "Evaluate", "\xff", "s3cret").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// ------------------------------------------------------------- request ids

TEST(Service, RequestIdComesFromTheClientOrIsGenerated) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  CallInfo info;
  info.request_id = "rollout-3/step-9";
  auto verdict = client->Evaluate(EvaluateRequestWith("pass"), &info);
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(info.response_request_id, "rollout-3/step-9");
  EXPECT_EQ(verdict->request_id(), "rollout-3/step-9");
  EXPECT_EQ(server.engine().last_context().request_id, "rollout-3/step-9");
  EXPECT_EQ(server.engine().last_context().client_id, "ipv4:127.0.0.1");

  CallInfo generated;
  auto request = EvaluateRequestWith("pass");
  request.set_client_id("worker-17");
  verdict = client->Evaluate(request, &generated);
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(generated.response_request_id.size(), 16u);
  EXPECT_EQ(verdict->request_id(), generated.response_request_id);
  EXPECT_EQ(server.engine().last_context().client_id, "worker-17");

  // Errors carry the id too (initial metadata is sent with the status).
  CallInfo failed;
  auto error = client->Evaluate(EvaluateRequestWith(""), &failed);
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(failed.response_request_id.size(), 16u);

  CallInfo listed;
  ASSERT_TRUE(client->ListDevices(&listed).ok());
  EXPECT_EQ(listed.response_request_id.size(), 16u);
  CallInfo streamed;
  ASSERT_TRUE(client->EvaluateStream(EvaluateRequestWith("events 1"), nullptr, &streamed).ok());
  EXPECT_EQ(streamed.response_request_id.size(), 16u);
}

// ------------------------------------------------------------- concurrency

TEST(Service, SixtyFourConcurrentClientsWithMixedRequestsAllAnsweredCorrectly) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  constexpr int kClients = 64;
  constexpr int kRequestsPerClient = 12;
  std::atomic<int> correct_answers{0};
  std::vector<std::thread> threads;
  std::vector<std::string> failures(kClients);
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = server.Client();
      std::string& failure = failures[c];
      for (int i = 0; i < kRequestsPerClient; ++i) {
        const int n = c * kRequestsPerClient + i;
        const double reward = n / 1000.0;
        const std::string delay = " delay " + std::to_string(n % 7);
        bool ok = false;
        switch ((c + i) % 6) {
          case 0: {
            auto v =
                client->Evaluate(EvaluateRequestWith("pass " + std::to_string(reward) + delay));
            ok = v.ok() && v->correct() && std::abs(v->reward() - reward) < 1e-9;
            break;
          }
          case 1: {
            auto v = client->Evaluate(EvaluateRequestWith("fail timeout" + delay));
            ok = v.ok() && !v->correct() && v->stage() == "timeout";
            break;
          }
          case 2: {
            auto v = client->Evaluate(EvaluateRequestWith("error 8 busy " + std::to_string(n)));
            ok = v.status().code() == absl::StatusCode::kResourceExhausted &&
                 v.status().message() == "busy " + std::to_string(n);
            break;
          }
          case 3: {
            int events = 0;
            auto v =
                client->EvaluateStream(EvaluateRequestWith("events " + std::to_string(1 + n % 4) +
                                                           " pass " + std::to_string(reward)),
                                       [&](const v1::EvaluateEvent&) { ++events; });
            ok = v.ok() && std::abs(v->reward() - reward) < 1e-9 && events == 2 + n % 4;
            break;
          }
          case 4: {
            auto g = client->EvaluateGroup(GroupRequestWith(
                {"pass " + std::to_string(reward), "fail runtime", "pass 0.5" + delay}));
            ok = g.ok() && g->verdicts_size() == 3 &&
                 std::abs(g->verdicts(0).reward() - reward) < 1e-9 &&
                 g->verdicts(1).stage() == "runtime" && g->verdicts(2).reward() == 0.5;
            break;
          }
          case 5: {
            v1::CompileRequest compile;
            compile.set_source(n % 2 ? "fail compile" : "ok");
            auto r = client->Compile(compile);
            ok = r.ok() && r->success() == (n % 2 == 0);
            break;
          }
        }
        if (ok) {
          ++correct_answers;
        } else if (failure.empty()) {
          failure = "client " + std::to_string(c) + " request " + std::to_string(i);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (const auto& failure : failures) EXPECT_EQ(failure, "");
  EXPECT_EQ(correct_answers.load(), kClients * kRequestsPerClient);
  EXPECT_EQ(server.engine().in_flight.load(), 0);
}

// ------------------------------------------------- queue, deadlines, cancel

TEST(Service, FullQueueIsResourceExhaustedAtOnce) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  server.engine().set_queue_capacity(2);
  auto client = server.Client();
  std::vector<std::thread> hanging;
  std::vector<absl::StatusOr<v1::Verdict>> hung_results(2, absl::UnknownError("unset"));
  for (int i = 0; i < 2; ++i) {
    hanging.emplace_back(
        [&, i] { hung_results[i] = client->Evaluate(EvaluateRequestWith("hang pass 0.2")); });
  }
  ASSERT_TRUE(server.engine().WaitForInFlight(2, milliseconds(10'000)));

  const auto start = std::chrono::steady_clock::now();
  auto refused = client->Evaluate(EvaluateRequestWith("pass"));
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("queue full"), std::string_view::npos);
  // "At once": it did not wait for the hanging evaluations to end (they
  // never end until released below).
  EXPECT_LT(waited, std::chrono::seconds(5));
  auto refused_group = client->EvaluateGroup(GroupRequestWith({"pass"}));
  EXPECT_EQ(refused_group.status().code(), absl::StatusCode::kResourceExhausted);

  server.engine().ReleaseHangs();
  for (auto& thread : hanging) thread.join();
  for (const auto& result : hung_results) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_DOUBLE_EQ(result->reward(), 0.2);
  }
}

// Holds every incoming call past its deadline before the handler runs.
class StallInterceptor final : public grpc::experimental::Interceptor {
 public:
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::POST_RECV_MESSAGE)) {
      std::this_thread::sleep_for(milliseconds(300));
    }
    methods->Proceed();
  }
};

class StallInterceptorFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new StallInterceptor;
  }
};

TEST(Service, ExpiredDeadlineNeverReachesTheEngine) {
  TestServer server([](server::ServerOptions& options) {
    options.configure_builder = [](grpc::ServerBuilder& builder) {
      std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> list;
      list.push_back(std::make_unique<StallInterceptorFactory>());
      builder.experimental().SetInterceptorCreators(std::move(list));
    };
  });
  ASSERT_TRUE(server.ok());
  client::ClientOptions options;
  options.timeout = absl::Milliseconds(100);
  auto client = server.Client(options);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(client->Evaluate(EvaluateRequestWith("pass")).status().code(),
              absl::StatusCode::kDeadlineExceeded);
    EXPECT_EQ(client->EvaluateStream(EvaluateRequestWith("pass"), nullptr).status().code(),
              absl::StatusCode::kDeadlineExceeded);
    EXPECT_EQ(client->EvaluateGroup(GroupRequestWith({"pass"})).status().code(),
              absl::StatusCode::kDeadlineExceeded);
    v1::CompileRequest compile;
    compile.set_source("ok");
    EXPECT_EQ(client->Compile(compile).status().code(), absl::StatusCode::kDeadlineExceeded);
  }
  // Give the stalled handlers time to run (and refuse).
  std::this_thread::sleep_for(milliseconds(800));
  EXPECT_EQ(server.engine().evaluate_calls.load(), 0);
  EXPECT_EQ(server.engine().group_calls.load(), 0);
  EXPECT_EQ(server.engine().compile_calls.load(), 0);
}

TEST(Service, DeadlineIsPassedToTheEngine) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  client::ClientOptions options;
  options.timeout = absl::Seconds(30);
  auto client = server.Client(options);
  const absl::Time before = absl::Now();
  ASSERT_TRUE(client->Evaluate(EvaluateRequestWith("pass")).ok());
  const absl::Time deadline = server.engine().last_context().deadline;
  EXPECT_GT(deadline, before + absl::Seconds(25));
  EXPECT_LT(deadline, before + absl::Seconds(35));
  auto no_deadline = server.Client();
  ASSERT_TRUE(no_deadline->Evaluate(EvaluateRequestWith("pass")).ok());
  EXPECT_EQ(server.engine().last_context().deadline, absl::InfiniteFuture());
}

TEST(Service, CancelledStreamCancelsTheEnginesWork) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto channel = grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials());
  auto stub = v1::KernelEval::NewStub(channel);
  grpc::ClientContext context;
  auto reader = stub->EvaluateStream(&context, EvaluateRequestWith("events 1 hang"));
  v1::EvaluateEvent event;
  ASSERT_TRUE(reader->Read(&event));  // the engine is working
  EXPECT_TRUE(event.has_timing());
  context.TryCancel();
  EXPECT_TRUE(server.engine().WaitForCancels(1, milliseconds(10'000)));
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST(Service, CancelledUnaryCallsCancelTheEnginesWork) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto channel = grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials());
  auto stub = v1::KernelEval::NewStub(channel);
  grpc::ClientContext evaluate_context;
  grpc::ClientContext group_context;
  std::thread evaluate([&] {
    v1::EvaluateResponse response;
    EXPECT_EQ(
        stub->Evaluate(&evaluate_context, EvaluateRequestWith("hang"), &response).error_code(),
        grpc::StatusCode::CANCELLED);
  });
  std::thread group([&] {
    v1::EvaluateGroupResponse response;
    EXPECT_EQ(
        stub->EvaluateGroup(&group_context, GroupRequestWith({"hang"}), &response).error_code(),
        grpc::StatusCode::CANCELLED);
  });
  ASSERT_TRUE(server.engine().WaitForInFlight(2, milliseconds(10'000)));
  evaluate_context.TryCancel();
  group_context.TryCancel();
  evaluate.join();
  group.join();
  EXPECT_TRUE(server.engine().WaitForCancels(2, milliseconds(10'000)));
}

// The x-request-id header leaves when a call is taken, not with its answer:
// until a client has the server's headers its gRPC may send the call again
// (a retry policy, transparent retries), and an evaluation ran twice.
TEST(Service, HeadersAreSentWhenTheCallIsTakenNotWithTheAnswer) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto channel = grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials());
  auto stub = v1::KernelEval::NewStub(channel);
  grpc::CompletionQueue queue;
  grpc::ClientContext evaluate_context;
  grpc::ClientContext group_context;
  grpc::ClientContext compile_context;
  v1::CompileRequest compile_request;
  compile_request.set_source("delay 3000");
  auto evaluate = stub->AsyncEvaluate(&evaluate_context, EvaluateRequestWith("hang"), &queue);
  auto group = stub->AsyncEvaluateGroup(&group_context, GroupRequestWith({"hang"}), &queue);
  auto compile = stub->AsyncCompile(&compile_context, compile_request, &queue);
  evaluate->ReadInitialMetadata(reinterpret_cast<void*>(1));
  group->ReadInitialMetadata(reinterpret_cast<void*>(2));
  compile->ReadInitialMetadata(reinterpret_cast<void*>(3));
  std::set<intptr_t> headers;
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(10);
  while (headers.size() < 3) {
    void* tag = nullptr;
    bool ok = false;
    if (queue.AsyncNext(&tag, &ok, deadline) != grpc::CompletionQueue::GOT_EVENT) break;
    EXPECT_TRUE(ok);
    headers.insert(reinterpret_cast<intptr_t>(tag));
  }
  EXPECT_EQ(headers, (std::set<intptr_t>{1, 2, 3}));
  // The hanging calls are still in the engine: the headers did not wait for them.
  EXPECT_EQ(server.engine().in_flight.load(), 2);
  EXPECT_EQ(evaluate_context.GetServerInitialMetadata().count("x-request-id"), 1u);
  EXPECT_EQ(group_context.GetServerInitialMetadata().count("x-request-id"), 1u);
  evaluate_context.TryCancel();
  group_context.TryCancel();
  v1::EvaluateResponse evaluate_response;
  v1::EvaluateGroupResponse group_response;
  v1::CompileResponse compile_response;
  grpc::Status evaluate_status, group_status, compile_status;
  evaluate->Finish(&evaluate_response, &evaluate_status, reinterpret_cast<void*>(4));
  group->Finish(&group_response, &group_status, reinterpret_cast<void*>(5));
  compile->Finish(&compile_response, &compile_status, reinterpret_cast<void*>(6));
  for (int finished = 0; finished < 3;) {
    void* tag = nullptr;
    bool ok = false;
    ASSERT_EQ(
        queue.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(20)),
        grpc::CompletionQueue::GOT_EVENT);
    ++finished;
  }
  EXPECT_EQ(evaluate_status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(group_status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(compile_status.ok()) << compile_status.error_message();
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
}

std::string HttpGet(int port, const std::string& path);  // (below, with the metrics tests)

// Also counted as what it was: a deadline, not the client's cancellation
// (both were CANCELLED, "the client cancelled the call or its deadline
// passed"), so that an operator tells slow answers from clients going away.
TEST(Service, ClientDeadlineDuringWorkCancelsTheEngine) {
  TestServer server(
      [](server::ServerOptions& options) { options.metrics_address = "127.0.0.1:0"; });
  ASSERT_TRUE(server.ok());
  client::ClientOptions options;
  // The deadline must come while the engine works ("hang" waits for its
  // cancel), not while the channel connects: a 200 ms deadline on a machine
  // busy with the CPU backend's tests failed once (session 20). Connected
  // first, and a second of margin.
  options.timeout = absl::Seconds(1);
  auto client = server.Client(options);
  ASSERT_TRUE(client->ListDevices().ok());
  EXPECT_EQ(client->Evaluate(EvaluateRequestWith("hang")).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(server.engine().WaitForCancels(1, milliseconds(10'000)));
  grpc::ClientContext cancelled_context;
  std::thread cancelled([&] {
    auto stub = v1::KernelEval::NewStub(
        grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials()));
    v1::EvaluateResponse response;
    stub->Evaluate(&cancelled_context, EvaluateRequestWith("hang"), &response);
  });
  // The second call in the engine before it is cancelled. Not by
  // WaitForInFlight(1): the first call counts there until it has finished,
  // after its cancel was seen, so the second was cancelled before it reached
  // the server once (full ctest on a loaded machine, 2026-12-05).
  for (int i = 0; i < 5000 && server.engine().evaluate_calls.load() < 2; ++i) {
    std::this_thread::sleep_for(milliseconds(2));
  }
  ASSERT_EQ(server.engine().evaluate_calls.load(), 2);
  cancelled_context.TryCancel();
  cancelled.join();
  EXPECT_TRUE(server.engine().WaitForCancels(2, milliseconds(10'000)));
  std::string text;
  for (int i = 0; i < 100; ++i) {  // the server records a call just after it ends
    text = HttpGet(server.server().metrics_port(), "/metrics");
    if (text.find("code=\"CANCELLED\",rpc=\"Evaluate\"} 1") != std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_NE(text.find("kerneleval_requests_total{code=\"DEADLINE_EXCEEDED\",rpc=\"Evaluate\"} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kerneleval_requests_total{code=\"CANCELLED\",rpc=\"Evaluate\"} 1"),
            std::string::npos)
      << text;
}

// ------------------------------------------------------------ health, auth

bool WaitForHealth(client::KernelEvalClient& client, const std::string& service,
                   HealthStatus wanted) {
  for (int i = 0; i < 500; ++i) {
    auto status = client.CheckHealth(service);
    if (status.ok() && *status == wanted) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return false;
}

TEST(Health, FollowsEngineReadiness) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  server.engine().set_ready(false);
  EXPECT_TRUE(WaitForHealth(*client, server::kHealthServiceName, HealthStatus::kNotServing));
  auto overall = client->CheckHealth("");
  ASSERT_TRUE(overall.ok());
  EXPECT_EQ(*overall, HealthStatus::kServing);  // liveness: the process serves
  server.engine().set_ready(true);
  EXPECT_TRUE(WaitForHealth(*client, server::kHealthServiceName, HealthStatus::kServing));
  server.engine().set_ready(false);
  EXPECT_TRUE(WaitForHealth(*client, server::kHealthServiceName, HealthStatus::kNotServing));
}

TEST(Auth, TokenRequiredOnEveryRpcButHealth) {
  TestServer server([](server::ServerOptions& options) { options.service.token = "s3cret"; });
  ASSERT_TRUE(server.ok());
  client::ClientOptions wrong;
  wrong.token = "guess";
  for (auto* options : {static_cast<client::ClientOptions*>(nullptr), &wrong}) {
    auto client = server.Client(options ? *options : client::ClientOptions{});
    EXPECT_EQ(client->Evaluate(EvaluateRequestWith("pass")).status().code(),
              absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(client->EvaluateStream(EvaluateRequestWith("pass"), nullptr).status().code(),
              absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(client->EvaluateGroup(GroupRequestWith({"pass"})).status().code(),
              absl::StatusCode::kUnauthenticated);
    v1::CompileRequest compile;
    compile.set_source("ok");
    EXPECT_EQ(client->Compile(compile).status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(client->ListProblems({}).status().code(), absl::StatusCode::kUnauthenticated);
    v1::GetProblemRequest get;
    get.set_problem_id("softmax");
    EXPECT_EQ(client->GetProblem(get).status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_EQ(client->ListDevices().status().code(), absl::StatusCode::kUnauthenticated);
    // Health needs no token.
    auto health = client->CheckHealth(server::kHealthServiceName);
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_TRUE(WaitForHealth(*client, server::kHealthServiceName, HealthStatus::kServing));
  }
  EXPECT_EQ(server.engine().evaluate_calls.load(), 0);
  EXPECT_EQ(server.engine().compile_calls.load(), 0);

  client::ClientOptions right;
  right.token = "s3cret";
  auto client = server.Client(right);
  EXPECT_TRUE(client->Evaluate(EvaluateRequestWith("pass")).ok());
  EXPECT_TRUE(client->ListDevices().ok());
}

TEST(Auth, ANamedClientsTokenIsItsFairnessKeyWhateverItsRequestSays) {
  TestServer server([](server::ServerOptions& options) {
    options.service.token = "shared-token-0123456789";
    options.service.client_tokens = {{"team-a", "team-a-token-0123456789"},
                                     {"team-b", "team-b-token-0123456789"}};
  });
  ASSERT_TRUE(server.ok());
  auto request = EvaluateRequestWith("pass");
  request.set_client_id("team-b");  // a claim of another's turn

  client::ClientOptions a;
  a.token = "team-a-token-0123456789";
  ASSERT_TRUE(server.Client(a)->Evaluate(request).ok());
  EXPECT_EQ(server.engine().last_context().client_id, "token:team-a");
  request.set_client_id("made-up-3");  // or of a turn of its own
  ASSERT_TRUE(server.Client(a)->Evaluate(request).ok());
  EXPECT_EQ(server.engine().last_context().client_id, "token:team-a");
  v1::CompileRequest compile;
  compile.set_source("ok");
  ASSERT_TRUE(server.Client(a)->Compile(compile).ok());
  EXPECT_EQ(server.engine().last_context().client_id, "token:team-a");

  client::ClientOptions b;
  b.token = "team-b-token-0123456789";
  ASSERT_TRUE(server.Client(b)->EvaluateGroup(GroupRequestWith({"pass"})).ok());
  EXPECT_EQ(server.engine().last_context().client_id, "token:team-b");

  // The shared token's callers still name themselves.
  client::ClientOptions shared;
  shared.token = "shared-token-0123456789";
  ASSERT_TRUE(server.Client(shared)->Evaluate(request).ok());
  EXPECT_EQ(server.engine().last_context().client_id, "made-up-3");
  // Compiles too (they keyed on the peer address, which clients behind one
  // host share).
  compile.set_client_id("compiler-7");
  ASSERT_TRUE(server.Client(shared)->Compile(compile).ok());
  EXPECT_EQ(server.engine().last_context().client_id, "compiler-7");

  // Nor may it claim a named client's key.
  request.set_client_id("token:team-a");
  auto claimed = server.Client(shared)->Evaluate(request);
  EXPECT_EQ(claimed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(claimed.status().message().find("client_id: \"token:\" begins the keys of named"),
            std::string::npos)
      << claimed.status();
  auto group = GroupRequestWith({"pass"});
  group.set_client_id("token:team-b");
  EXPECT_EQ(server.Client(shared)->EvaluateGroup(group).status().code(),
            absl::StatusCode::kInvalidArgument);
  compile.set_client_id("token:team-a");
  EXPECT_EQ(server.Client(shared)->Compile(compile).status().code(),
            absl::StatusCode::kInvalidArgument);

  client::ClientOptions wrong;
  wrong.token = "team-a-token-012345678";  // one character short
  EXPECT_EQ(server.Client(wrong)->Evaluate(request).status().code(),
            absl::StatusCode::kUnauthenticated);
}

// ------------------------------------------------------------------- TLS

TEST(Tls, SelfSignedCertificateEndToEnd) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no openssl binary to make a test certificate";
  }
  const test_support::ScopedTempDir dir("kerneleval-tls");
  ASSERT_TRUE(dir.ok());
  const std::string cert = dir.path() + "/cert.pem";
  const std::string key = dir.path() + "/key.pem";
  const std::string command =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
      key + " -out " + cert + " >/dev/null 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0);

  TestServer server([&](server::ServerOptions& options) {
    options.tls_cert_path = cert;
    options.tls_key_path = key;
    options.service.token = "tls-token";
  });
  ASSERT_TRUE(server.ok());
  client::ClientOptions options;
  options.target = "localhost:" + std::to_string(server.server().port());
  options.tls_ca = cert;
  options.token = "tls-token";
  auto client = server.Client(options);
  auto verdict = client->Evaluate(EvaluateRequestWith("pass 0.9"));
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_DOUBLE_EQ(verdict->reward(), 0.9);

  // A plaintext client cannot talk to a TLS server.
  client::ClientOptions plaintext;
  plaintext.target = options.target;
  plaintext.token = "tls-token";
  plaintext.timeout = absl::Seconds(5);
  auto plain_client = server.Client(plaintext);
  EXPECT_EQ(plain_client->Evaluate(EvaluateRequestWith("pass")).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(Tls, MissingKeyFileFailsToStart) {
  FakeEngine engine;
  server::ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.tls_cert_path = "/nonexistent/cert.pem";
  options.tls_key_path = "/nonexistent/key.pem";
  auto started = server::KernelEvalServer::Start(&engine, options, nullptr);
  EXPECT_EQ(started.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine.shutdown_calls.load(), 0);  // a failed start leaves the engine alone
}

TEST(Server, ListenFailureIsReported) {
  FakeEngine engine;
  server::ServerOptions options;
  options.listen_address = "256.1.1.1:1";
  auto started = server::KernelEvalServer::Start(&engine, options, nullptr);
  EXPECT_EQ(started.status().code(), absl::StatusCode::kUnavailable);
}

// ------------------------------------------------------------- reflection

TEST(Server, ReflectionListsTheServices) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  const std::string services = ListServicesByReflection(server.target());
  EXPECT_NE(services.find("kerneleval.v1.KernelEval"), std::string::npos) << services;
  EXPECT_NE(services.find("grpc.health.v1.Health"), std::string::npos) << services;
}

// ---------------------------------------------------------------- metrics

std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.0\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      ssize_t got;
      while ((got = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, got);
    }
  }
  close(fd);
  return response;
}

TEST(Metrics, EndpointServesRequestAndEngineCounters) {
  TestServer server(
      [](server::ServerOptions& options) { options.metrics_address = "127.0.0.1:0"; });
  ASSERT_TRUE(server.ok());
  ASSERT_GT(server.server().metrics_port(), 0);
  auto client = server.Client();
  ASSERT_TRUE(client->Evaluate(EvaluateRequestWith("pass")).ok());
  ASSERT_TRUE(client->Evaluate(EvaluateRequestWith("fail correctness")).ok());
  EXPECT_FALSE(client->Evaluate(EvaluateRequestWith("")).ok());
  v1::CompileRequest compile;
  compile.set_source("ok");
  ASSERT_TRUE(client->Compile(compile).ok());
  ASSERT_TRUE(WaitForHealth(*client, server::kHealthServiceName, HealthStatus::kServing));

  const std::string text = HttpGet(server.server().metrics_port(), "/metrics");
  ASSERT_NE(text.find("200 OK"), std::string::npos) << text;
  EXPECT_NE(text.find("kerneleval_requests_total{code=\"OK\",rpc=\"Evaluate\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kerneleval_requests_total{code=\"INVALID_ARGUMENT\",rpc=\"Evaluate\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("kerneleval_requests_total{code=\"OK\",rpc=\"Compile\"} 1"),
            std::string::npos);
  EXPECT_NE(text.find("kerneleval_verdicts_total{stage=\"passed\"} 1"), std::string::npos);
  EXPECT_NE(text.find("kerneleval_verdicts_total{stage=\"correctness\"} 1"), std::string::npos);
  EXPECT_NE(text.find("kerneleval_stage_duration_seconds_count{stage=\"total\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("kerneleval_compile_cache_hits_total 1"), std::string::npos);
  EXPECT_NE(text.find("kerneleval_queue_depth{device=\"cpu\"}"), std::string::npos);
  EXPECT_NE(text.find("kerneleval_request_duration_seconds_bucket"), std::string::npos);
  EXPECT_NE(text.find("kerneleval_ready 1"), std::string::npos);
  // Callers without a named token share one label (the fake engine reports
  // 0.25 s per evaluation).
  EXPECT_NE(text.find("kerneleval_client_device_seconds_total{client=\"unnamed\"} 0.5"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kerneleval_requests_in_flight 0"), std::string::npos);
  // Not only in-flight twins: the engine also answers from its recent verdicts.
  EXPECT_NE(text.find("# HELP kerneleval_deduplicated_total Evaluate calls answered without a "
                      "run: the verdict of an identical submission in flight or recently judged"),
            std::string::npos);
}

// --------------------------------------------------------------- shutdown

TEST(Server, ShutdownCancelsInFlightWorkByTheDeadlineAndStopsTheEngine) {
  TestServer server;
  ASSERT_TRUE(server.ok());
  auto client = server.Client();
  absl::StatusOr<v1::Verdict> hung = absl::UnknownError("unset");
  std::thread call([&] { hung = client->Evaluate(EvaluateRequestWith("hang")); });
  ASSERT_TRUE(server.engine().WaitForInFlight(1, milliseconds(10'000)));
  server.server().Shutdown(absl::Now() + absl::Milliseconds(200));
  call.join();
  EXPECT_FALSE(hung.ok());
  EXPECT_EQ(server.engine().shutdown_calls.load(), 1);
  // After shutdown nothing is served.
  client::ClientOptions options;
  options.target = server.target();
  options.timeout = absl::Seconds(2);
  auto late = server.Client(options);
  EXPECT_EQ(late->Evaluate(EvaluateRequestWith("pass")).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kerneleval::testing
