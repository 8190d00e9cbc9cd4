#include "cli/engine_session.h"

#include <cstdio>

#include "absl/strings/str_format.h"
#include "cli/client/client.h"
#include "cli/command.h"
#include "evaluator/engine/engine.h"

namespace kerneleval::cli {
namespace {

// Progress on stderr, one line per event, for a person watching a terminal.
void PrintEvent(const v1::EvaluateEvent& event) {
  switch (event.event_case()) {
    case v1::EvaluateEvent::kQueued:
      absl::FPrintF(stderr, "[queued]    position %d on %s\n", event.queued().position(),
                    event.queued().device());
      break;
    case v1::EvaluateEvent::kCompiled: {
      const auto& compile = event.compiled().compile();
      absl::FPrintF(stderr, "[compiled]  %d kernel(s) in %.3f s%s\n", compile.kernels_size(),
                    compile.compile_seconds(), compile.cache_hit() ? " (cache hit)" : "");
      break;
    }
    case v1::EvaluateEvent::kCorrectness:
      absl::FPrintF(stderr, "[checked]   %d cases: %s\n",
                    event.correctness().correctness().trials_run(),
                    event.correctness().correctness().passed() ? "correct" : "wrong");
      break;
    case v1::EvaluateEvent::kTiming:
      absl::FPrintF(stderr, "[timing]    reference and candidate, interleaved...\n");
      break;
    default:
      break;
  }
}

class EmbeddedSession final : public EngineSession {
 public:
  explicit EmbeddedSession(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}

  absl::StatusOr<v1::Verdict> Evaluate(const v1::EvaluateRequest& request, bool live) override {
    CallContext context;
    context.request_id = "cli";
    if (live) context.on_event = PrintEvent;
    return engine_->Evaluate(request, std::move(context));
  }
  absl::StatusOr<v1::EvaluateGroupResponse> EvaluateGroup(
      const v1::EvaluateGroupRequest& request) override {
    CallContext context;
    context.request_id = "cli";
    return engine_->EvaluateGroup(request, std::move(context));
  }
  absl::StatusOr<v1::CompileResult> Compile(const v1::CompileRequest& request) override {
    return engine_->Compile(request, CallContext{});
  }
  absl::StatusOr<v1::ListProblemsResponse> ListProblems(
      const v1::ListProblemsRequest& request) override {
    return engine_->ListProblems(request);
  }
  absl::StatusOr<v1::GetProblemResponse> GetProblem(const v1::GetProblemRequest& request) override {
    return engine_->GetProblem(request);
  }
  absl::StatusOr<v1::ListDevicesResponse> ListDevices() override { return engine_->ListDevices(); }

 private:
  std::unique_ptr<Engine> engine_;
};

class RemoteSession final : public EngineSession {
 public:
  explicit RemoteSession(std::unique_ptr<client::KernelEvalClient> client)
      : client_(std::move(client)) {}

  absl::StatusOr<v1::Verdict> Evaluate(const v1::EvaluateRequest& request, bool live) override {
    if (live) return client_->EvaluateStream(request, PrintEvent);
    return client_->Evaluate(request);
  }
  absl::StatusOr<v1::EvaluateGroupResponse> EvaluateGroup(
      const v1::EvaluateGroupRequest& request) override {
    return client_->EvaluateGroup(request);
  }
  absl::StatusOr<v1::CompileResult> Compile(const v1::CompileRequest& request) override {
    return client_->Compile(request);
  }
  absl::StatusOr<v1::ListProblemsResponse> ListProblems(
      const v1::ListProblemsRequest& request) override {
    return client_->ListProblems(request);
  }
  absl::StatusOr<v1::GetProblemResponse> GetProblem(const v1::GetProblemRequest& request) override {
    return client_->GetProblem(request);
  }
  absl::StatusOr<v1::ListDevicesResponse> ListDevices() override { return client_->ListDevices(); }

 private:
  std::unique_ptr<client::KernelEvalClient> client_;
};

}  // namespace

void AddEngineSessionFlags(CLI::App* app, EngineSessionFlags* flags) {
  client::AddServerOptions(app, &flags->server);
  app->add_option("--problems-dir", flags->problems_dir,
                  "Problem definitions (embedded engine; default: the installed problems/)")
      ->envname("KERNELEVAL_PROBLEMS_DIR");
  app->add_flag("--cpu-interleaved-runs,!--cpu-plain-runs", flags->cpu_interleaved_runs,
                "CPU backend (embedded engine): check correctness on the build whose threads "
                "interleave at read-modify-writes, so racy ones lose updates as on a GPU "
                "(default); --cpu-plain-runs: the faster plain build, where they pass");
}

absl::StatusOr<std::unique_ptr<EngineSession>> OpenEngineSession(const EngineSessionFlags& flags) {
  if (flags.server.remote()) {
    absl::StatusOr<std::unique_ptr<client::KernelEvalClient>> client =
        client::KernelEvalClient::Create(client::ToClientOptions(flags.server));
    if (!client.ok()) return client.status();
    return std::make_unique<RemoteSession>(*std::move(client));
  }
  EngineOptions options;
  options.problems_dir = flags.problems_dir;
  options.enable_cuda = flags.backend != "cpu";
  options.cpu_interleaved_runs = flags.cpu_interleaved_runs;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(options);
  if (!engine.ok()) return engine.status();
  return std::make_unique<EmbeddedSession>(*std::move(engine));
}

int ExitCodeFor(const absl::Status& status) { return client::ExitCodeForStatus(status); }

}  // namespace kerneleval::cli
