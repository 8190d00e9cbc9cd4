// The server's pure parts: status mapping, validation, auth, request ids,
// flags; and the client library's pure parts (exit codes, JSON, flags).
#include <grpcpp/support/status.h>
#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/client/client.h"
#include "cli/client/json.h"
#include "cli/client/server_flags.h"
#include "cli/command.h"
#include "server/auth.h"
#include "server/config.h"
#include "server/log_throttle.h"
#include "server/metrics.h"
#include "server/request_id.h"
#include "server/service.h"
#include "server/status.h"
#include "server/validation.h"
#include "tests/support/scoped_env.h"

namespace kerneleval {
namespace {

using server::LogThrottle;
using server::RequestLimits;

// ------------------------------------------------------------ status mapping

TEST(ToGrpcStatus, MapsEveryCanonicalCodeOneToOneAndKeepsTheMessage) {
  EXPECT_TRUE(server::ToGrpcStatus(absl::OkStatus()).ok());
  for (int code = 1; code <= 16; ++code) {
    const absl::Status status(static_cast<absl::StatusCode>(code),
                              "message " + std::to_string(code));
    const grpc::Status mapped = server::ToGrpcStatus(status);
    EXPECT_EQ(static_cast<int>(mapped.error_code()), code);
    EXPECT_EQ(mapped.error_message(), "message " + std::to_string(code));
    // And back, as the client does.
    EXPECT_EQ(client::FromGrpcStatus(mapped), status);
  }
}

TEST(ToGrpcStatus, NonCanonicalCodeBecomesUnknown) {
  const grpc::Status mapped =
      server::ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(42), "odd"));
  EXPECT_EQ(mapped.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(mapped.error_message(), "odd");
}

TEST(ToGrpcStatus, ALongMessageIsCutAtACharacterBoundaryAndSaysSo) {
  // "é" is two bytes: the cut may not split one.
  const std::string echoed = "unknown device \"" + std::string(20000, 'x') + "\"";
  const std::string accented = "a" + [] {
    std::string s;
    for (int i = 0; i < 3000; ++i) s += "\xc3\xa9";
    return s;
  }();
  for (const std::string& message : {echoed, accented}) {
    const grpc::Status mapped = server::ToGrpcStatus(absl::NotFoundError(message));
    EXPECT_EQ(mapped.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_LE(mapped.error_message().size(), server::kMaxStatusMessageBytes + 40);
    const size_t kept = mapped.error_message().find("... (");
    ASSERT_NE(kept, std::string::npos) << mapped.error_message().substr(0, 80);
    EXPECT_EQ(mapped.error_message().substr(0, kept), message.substr(0, kept));
    EXPECT_NE(mapped.error_message().find(absl::StrCat(message.size() - kept, " more bytes)")),
              std::string::npos);
    // Whole characters only: the kept part ends on a character boundary.
    EXPECT_NE(static_cast<unsigned char>(message[kept]) & 0xC0, 0x80);
  }
  const std::string short_message(server::kMaxStatusMessageBytes, 'y');
  EXPECT_EQ(server::ToGrpcStatus(absl::InternalError(short_message)).error_message(),
            short_message);
}

TEST(ExitCodeForStatus, UnreachableAndRefusedAreThreeBadInputIsTwo) {
  EXPECT_EQ(client::ExitCodeForStatus(absl::OkStatus()), cli::kExitOk);
  EXPECT_EQ(client::ExitCodeForStatus(absl::UnavailableError("")), cli::kExitUnavailable);
  EXPECT_EQ(client::ExitCodeForStatus(absl::UnauthenticatedError("")), cli::kExitUnavailable);
  EXPECT_EQ(client::ExitCodeForStatus(absl::ResourceExhaustedError("")), cli::kExitUnavailable);
  EXPECT_EQ(client::ExitCodeForStatus(absl::DeadlineExceededError("")), cli::kExitUnavailable);
  EXPECT_EQ(client::ExitCodeForStatus(absl::FailedPreconditionError("")), cli::kExitUnavailable);
  EXPECT_EQ(client::ExitCodeForStatus(absl::InternalError("")), cli::kExitUnavailable);
  EXPECT_EQ(client::ExitCodeForStatus(absl::InvalidArgumentError("")), cli::kExitUsage);
  EXPECT_EQ(client::ExitCodeForStatus(absl::NotFoundError("")), cli::kExitUsage);
}

// ---------------------------------------------------------------- validation

v1::EvaluateRequest ValidRequest() {
  v1::EvaluateRequest request;
  request.set_problem_id("softmax");
  request.mutable_submission()->set_source("__global__ void k() {}");
  return request;
}

TEST(ValidateEvaluateRequest, AcceptsAWellFormedRequest) {
  EXPECT_TRUE(server::ValidateEvaluateRequest(ValidRequest(), RequestLimits{}).ok());
  auto custom = ValidRequest();
  custom.mutable_problem()->set_id("custom");
  EXPECT_TRUE(server::ValidateEvaluateRequest(custom, RequestLimits{}).ok());
}

TEST(ValidateEvaluateRequest, NamesTheFieldAndTheLimit) {
  auto request = ValidRequest();
  request.mutable_submission()->set_source(std::string(2'000'000, 'x'));
  const absl::Status status = server::ValidateEvaluateRequest(request, RequestLimits{});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "submission.source: 2000000 bytes exceeds the 1048576-byte limit");

  request.mutable_submission()->clear_source();
  EXPECT_EQ(server::ValidateEvaluateRequest(request, RequestLimits{}).message(),
            "submission.source: empty");

  request = ValidRequest();
  request.clear_problem_ref();
  EXPECT_EQ(server::ValidateEvaluateRequest(request, RequestLimits{}).message(),
            "problem_ref: set problem_id or problem");
  request.set_problem_id("");
  EXPECT_EQ(server::ValidateEvaluateRequest(request, RequestLimits{}).message(),
            "problem_id: empty");

  request = ValidRequest();
  request.set_backend(static_cast<v1::Backend>(9));
  EXPECT_EQ(server::ValidateEvaluateRequest(request, RequestLimits{}).message(),
            "backend: unknown value 9");

  request = ValidRequest();
  request.mutable_limits()->set_timeout_seconds(-1);
  EXPECT_EQ(server::ValidateEvaluateRequest(request, RequestLimits{}).message(),
            "limits.timeout_seconds: -1 is not >= 0");
}

TEST(ValidateEvaluateRequest, SourceExactlyAtTheLimitPasses) {
  auto request = ValidRequest();
  request.mutable_submission()->set_source(std::string(100, 'x'));
  EXPECT_TRUE(server::ValidateEvaluateRequest(request, RequestLimits{100, 1}).ok());
  request.mutable_submission()->set_source(std::string(101, 'x'));
  EXPECT_FALSE(server::ValidateEvaluateRequest(request, RequestLimits{100, 1}).ok());
}

TEST(ValidateEvaluateGroupRequest, GroupSizeAndEverySubmissionAreChecked) {
  v1::EvaluateGroupRequest request;
  request.set_problem_id("softmax");
  EXPECT_EQ(server::ValidateEvaluateGroupRequest(request, RequestLimits{}).message(),
            "submissions: empty");
  for (int i = 0; i < 3; ++i) request.add_submissions()->set_source("x");
  EXPECT_TRUE(server::ValidateEvaluateGroupRequest(request, RequestLimits{10, 3}).ok());
  EXPECT_EQ(server::ValidateEvaluateGroupRequest(request, RequestLimits{10, 2}).message(),
            "submissions: 3 submissions exceed the group limit of 2");
  request.mutable_submissions(2)->set_source(std::string(11, 'y'));
  EXPECT_EQ(server::ValidateEvaluateGroupRequest(request, RequestLimits{10, 3}).message(),
            "submissions[2].source: 11 bytes exceeds the 10-byte limit");
  request.mutable_submissions(1)->clear_source();
  EXPECT_EQ(server::ValidateEvaluateGroupRequest(request, RequestLimits{10, 3}).message(),
            "submissions[1].source: empty");
}

TEST(ValidateCompileAndGetProblem, NameTheField) {
  v1::CompileRequest compile;
  EXPECT_EQ(server::ValidateCompileRequest(compile, RequestLimits{}).message(), "source: empty");
  compile.set_source("x");
  EXPECT_TRUE(server::ValidateCompileRequest(compile, RequestLimits{}).ok());
  v1::GetProblemRequest get;
  EXPECT_EQ(server::ValidateGetProblemRequest(get).message(), "problem_id: empty");
}

TEST(CheckDeadline, PastOrNowIsDeadlineExceeded) {
  const absl::Time now = absl::Now();
  EXPECT_EQ(server::CheckDeadline(now - absl::Seconds(1), now).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(server::CheckDeadline(now, now).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(server::CheckDeadline(now + absl::Milliseconds(1), now).ok());
  EXPECT_TRUE(server::CheckDeadline(absl::InfiniteFuture(), now).ok());
}

TEST(MaxRequestMessageBytes, FitsAFullGroupAndSaturates) {
  EXPECT_GE(server::MaxRequestMessageBytes(RequestLimits{1 << 20, 128}), 128 << 20);
  EXPECT_EQ(server::MaxRequestMessageBytes(RequestLimits{size_t{1} << 40, 128}), INT_MAX);
}

// Deterministic stand-in for the libFuzzer target: arbitrary bytes parsed as
// requests never crash validation (run under ASan/UBSan in CI's sanitizer job).
TEST(ValidationFuzz, RandomBytesAndMutatedRequestsNeverCrash) {
  std::mt19937 random(12345);
  const std::string valid = ValidRequest().SerializeAsString();
  int parsed = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    std::string bytes;
    if (iteration % 2 == 0) {
      bytes.resize(random() % 256);
      for (auto& byte : bytes) byte = static_cast<char>(random());
    } else {
      bytes = valid;
      for (int flips = 1 + random() % 4; flips > 0; --flips) {
        bytes[random() % bytes.size()] = static_cast<char>(random());
      }
    }
    const RequestLimits limits{1 + random() % 64, 1 + random() % 4};
    v1::EvaluateRequest evaluate;
    if (evaluate.ParseFromString(bytes)) {
      ++parsed;
      (void)server::ValidateEvaluateRequest(evaluate, limits);
    }
    v1::EvaluateGroupRequest group;
    if (group.ParseFromString(bytes)) (void)server::ValidateEvaluateGroupRequest(group, limits);
    v1::CompileRequest compile;
    if (compile.ParseFromString(bytes)) (void)server::ValidateCompileRequest(compile, limits);
  }
  EXPECT_GT(parsed, 100);  // the corpus exercised the validators, not just the parser
}

// ---------------------------------------------------------- auth, request id

TEST(ConstantTimeEquals, ComparesContentsAndLengths) {
  EXPECT_TRUE(server::ConstantTimeEquals("secret", "secret"));
  EXPECT_TRUE(server::ConstantTimeEquals("", ""));
  EXPECT_FALSE(server::ConstantTimeEquals("secret", "secreT"));
  EXPECT_FALSE(server::ConstantTimeEquals("secret", "secret2"));
  EXPECT_FALSE(server::ConstantTimeEquals("secret", ""));
  EXPECT_FALSE(server::ConstantTimeEquals(std::string("a\0b", 3), "a"));
  // Compared over at least 64 bytes: the same answers.
  EXPECT_TRUE(server::ConstantTimeEquals("secret", "secret", 64));
  EXPECT_FALSE(server::ConstantTimeEquals("secret", "secreT", 64));
  EXPECT_FALSE(server::ConstantTimeEquals("secret", std::string("secret\0", 7), 64));
}

TEST(TokenAuthenticator, RequiresTheBearerScheme) {
  const server::TokenAuthenticator off("");
  EXPECT_FALSE(off.enabled());
  EXPECT_TRUE(off.Allows(""));
  const server::TokenAuthenticator on("t0k3n");
  EXPECT_TRUE(on.Allows("Bearer t0k3n"));
  EXPECT_FALSE(on.Allows("t0k3n"));
  EXPECT_FALSE(on.Allows("Bearer t0k3"));
  EXPECT_FALSE(on.Allows("Basic t0k3n"));
  EXPECT_FALSE(on.Allows(""));
}

TEST(TokenAuthenticator, NamesTheClientWhoseTokenCame) {
  const server::TokenAuthenticator named(
      "", {{"team-a", "aaaaaaaaaaaaaaaa1"}, {"team-b", "bbbbbbbbbbbbbbbb2"}});
  EXPECT_TRUE(named.enabled());
  EXPECT_EQ(named.Identify("Bearer aaaaaaaaaaaaaaaa1"), std::optional<std::string>("team-a"));
  EXPECT_EQ(named.Identify("Bearer bbbbbbbbbbbbbbbb2"), std::optional<std::string>("team-b"));
  EXPECT_EQ(named.Identify("Bearer bbbbbbbbbbbbbbbb"), std::nullopt);
  EXPECT_EQ(named.Identify("Bearer "), std::nullopt);  // no shared token: empty is no token
  EXPECT_EQ(named.Identify(""), std::nullopt);
  const server::TokenAuthenticator both("shared-shared-01", {{"team-a", "aaaaaaaaaaaaaaaa1"}});
  EXPECT_EQ(both.Identify("Bearer shared-shared-01"), std::optional<std::string>(""));
  EXPECT_EQ(both.Identify("Bearer aaaaaaaaaaaaaaaa1"), std::optional<std::string>("team-a"));
  const server::TokenAuthenticator off("");
  EXPECT_EQ(off.Identify("Bearer anything"), std::optional<std::string>(""));
}

TEST(ClientTokens, ParsesNamesAndTokensAndNamesTheBadLineNeverTheToken) {
  auto parsed = server::ParseClientTokens(
      "\xEF\xBB\xBF# rollout clusters (a byte-order mark first)\n"
      "team-a   aaaaaaaaaaaaaaaa1\n"
      "\n"
      "\tteam.b_2 bbbbbbbbbbbbbbbb2\r\n"
      "  # indented comment\n"
      "team-c cccccccc#ccccccc3\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[2].token, "cccccccc#ccccccc3");  // '#' within a token is the token's
  EXPECT_EQ((*parsed)[0].client, "team-a");
  EXPECT_EQ((*parsed)[0].token, "aaaaaaaaaaaaaaaa1");
  EXPECT_EQ((*parsed)[1].client, "team.b_2");
  EXPECT_EQ((*parsed)[1].token, "bbbbbbbbbbbbbbbb2");

  const struct {
    const char* text;
    const char* message;
  } bad[] = {
      {"team-a\n", "line 1: expected \"CLIENT TOKEN\", found 1 fields"},
      {"# c\nteam-a aaaaaaaaaaaaaaaa1 extra\n", "line 2: expected"},
      {"team/a aaaaaaaaaaaaaaaa1\n", "line 1: the client name is not 1-64"},
      {"team-a short-secret\n", "line 1: the token of team-a is not 16-1024"},
      {"team-a aaaaaaaaaaaaaaaa1\nteam-a bbbbbbbbbbbbbbbb2\n", "line 2: client team-a again"},
      {"team-a aaaaaaaaaaaaaaaa1\nteam-b aaaaaaaaaaaaaaaa1\n",
       "line 2: the token of team-b is also team-a's"},
  };
  for (const auto& [text, message] : bad) {
    auto result = server::ParseClientTokens(text);
    ASSERT_FALSE(result.ok()) << text;
    EXPECT_TRUE(absl::IsInvalidArgument(result.status()));
    EXPECT_NE(result.status().message().find(message), std::string::npos) << result.status();
    EXPECT_EQ(result.status().message().find("aaaaaaaaaaaaaaaa1"), std::string::npos)
        << "the error shows a token: " << result.status();
  }
}

TEST(ServerMetrics, DeviceTimeIsLabelledByNamedClientOnly) {
  server::ServerMetrics metrics;
  metrics.OnDeviceSeconds("token:team-a", 1.5);
  metrics.OnDeviceSeconds("token:team-a", 0.5);
  metrics.OnDeviceSeconds("worker-17", 2);         // a self-named key
  metrics.OnDeviceSeconds("ipv4:10.0.0.5", 0.25);  // a peer's
  const std::string text = prometheus::TextSerializer().Serialize(metrics.registry()->Collect());
  EXPECT_NE(text.find("kerneleval_client_device_seconds_total{client=\"token:team-a\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kerneleval_client_device_seconds_total{client=\"unnamed\"} 2.25"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("worker-17"), std::string::npos) << text;
}

TEST(RequestId, NewIdsAreSixteenHexDigitsAndDistinct) {
  const std::string a = server::NewRequestId();
  const std::string b = server::NewRequestId();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(a, b);
}

TEST(RequestId, ClientValueKeptWhenSafe) {
  EXPECT_EQ(server::RequestIdFromClient("rollout-7/step:12.3_a"), "rollout-7/step:12.3_a");
  EXPECT_EQ(server::RequestIdFromClient("bad id").size(), 16u);  // space: replaced
  EXPECT_EQ(server::RequestIdFromClient("line\nbreak").size(), 16u);
  EXPECT_EQ(server::RequestIdFromClient(std::string(129, 'a')).size(), 16u);
  EXPECT_EQ(server::RequestIdFromClient("").size(), 16u);
}

TEST(ClientIdFromPeer, DropsThePort) {
  EXPECT_EQ(server::ClientIdFromPeer("ipv4:10.0.0.7:51234"), "ipv4:10.0.0.7");
  EXPECT_EQ(server::ClientIdFromPeer("ipv6:[::1]:5000"), "ipv6:[::1]");
  EXPECT_EQ(server::ClientIdFromPeer("ipv6:[::1]"), "ipv6:[::1]");
  EXPECT_EQ(server::ClientIdFromPeer("unix:/tmp/socket"), "unix:/tmp/socket");
  EXPECT_EQ(server::ClientIdFromPeer(""), "");
}

// ---------------------------------------------------------------- server flags

struct ParsedConfig {
  server::ServerConfig config;
  absl::Status status;
};

ParsedConfig Parse(std::vector<std::string> args) {
  ParsedConfig parsed;
  CLI::App app;
  server::AddServerFlags(app, &parsed.config);
  std::reverse(args.begin(), args.end());
  app.parse(args);
  parsed.status = server::FinalizeServerConfig(app, &parsed.config);
  return parsed;
}

using ::kerneleval::test_support::ScopedEnv;

TEST(ServerConfig, DefaultsAndMapping) {
  ScopedEnv reward("KERNEL_ENV_REWARD", nullptr);
  ScopedEnv partial("KERNEL_ENV_PARTIAL_CREDIT", nullptr);
  auto parsed = Parse({});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.config.server.listen_address, "0.0.0.0:50051");
  EXPECT_EQ(parsed.config.engine.default_backend, v1::BACKEND_AUTO);
  EXPECT_EQ(parsed.config.engine.reward_mode, "speedup");
  EXPECT_EQ(parsed.config.engine.partial_credit, std::optional<bool>(false));
  EXPECT_EQ(parsed.config.server.metrics_address, "");
  EXPECT_EQ(parsed.config.shutdown_grace_seconds, 30);

  parsed = Parse({"--backend", "cpu", "--metrics-port", "9100", "--max-source-bytes", "1000",
                  "--max-group-size", "8", "--queue-capacity", "4", "--listen", "127.0.0.1:0"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.config.engine.default_backend, v1::BACKEND_CPU);
  EXPECT_FALSE(parsed.config.engine.enable_cuda);
  EXPECT_EQ(parsed.config.server.metrics_address, "0.0.0.0:9100");
  EXPECT_EQ(parsed.config.server.service.limits.max_source_bytes, 1000u);
  EXPECT_EQ(parsed.config.server.service.limits.max_group_size, 8u);
  EXPECT_EQ(parsed.config.engine.queue_capacity, 4u);
  EXPECT_EQ(parsed.config.server.listen_address, "127.0.0.1:0");

  EXPECT_EQ(Parse({}).config.engine.compile_reserve_threads, 2);
  EXPECT_EQ(Parse({"--compile-reserve-threads", "0"}).config.engine.compile_reserve_threads, 0);
  EXPECT_THROW(Parse({"--compile-reserve-threads", "-1"}), CLI::ValidationError);
  EXPECT_TRUE(Parse({}).config.engine.allow_fixed_seeds);
  EXPECT_TRUE(Parse({}).config.engine.allow_custom_problems);
  // A server leaves emulated speedups out of the reward unless asked.
  EXPECT_FALSE(Parse({}).config.engine.reward_emulated_speed);
  EXPECT_TRUE(Parse({"--emulated-speed-reward"}).config.engine.reward_emulated_speed);
  parsed = Parse({"--no-fixed-seeds", "--no-custom-problems"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_FALSE(parsed.config.engine.allow_fixed_seeds);
  EXPECT_FALSE(parsed.config.engine.allow_custom_problems);

  EXPECT_EQ(Parse({}).config.engine.candidate_run_factor, 25);
  parsed = Parse({"--candidate-run-factor", "0", "--candidate-run-floor-seconds", "1.5"});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  EXPECT_EQ(parsed.config.engine.candidate_run_factor, 0);
  EXPECT_EQ(parsed.config.engine.candidate_run_floor_seconds, 1.5);
}

TEST(ServerConfig, TheTransportsMemoryBoundHoldsTwoOfTheLargestRequests) {
  EXPECT_EQ(Parse({}).config.server.transport_memory_bytes, uint64_t{4} << 30);
  EXPECT_TRUE(Parse({"--transport-memory-bytes", "0"}).status.ok());
  // 1 MiB x 128 + 16 MiB = 144 MiB per request: 288 MiB at least.
  auto parsed = Parse({"--transport-memory-bytes", "268435456"});
  EXPECT_TRUE(absl::IsInvalidArgument(parsed.status)) << parsed.status;
  EXPECT_NE(parsed.status.message().find("below twice the largest request (150994944 bytes"),
            std::string_view::npos)
      << parsed.status;
  parsed = Parse({"--transport-memory-bytes", "268435456", "--max-group-size", "64"});
  EXPECT_TRUE(parsed.status.ok()) << parsed.status;  // 80 MiB per request
  EXPECT_EQ(parsed.config.server.transport_memory_bytes, 268435456u);
}

TEST(ServerConfig, ATokensFileIsReadAtStartAndABadOneStopsIt) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/kerneleval-tokens-good";
  const std::string empty = dir + "/kerneleval-tokens-empty";
  const std::string bad = dir + "/kerneleval-tokens-bad";
  std::ofstream(good) << "# clients\nteam-a aaaaaaaaaaaaaaaa1\nteam-b bbbbbbbbbbbbbbbb2\n";
  std::ofstream(empty) << "# nobody yet\n";
  std::ofstream(bad) << "team-a aaaaaaaaaaaaaaaa1\nteam-b\n";

  auto parsed = Parse({"--tokens-file", good});
  ASSERT_TRUE(parsed.status.ok()) << parsed.status;
  ASSERT_EQ(parsed.config.server.service.client_tokens.size(), 2u);
  EXPECT_EQ(parsed.config.server.service.client_tokens[1].client, "team-b");

  parsed = Parse({"--tokens-file", bad});
  EXPECT_TRUE(absl::IsInvalidArgument(parsed.status)) << parsed.status;
  EXPECT_NE(parsed.status.message().find("kerneleval-tokens-bad: line 2"), std::string::npos)
      << parsed.status;
  // An empty file would leave the server open: refused, not taken as "no auth".
  parsed = Parse({"--tokens-file", empty});
  EXPECT_NE(parsed.status.message().find("names no client"), std::string::npos) << parsed.status;
  parsed = Parse({"--tokens-file", ""});
  EXPECT_NE(parsed.status.message().find("empty path"), std::string::npos) << parsed.status;
  {
    ScopedEnv unfilled("KERNELEVAL_TOKENS_FILE", "");
    parsed = Parse({});
    EXPECT_NE(parsed.status.message().find("empty path"), std::string::npos) << parsed.status;
  }
  parsed = Parse({"--tokens-file", dir + "/kerneleval-tokens-missing"});
  EXPECT_NE(parsed.status.message().find("cannot be read"), std::string::npos) << parsed.status;
  parsed = Parse({"--tokens-file", good, "--token", "bbbbbbbbbbbbbbbb2"});
  EXPECT_NE(parsed.status.message().find("the token of team-b is also --token"), std::string::npos)
      << parsed.status;
  std::filesystem::remove(good);
  std::filesystem::remove(empty);
  std::filesystem::remove(bad);
}

// Every finished call is logged, and clients choose how many calls they make
// (one without a token wrote 8.5k lines, 2 MB, a second): at most N lines a
// second, then a count of those left out.
TEST(LogThrottle, AdmitsNLinesASecondAndCountsTheRest) {
  LogThrottle throttle(3);
  const absl::Time t0 = absl::FromUnixSeconds(1'000'000);
  int logged = 0;
  for (int i = 0; i < 10; ++i) logged += throttle.Admit(t0 + absl::Milliseconds(i)).log;
  EXPECT_EQ(logged, 3);
  // The next second: admitted again, and the first line says 7 were left out.
  LogThrottle::Decision next = throttle.Admit(t0 + absl::Seconds(1));
  EXPECT_TRUE(next.log);
  EXPECT_EQ(next.left_out_before, 7u);
  EXPECT_EQ(throttle.Admit(t0 + absl::Seconds(1) + absl::Milliseconds(1)).left_out_before, 0u);
}

TEST(ServerConfig, RewardDefaultsComeFromTheSeedsEnvironment) {
  {
    ScopedEnv reward("KERNEL_ENV_REWARD", "roofline");
    ScopedEnv partial("KERNEL_ENV_PARTIAL_CREDIT", "1");
    auto parsed = Parse({});
    ASSERT_TRUE(parsed.status.ok());
    EXPECT_EQ(parsed.config.engine.reward_mode, "roofline");
    EXPECT_EQ(parsed.config.engine.partial_credit, std::optional<bool>(true));
    // Flags win over the environment.
    parsed = Parse({"--reward-mode", "speedup", "--no-partial-credit"});
    ASSERT_TRUE(parsed.status.ok());
    EXPECT_EQ(parsed.config.engine.reward_mode, "speedup");
    EXPECT_EQ(parsed.config.engine.partial_credit, std::optional<bool>(false));
  }
  {
    // The seed: only exactly "1" turns partial credit on.
    ScopedEnv partial("KERNEL_ENV_PARTIAL_CREDIT", "true");
    EXPECT_EQ(Parse({}).config.engine.partial_credit, std::optional<bool>(false));
  }
  {
    ScopedEnv reward("KERNEL_ENV_REWARD", "fastest");
    auto parsed = Parse({});
    EXPECT_EQ(parsed.status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(parsed.status.message().find("KERNEL_ENV_REWARD"), std::string_view::npos);
  }
  {
    // Set but empty is the seed's KeyError, not its default, and the mode is
    // matched exactly (no case folding, no trimming).
    for (const char* mode : {"", "Roofline", " speedup"}) {
      ScopedEnv reward("KERNEL_ENV_REWARD", mode);
      auto parsed = Parse({});
      EXPECT_EQ(parsed.status.code(), absl::StatusCode::kInvalidArgument) << "'" << mode << "'";
      // A flag still wins over the environment.
      EXPECT_TRUE(Parse({"--reward-mode", "roofline"}).status.ok()) << "'" << mode << "'";
    }
  }
}

TEST(ServerConfig, TlsNeedsBothFilesAndBadValuesAreRefused) {
  EXPECT_THROW(Parse({"--backend", "tpu"}), CLI::ValidationError);
  EXPECT_THROW(Parse({"--metrics-port", "70000"}), CLI::ValidationError);
  char path[] = "/tmp/kerneleval-edge-test-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  auto parsed = Parse({"--tls-cert", path});
  EXPECT_EQ(parsed.status.code(), absl::StatusCode::kInvalidArgument);
  unlink(path);
}

// ------------------------------------------------------- client: flags, JSON

TEST(AddServerOptions, ParsesAndMapsToClientOptions) {
  ScopedEnv server_env("KERNELEVAL_SERVER", nullptr);
  ScopedEnv token_env("KERNELEVAL_TOKEN", "from-env");
  CLI::App app;
  client::ServerFlags flags;
  client::AddServerOptions(&app, &flags);
  app.parse(std::vector<std::string>{"2.5", "--rpc-timeout", "dns:///h:50051", "--server"});
  EXPECT_TRUE(flags.remote());
  const client::ClientOptions options = client::ToClientOptions(flags);
  EXPECT_EQ(options.target, "dns:///h:50051");
  EXPECT_EQ(options.token, "from-env");
  EXPECT_EQ(options.timeout, absl::Milliseconds(2500));

  CLI::App local;
  client::ServerFlags local_flags;
  client::AddServerOptions(&local, &local_flags);
  local.parse(std::vector<std::string>{});
  EXPECT_FALSE(local_flags.remote());
  CLI::App bad;
  client::ServerFlags bad_flags;
  client::AddServerOptions(&bad, &bad_flags);
  EXPECT_THROW(bad.parse(std::vector<std::string>{"random", "--lb-policy"}), CLI::ValidationError);
}

TEST(ClientCreate, RefusesAnEmptyTargetAndAnUnknownPolicy) {
  EXPECT_EQ(client::KernelEvalClient::Create({}).status().code(),
            absl::StatusCode::kInvalidArgument);
  client::ClientOptions options;
  options.target = "localhost:1";
  options.lb_policy = "random";
  EXPECT_EQ(client::KernelEvalClient::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.lb_policy = "";
  options.tls_ca = "/nonexistent/ca.pem";
  EXPECT_EQ(client::KernelEvalClient::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.tls_ca = "";
  options.target = "dns:///localhost:1";  // round_robin by default
  EXPECT_TRUE(client::KernelEvalClient::Create(options).ok());
}

TEST(ToJson, PrintsDefaultsWithProtoNames) {
  v1::Verdict verdict;  // every field at its default
  const std::string json = client::ToJson(verdict, /*pretty=*/false);
  EXPECT_NE(json.find("\"correct\":false"), std::string::npos) << json;
  EXPECT_NE(json.find("\"reward\":0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"wall_seconds\":0"), std::string::npos) << json;
  EXPECT_EQ(json.find("wallSeconds"), std::string::npos) << json;
  EXPECT_EQ(json.find('\n'), std::string::npos);
  verdict.set_correct(true);
  const std::string pretty = client::ToJson(verdict, /*pretty=*/true);
  EXPECT_NE(pretty.find("\"correct\": true"), std::string::npos) << pretty;
  EXPECT_NE(pretty.find('\n'), std::string::npos);
  EXPECT_NE(pretty.back(), '\n');
}

TEST(ToJson, InvalidUtf8NeverThrows) {
  v1::Verdict verdict;
  verdict.set_error(std::string("bad \xff\xfe bytes"));
  const std::string json = client::ToJson(verdict, false);
  EXPECT_FALSE(json.empty());
  EXPECT_EQ(json.front(), '{');
}

}  // namespace
}  // namespace kerneleval
