// kerneleval evaluate --problem ID --source FILE.cu: compile, check and time a
// kernel against the problem's reference, print the verdict and the reward.
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "cli/engine_session.h"
#include "evaluator/engine/engine.h"

namespace kerneleval::cli {
namespace {

struct EvaluateFlags {
  std::string problem;
  std::string source_path;
  bool json = false;
  std::optional<uint64_t> seed;
  std::string backend = "auto";
  std::string mode;
  bool partial = false;
  bool no_partial = false;
  bool skip_timing = false;
  std::vector<std::string> options;
  std::string arch;
  EngineSessionFlags session;
};

std::string Micros(double us) {
  if (us >= 1000) return absl::StrFormat("%.3f ms", us / 1000);
  return absl::StrFormat("%.2f us", us);
}

void PrintVerdict(const v1::Verdict& v, FILE* out) {
  absl::FPrintF(out, "problem   %s  (backend %s, device %s)\n", v.problem_id(), v.backend(),
                v.device().name().empty() ? v.device().id() : v.device().name());
  absl::FPrintF(out, "stage     %s%s\n", v.stage(), v.correct() ? "  (correct)" : "");
  const char* mode =
      v.reward_settings().mode() == v1::REWARD_MODE_ROOFLINE ? "roofline" : "speedup";
  absl::FPrintF(out, "reward    %.6g  (%s mode, partial credit %s)\n", v.reward(), mode,
                v.reward_settings().partial_credit() ? "on" : "off");
  if (!v.error().empty()) absl::FPrintF(out, "error     %s\n", v.error());
  if (v.has_timing() && v.timing().candidate().samples() > 0) {
    const auto& t = v.timing();
    absl::FPrintF(out,
                  "speedup   %.3fx  (reference %s, candidate %s; medians of %d / %d samples)%s\n",
                  v.speedup(), Micros(t.reference().median_us()), Micros(t.candidate().median_us()),
                  t.reference().samples(), t.candidate().samples(),
                  t.emulated() ? "  [CPU emulation: not a GPU speedup]" : "");
    if (v.roofline_frac() > 0) {
      absl::FPrintF(out, "roofline  %.1f%% of the hardware roof (minimum %s)\n",
                    100 * v.roofline_frac(), Micros(t.roofline_min_us()));
    }
  }
  if (v.has_correctness() && v.correctness().trials_run() > 0) {
    const auto& c = v.correctness();
    absl::FPrintF(out, "checks    %d cases over %d shapes: %s\n", c.trials_run(),
                  c.shapes_checked(), c.passed() ? "every output within tolerance" : "FAILED");
  }
  for (const auto& check : v.correctness().checks()) {
    if (check.passed()) continue;
    absl::FPrintF(out,
                  "  %s on %s: %d/%d wrong, max abs err %.3g, max rel err %.3g; first at [%s]: "
                  "got %.9g, expected %.9g\n",
                  check.output(), check.shape_label(), check.mismatches(), check.elements(),
                  check.max_abs_error(), check.max_rel_error(),
                  absl::StrJoin(check.first_mismatch().index(), ", "), check.first_mismatch().got(),
                  check.first_mismatch().expected());
  }
  for (const auto& kernel : v.compile().kernels()) {
    absl::FPrintF(out,
                  "kernel    %s: %d registers, %d B static smem, %d B stack, %d/%d B spill "
                  "stores/loads\n",
                  kernel.name(), kernel.registers_per_thread(), kernel.static_shared_bytes(),
                  kernel.local_bytes(), kernel.spill_store_bytes(), kernel.spill_load_bytes());
  }
  if (!v.compile().success() && !v.compile().log().empty()) {
    absl::FPrintF(out, "compiler log:\n%s\n", v.compile().log());
  }
  if (!v.flags().empty()) absl::FPrintF(out, "flags     %s\n", absl::StrJoin(v.flags(), ", "));
  if (v.has_seed()) absl::FPrintF(out, "seed      %d\n", v.seed());
  absl::FPrintF(out, "wall      %.3f s\n", v.wall_seconds());
}

void Run(const EvaluateFlags& flags) {
  std::ifstream file(flags.source_path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "kerneleval evaluate: cannot read %s\n", flags.source_path.c_str());
    return SetExitCode(kExitUsage);
  }
  std::stringstream source;
  source << file.rdbuf();

  v1::EvaluateRequest request;
  request.set_problem_id(flags.problem);
  request.mutable_submission()->set_source(source.str());
  for (const auto& option : flags.options) {
    request.mutable_submission()->mutable_compile_options()->add_options(option);
  }
  request.mutable_submission()->mutable_compile_options()->set_arch(flags.arch);
  if (flags.seed) request.set_seed(*flags.seed);
  request.set_skip_timing(flags.skip_timing);
  if (flags.mode == "speedup") request.mutable_reward()->set_mode(v1::REWARD_MODE_SPEEDUP);
  if (flags.mode == "roofline") request.mutable_reward()->set_mode(v1::REWARD_MODE_ROOFLINE);
  if (flags.partial) request.mutable_reward()->set_partial_credit(true);
  if (flags.no_partial) request.mutable_reward()->set_partial_credit(false);
  if (flags.backend == "cuda") request.set_backend(v1::BACKEND_CUDA);
  if (flags.backend == "cpu") request.set_backend(v1::BACKEND_CPU);

  EngineSessionFlags session_flags = flags.session;
  session_flags.backend = flags.backend;
  absl::StatusOr<std::unique_ptr<EngineSession>> session = OpenEngineSession(session_flags);
  if (!session.ok()) {
    std::fprintf(stderr, "kerneleval evaluate: %s\n",
                 std::string(session.status().message()).c_str());
    return SetExitCode(ExitCodeFor(session.status()));
  }
  const bool live = !flags.json && ::isatty(STDERR_FILENO);
  absl::StatusOr<v1::Verdict> verdict = (*session)->Evaluate(request, live);
  if (!verdict.ok()) {
    std::fprintf(stderr, "kerneleval evaluate: %s\n", verdict.status().ToString().c_str());
    return SetExitCode(ExitCodeFor(verdict.status()));
  }
  if (flags.backend == "auto" && verdict->backend() == "cpu") {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "note: no GPU here: evaluated on the CPU backend (emulation; its timings are CPU "
                 "times, not GPU speedups)\n");
  }
  if (flags.json) {
    std::printf("%s\n", ToJson(*verdict).c_str());
  } else {
    PrintVerdict(*verdict, stdout);
  }
  SetExitCode(verdict->correct() ? kExitOk : kExitFailed);
}

void AddEvaluate(CLI::App& root) {
  auto flags = std::make_shared<EvaluateFlags>();
  CLI::App* cmd = root.add_subcommand(
      "evaluate",
      "Compile, check and time a kernel against a problem's reference; print the verdict");
  cmd->add_option("--problem,-p", flags->problem, "Problem id (kerneleval problems list)")
      ->required();
  cmd->add_option("--source,-s", flags->source_path, "CUDA C++ source with // @launch lines")
      ->required();
  cmd->add_flag("--json", flags->json,
                "Print the verdict as JSON (proto field names, every field present)");
  cmd->add_option("--seed", flags->seed,
                  "Fixed input seed (reproducible; reported in the verdict)");
  cmd->add_option("--backend", flags->backend, "Where to run: auto (GPU if present), cuda, cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  cmd->add_option("--mode", flags->mode,
                  "Reward mode: speedup or roofline (default: $KERNEL_ENV_REWARD, else speedup)")
      ->check(CLI::IsMember({"speedup", "roofline"}));
  auto* partial = cmd->add_flag("--partial", flags->partial, "Partial credit for failed kernels");
  cmd->add_flag("--no-partial", flags->no_partial, "No partial credit")->excludes(partial);
  cmd->add_flag("--skip-timing", flags->skip_timing, "Correctness only (no speedup)");
  cmd->add_option("--option,-O", flags->options,
                  "NVRTC option from the allow-list, e.g. --use_fast_math (repeatable)");
  cmd->add_option("--arch", flags->arch, "Target architecture, e.g. sm_90");
  AddEngineSessionFlags(cmd, &flags->session);
  cmd->callback([flags] { Run(*flags); });
}

}  // namespace

KERNELEVAL_CLI_COMMAND("evaluate", AddEvaluate);

}  // namespace kerneleval::cli
