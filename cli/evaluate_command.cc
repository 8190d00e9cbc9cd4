// kerneleval evaluate --problem ID --source FILE.cu: compile, check and time a
// kernel against the problem's reference, print the verdict and the reward.
// Several --source files: one EvaluateGroup (every correct kernel timed
// against one shared reference measurement), a verdict each and a ranking.
#include <google/protobuf/util/json_util.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/client/number_checks.h"
#include "cli/command.h"
#include "cli/compile_flags.h"
#include "cli/engine_session.h"
#include "cli/source_file.h"
#include "evaluator/engine/engine.h"
#include "rubric/rubric.h"

namespace kerneleval::cli {
namespace {

struct EvaluateFlags {
  std::string problem;
  std::vector<std::string> source_paths;
  bool json = false;
  std::optional<uint64_t> seed;
  std::string backend = "auto";
  std::string mode;
  bool partial = false;
  bool no_partial = false;
  bool skip_timing = false;
  double timeout_seconds = 0;  // 0: the engine's limits
  std::vector<std::string> options;
  std::string arch;
  EngineSessionFlags session;
};

std::string Micros(double us) {
  if (us >= 1000) return absl::StrFormat("%.3f ms", us / 1000);
  return absl::StrFormat("%.2f us", us);
}

// What the request was: the verdict alone does not say.
struct VerdictOrigin {
  bool skip_timing = false;  // correctness only
  bool in_group = false;     // one of an EvaluateGroup's verdicts
};

// The speedup to show: the verdict's, or, where the server scores CPU-emulated
// speed as 1x (flag emulated_speed_not_rewarded), the measured ratio of the
// medians: "1.000x" beside medians 3x apart told a reader the kernel was as
// fast as the reference (rt7 #9).
struct ShownSpeedup {
  double value = 0;
  bool not_rewarded = false;
};
ShownSpeedup SpeedupToShow(const v1::Verdict& v) {
  const bool not_rewarded = std::find(v.flags().begin(), v.flags().end(),
                                      "emulated_speed_not_rewarded") != v.flags().end();
  const auto& t = v.timing();
  if (not_rewarded && t.candidate().median_us() > 0) {
    return {t.reference().median_us() / t.candidate().median_us(), true};
  }
  return {v.speedup(), false};
}

void PrintVerdict(const v1::Verdict& v, const VerdictOrigin& origin, FILE* out) {
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
    const ShownSpeedup shown = SpeedupToShow(v);
    absl::FPrintF(out,
                  "speedup   %.3fx  (reference %s, candidate %s; medians of %d / %d samples)%s\n",
                  shown.value, Micros(t.reference().median_us()), Micros(t.candidate().median_us()),
                  t.reference().samples(), t.candidate().samples(),
                  shown.not_rewarded ? "  [measured on CPU emulation; not rewarded: scored as 1x]"
                  : t.emulated()     ? "  [CPU emulation: not a GPU speedup]"
                                     : "");
    if (v.roofline_frac() > 0) {
      absl::FPrintF(out, "roofline  %.1f%% of the hardware roof (minimum %s)\n",
                    100 * v.roofline_frac(), Micros(t.roofline_min_us()));
    }
  }
  if (v.has_correctness() && v.correctness().trials_run() > 0) {
    const auto& c = v.correctness();
    absl::FPrintF(out, "checks    %d cases over %d shapes: %s\n", c.trials_run(),
                  c.shapes_checked(), c.passed() ? "every output within tolerance" : "FAILED");
    int shown = 0;
    for (const auto& check : c.checks()) shown += check.passed() ? 0 : 1;
    if (static_cast<int>(c.failing_checks()) > shown) {
      absl::FPrintF(out, "  %d failing checks (an output on a case); the first %d:\n",
                    c.failing_checks(), shown);
    }
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
  for (const std::string& note : v.correctness().notes()) {
    absl::FPrintF(out, "note      %s\n", note);
  }
  for (const std::string& note : v.timing().notes()) absl::FPrintF(out, "note      %s\n", note);
  const bool timed = v.has_timing() && v.timing().candidate().samples() > 0;
  if (v.correct() && origin.skip_timing && !timed) {
    absl::FPrintF(out,
                  "note      not timed (--skip-timing): a correct kernel's reward comes from its "
                  "speed, so it is %.6g without timing\n",
                  v.reward());
  }
  if (v.has_seed()) absl::FPrintF(out, "seed      %d\n", v.seed());
  if (v.deduplicated() && origin.in_group) {
    absl::FPrintF(out, "cached    identical to an earlier source of this group: run once\n");
    absl::FPrintF(out, "wall      %.3f s\n", v.wall_seconds());
  } else if (v.deduplicated()) {
    // The engine answers an identical submission (same problem, source,
    // launch plan, options, device, --skip-timing and --seed) from its
    // recent verdicts instead of running it again (server/README.md).
    absl::FPrintF(out,
                  "cached    the verdict of an identical submission judged recently, re-scored "
                  "with this request's reward settings (a different --seed, or any change to the "
                  "source, runs it again)\n");
    absl::FPrintF(out, "wall      %.3f s  (of that earlier evaluation)\n", v.wall_seconds());
  } else {
    absl::FPrintF(out, "wall      %.3f s\n", v.wall_seconds());
  }
}

// The verdict's JSON with every field present: proto3 leaves an unset
// `optional` out even with always_print_primitive_fields, so a secret seed
// (not revealed) is written as null; and an unset message (no "timing" for a
// kernel that failed its checks) is written empty, so that a script reading
// d["timing"]["candidate"]["samples"] gets 0 rather than a KeyError.
using OrderedJson = nlohmann::ordered_json;

// Sets every singular message field (outside a oneof) of `message`, down to
// `depth` levels.
void SetAbsentMessages(google::protobuf::Message* message, int depth) {
  if (depth == 0) return;
  const google::protobuf::Descriptor* descriptor = message->GetDescriptor();
  const google::protobuf::Reflection* reflection = message->GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor->field(i);
    if (field->is_repeated() ||
        field->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE ||
        field->containing_oneof() != nullptr) {
      continue;
    }
    SetAbsentMessages(reflection->MutableMessage(message, field), depth - 1);
  }
}

OrderedJson ParseOwnJson(const std::string& text) {
  return OrderedJson::parse(text, /*cb=*/nullptr, /*allow_exceptions=*/false);
}

std::string DumpJson(const OrderedJson& json) {
  return json.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

OrderedJson VerdictJson(const v1::Verdict& verdict) {
  v1::Verdict complete = verdict;
  SetAbsentMessages(&complete, /*depth=*/4);
  OrderedJson json = ParseOwnJson(ToJson(complete));
  if (json.is_object() && !verdict.has_seed()) json["seed"] = nullptr;
  return json;
}

std::string VerdictJsonText(const v1::Verdict& verdict) {
  const OrderedJson json = VerdictJson(verdict);
  return json.is_discarded() ? ToJson(verdict) : DumpJson(json);
}

std::string GroupJsonText(const v1::EvaluateGroupResponse& group) {
  OrderedJson json = ParseOwnJson(ToJson(group));
  if (!json.is_object()) return ToJson(group);
  OrderedJson verdicts = OrderedJson::array();
  for (const v1::Verdict& verdict : group.verdicts()) {
    OrderedJson one = VerdictJson(verdict);
    if (one.is_discarded()) return ToJson(group);
    verdicts.push_back(std::move(one));
  }
  json["verdicts"] = std::move(verdicts);
  return DumpJson(json);
}

// Reward settings the way the embedded engine resolves them: the flags, else
// $KERNEL_ENV_REWARD / $KERNEL_ENV_PARTIAL_CREDIT. Sent in every request, so
// that --server gives the same reward as the embedded engine; with neither a
// flag nor the variable set the field stays unset and the engine's (the
// server's) default applies.
absl::Status ResolveRewardFlags(EvaluateFlags* flags) {
  if (flags->mode.empty()) {
    if (const char* env = std::getenv(rubric::kRewardModeEnvVar); env != nullptr) {
      absl::StatusOr<rubric::RewardConfig> config = rubric::RewardConfigFromEnv();
      if (!config.ok()) return config.status();
      flags->mode = std::string(rubric::RewardModeName(config->mode));
    }
  }
  if (!flags->partial && !flags->no_partial) {
    if (std::getenv(rubric::kPartialCreditEnvVar) != nullptr) {
      absl::StatusOr<rubric::RewardConfig> config = rubric::RewardConfigFromEnv("speedup");
      if (!config.ok()) return config.status();
      (config->partial_credit ? flags->partial : flags->no_partial) = true;
    }
  }
  return absl::OkStatus();
}

// The settings every submission of one invocation shares.
template <typename Request>
void SetCommon(const EvaluateFlags& flags, Request* request) {
  request->set_problem_id(flags.problem);
  if (flags.seed) request->set_seed(*flags.seed);
  request->set_skip_timing(flags.skip_timing);
  if (flags.timeout_seconds > 0)
    request->mutable_limits()->set_timeout_seconds(flags.timeout_seconds);
  if (flags.mode == "speedup") request->mutable_reward()->set_mode(v1::REWARD_MODE_SPEEDUP);
  if (flags.mode == "roofline") request->mutable_reward()->set_mode(v1::REWARD_MODE_ROOFLINE);
  if (flags.partial) request->mutable_reward()->set_partial_credit(true);
  if (flags.no_partial) request->mutable_reward()->set_partial_credit(false);
  if (flags.backend == "cuda") request->set_backend(v1::BACKEND_CUDA);
  if (flags.backend == "cpu") request->set_backend(v1::BACKEND_CPU);
}

// An error that ends the command (FailCommand: with --json also a JSON
// object on stdout). Returns `exit_code` (cli/command.h).
int Fail(const EvaluateFlags& flags, int exit_code, absl::string_view code,
         absl::string_view message) {
  return FailCommand("evaluate", flags.json, exit_code, code, message);
}
int Fail(const EvaluateFlags& flags, const absl::Status& status) {
  return Fail(flags, ExitCodeFor(status), absl::StatusCodeToString(status.code()),
              status.message());
}

bool ReadSubmission(const EvaluateFlags& flags, const std::string& path,
                    v1::Submission* submission) {
  absl::StatusOr<std::string> source = ReadSourceFile(path);
  if (!source.ok()) {
    Fail(flags, kExitUsage, "INVALID_ARGUMENT", source.status().message());
    return false;
  }
  submission->set_source(*std::move(source));
  for (const auto& option : flags.options) {
    submission->mutable_compile_options()->add_options(option);
  }
  submission->mutable_compile_options()->set_arch(flags.arch);
  return true;
}

void NoteCpuFallback(const EvaluateFlags& flags, const std::string& backend) {
  if (flags.backend == "auto" && backend == "cpu") {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "note: no GPU here: evaluated on the CPU backend (emulation; its timings are CPU "
                 "times, not GPU speedups)\n");
  }
}

// Several sources: one group, a verdict per source, then the ranking.
void RunGroup(const EvaluateFlags& flags, EngineSession& session) {
  v1::EvaluateGroupRequest request;
  SetCommon(flags, &request);
  for (const std::string& path : flags.source_paths) {
    if (!ReadSubmission(flags, path, request.add_submissions())) return SetExitCode(kExitUsage);
  }
  absl::StatusOr<v1::EvaluateGroupResponse> group = session.EvaluateGroup(request);
  if (!group.ok()) return SetExitCode(Fail(flags, group.status()));
  if (group->verdicts_size() != static_cast<int>(flags.source_paths.size())) {
    std::fprintf(stderr, "kerneleval evaluate: %d verdicts for %zu sources\n",
                 group->verdicts_size(), flags.source_paths.size());
    return SetExitCode(kExitUnavailable);
  }
  if (!group->verdicts().empty()) NoteCpuFallback(flags, group->verdicts(0).backend());
  bool any_failed = false;
  int not_evaluated = 0;        // the deadline (--rpc-timeout) came first: no verdict
  bool refused_option = false;  // the same options for all: bad input
  for (const auto& verdict : group->verdicts()) {
    const bool unjudged = verdict.stage() == "not_evaluated";
    not_evaluated += unjudged ? 1 : 0;
    any_failed = any_failed || (!verdict.correct() && !unjudged);
    refused_option = refused_option || NvrtcRefusedAnOption(verdict.compile());
  }
  const int exit_code = refused_option      ? kExitUsage
                        : any_failed        ? kExitFailed
                        : not_evaluated > 0 ? kExitUnavailable
                                            : kExitOk;
  if (not_evaluated > 0) {
    // Exit 3 (or 1) needs a reason where the table has only stages.
    std::fflush(stdout);
    std::fprintf(stderr,
                 "kerneleval evaluate: %d of %d kernels not evaluated: the group's deadline "
                 "(--rpc-timeout) came first\n",
                 not_evaluated, group->verdicts_size());
  }
  if (flags.json) {
    std::printf("%s\n", GroupJsonText(*group).c_str());
    return SetExitCode(exit_code);
  }
  for (size_t i = 0; i < flags.source_paths.size(); ++i) {
    absl::PrintF("== [%d] %s\n", i + 1, flags.source_paths[i]);
    PrintVerdict(group->verdicts(static_cast<int>(i)),
                 {.skip_timing = flags.skip_timing, .in_group = true}, stdout);
    absl::PrintF("\n");
  }
  // Correct kernels first, then the best reward, then the faster (rewards
  // clamp, and are 0.0 without timing); remaining ties keep the command
  // line's order.
  std::vector<size_t> order(flags.source_paths.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const v1::Verdict& x = group->verdicts(static_cast<int>(a));
    const v1::Verdict& y = group->verdicts(static_cast<int>(b));
    if (x.correct() != y.correct()) return x.correct();
    if (x.reward() != y.reward()) return x.reward() > y.reward();
    return x.speedup() > y.speedup();
  });
  if (group->reference_timing().samples() > 0) {
    absl::PrintF("reference %s  (median of %d samples, shared by the group)\n",
                 Micros(group->reference_timing().median_us()),
                 group->reference_timing().samples());
  }
  absl::PrintF("%-4s  %-13s  %9s  %8s  %s\n", "rank", "stage", "speedup", "reward", "source");
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const v1::Verdict& v = group->verdicts(static_cast<int>(order[rank]));
    const ShownSpeedup shown = SpeedupToShow(v);
    const std::string speedup =
        v.has_timing() && v.timing().candidate().samples() > 0
            ? absl::StrFormat("%.3fx%s", shown.value, shown.not_rewarded ? "*" : "")
            : std::string("-");
    absl::PrintF("%-4d  %-13s  %9s  %8.4g  [%d] %s\n", rank + 1, v.stage(), speedup, v.reward(),
                 order[rank] + 1, flags.source_paths[order[rank]]);
  }
  for (const v1::Verdict& v : group->verdicts()) {
    if (SpeedupToShow(v).not_rewarded) {
      absl::PrintF("* measured on CPU emulation; not rewarded: scored as 1x\n");
      break;
    }
  }
  SetExitCode(exit_code);
}

void Run(EvaluateFlags flags) {
  if (absl::Status s = ResolveRewardFlags(&flags); !s.ok()) {
    return SetExitCode(Fail(flags, kExitUsage, "INVALID_ARGUMENT", s.message()));
  }
  if (absl::Status s = CheckCompileFlags(flags.arch, flags.options); !s.ok()) {
    return SetExitCode(Fail(flags, kExitUsage, "INVALID_ARGUMENT", s.message()));
  }
  if (std::count(flags.source_paths.begin(), flags.source_paths.end(), "-") > 1) {
    return SetExitCode(
        Fail(flags, kExitUsage, "INVALID_ARGUMENT", "standard input (-) given more than once"));
  }
  v1::EvaluateRequest request;
  SetCommon(flags, &request);
  if (flags.source_paths.size() == 1 &&
      !ReadSubmission(flags, flags.source_paths[0], request.mutable_submission())) {
    return SetExitCode(kExitUsage);
  }

  EngineSessionFlags session_flags = flags.session;
  session_flags.backend = flags.backend;
  absl::StatusOr<std::unique_ptr<EngineSession>> session = OpenEngineSession(session_flags);
  if (!session.ok()) return SetExitCode(Fail(flags, session.status()));
  if (flags.source_paths.size() > 1) return RunGroup(flags, **session);
  const bool live = !flags.json && ::isatty(STDERR_FILENO);
  absl::StatusOr<v1::Verdict> verdict = (*session)->Evaluate(request, live);
  if (!verdict.ok()) return SetExitCode(Fail(flags, verdict.status()));
  NoteCpuFallback(flags, verdict->backend());
  if (flags.json) {
    std::printf("%s\n", VerdictJsonText(*verdict).c_str());
  } else {
    PrintVerdict(*verdict, {.skip_timing = flags.skip_timing}, stdout);
  }
  if (NvrtcRefusedAnOption(verdict->compile())) return SetExitCode(kExitUsage);
  SetExitCode(verdict->correct() ? kExitOk : kExitFailed);
}

void AddEvaluate(CLI::App& root) {
  auto flags = std::make_shared<EvaluateFlags>();
  CLI::App* cmd = root.add_subcommand(
      "evaluate",
      "Compile, check and time a kernel (or several) against a problem's reference; print the "
      "verdict");
  cmd->add_option("--problem,-p", flags->problem, "Problem id (kerneleval problems list)")
      ->required();
  cmd->add_option("--source,-s", flags->source_paths,
                  "CUDA C++ source with // @launch lines ('-': standard input); several "
                  "(repeat -s, or list them): "
                  "one group against a shared reference measurement, then a ranking "
                  "(--json: the EvaluateGroupResponse)")
      ->required();
  cmd->add_flag("--json", flags->json,
                "Print the verdict as JSON (proto field names, every field present)");
  cmd->add_option("--seed", flags->seed, "Fixed input seed (reproducible; reported in the verdict)")
      ->check(client::NonNegativeNumber());
  cmd->add_option("--backend", flags->backend, "Where to run: auto (GPU if present), cuda, cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  cmd->add_option(
         "--mode", flags->mode,
         "Reward mode: speedup or roofline (default: $KERNEL_ENV_REWARD, sent to a --server "
         "too; unset: speedup in-process, the server's default with --server)")
      ->check(CLI::IsMember({"speedup", "roofline"}));
  auto* partial = cmd->add_flag(
      "--partial", flags->partial,
      "Partial credit for failed kernels (default: on iff $KERNEL_ENV_PARTIAL_CREDIT is 1, "
      "sent to a --server too; unset: off in-process, the server's default with --server)");
  cmd->add_flag("--no-partial", flags->no_partial, "No partial credit")->excludes(partial);
  cmd->add_flag("--skip-timing", flags->skip_timing, "Correctness only (no speedup)");
  cmd->add_option("--timeout", flags->timeout_seconds,
                  "Wall-clock limit of each run [s] (default: the engine's, and a candidate's "
                  "correctness run is cut at 25x the reference's, at least 5 s; given, it is "
                  "the limit as given, up to 10x the engine's)")
      ->check(client::PositiveNumber());
  cmd->add_option("--option,-O", flags->options,
                  "NVRTC option from the allow-list, e.g. -maxrregcount=64 (repeatable; the "
                  "CPU backend refuses --use_fast_math, -ftz=true, -prec-div=false and "
                  "-prec-sqrt=false)");
  cmd->add_option("--arch", flags->arch, "Target architecture, e.g. sm_90");
  AddEngineSessionFlags(cmd, &flags->session);
  cmd->callback([flags] { Run(*flags); });
}

}  // namespace

KERNELEVAL_CLI_COMMAND("evaluate", AddEvaluate);

}  // namespace kerneleval::cli
