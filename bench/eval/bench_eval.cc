// bench_eval: what one evaluation costs, and how far its speedup can be
// trusted, per problem, through the real engine (issue "CUDA backend and
// timing you can trust").
//
// Per problem, on the backend available (--backend auto|cuda|cpu):
//   1. The problem's own reference is submitted as a candidate --repeats times
//      (default 10), each with a different seed: a different seed is a
//      different de-duplication key, so every evaluation really runs.
//   2. The first evaluation starts with a cold compile cache (a fresh engine
//      per run): its wall time and its parts (the engine's own EngineObserver
//      stages compile, host_build, correctness, timing, queue_wait, total) are "cold".
//   3. The later ones hit the compile cache: their median wall time and parts,
//      and evaluations per minute = 60 s / mean wall time (one at a time, as a
//      caller waiting on each verdict sees it).
//   4. Self-speedup spread: reference against itself, so the true speedup is
//      1. Min / median / max of the verdicts' speedups and the fraction within
//      1.00 +/- 0.02 (the target on a GPU). On the CPU backend the timings are
//      those of an emulation on the host, so that figure says nothing about a
//      GPU; the output says so.
// Bounded by --max-seconds: each problem gets an equal share of what is left,
// and no evaluation starts that would be expected to end past the budget
// (the first of each problem always runs while any budget is left).
//
// Exit: 0 when every evaluation returned a verdict that passed; 1 when one did
// not (the reference failing as a candidate is a bug); 2 on a usage error or
// when no engine could be created.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "evaluator/engine/engine.h"
#include "nlohmann/json.hpp"

namespace kerneleval::bench {
namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

// The engine's latency stages (EngineObserver::OnLatency), in reporting order.
constexpr const char* kStages[] = {"compile", "host_build", "correctness",
                                   "timing",  "queue_wait", "total"};
// Self-speedup target on a GPU: |speedup - 1| <= 0.02.
constexpr double kSelfSpeedupTolerance = 0.02;
// ProblemResult::skipped when --max-seconds ran out before the problem's turn.
constexpr char kOutOfTime[] = "time budget spent";

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// What the engine reported for one evaluation: seconds per stage (summed when
// a stage is reported more than once) and compile-cache hits/misses. The bench
// evaluates one request at a time, and the engine reports every stage of a
// request before its verdict is delivered, so everything recorded between
// Begin() and Take() belongs to that request.
struct StageTimes {
  std::map<std::string, double> seconds;  // [s] per stage
  int cache_hits = 0;
  int cache_misses = 0;
};

class RecordingObserver final : public EngineObserver {
 public:
  void OnLatency(std::string_view stage, double seconds) override {
    std::lock_guard lock(mutex_);
    current_.seconds[std::string(stage)] += seconds;
  }
  void OnCompileCache(bool hit) override {
    std::lock_guard lock(mutex_);
    (hit ? current_.cache_hits : current_.cache_misses)++;
  }
  void Begin() {
    std::lock_guard lock(mutex_);
    current_ = {};
  }
  StageTimes Take() {
    std::lock_guard lock(mutex_);
    return std::exchange(current_, {});
  }

 private:
  std::mutex mutex_;
  StageTimes current_;
};

struct EvaluationRecord {
  double wall_seconds = 0;  // [s] around Engine::Evaluate, as the caller waits
  StageTimes stages;
  bool ok = false;      // a verdict came back (not an error status)
  bool passed = false;  // ... and it passed
  std::string error;    // status or verdict error
  double speedup = 0;
  double reward = 0;
  double roofline_frac = 0;
  double reference_median_us = 0;
  double candidate_median_us = 0;
  uint32_t candidate_samples = 0;
  std::vector<std::string> flags;
};

struct ProblemResult {
  std::string id;
  std::string skipped;  // why it did not run, if it did not
  std::vector<EvaluationRecord> evaluations;
  bool budget_cut = false;  // fewer evaluations than asked: the time budget ran out
};

struct Options {
  std::string backend = "auto";
  std::vector<std::string> problems = {"vector_add", "relu",   "softmax",
                                       "row_sum",    "matmul", "layernorm"};
  int repeats = 10;
  double max_seconds = 300;
  std::string json_path;
  std::string problems_dir;
  double run_timeout_seconds = 20;
  bool cpu_interleaved_runs = true;
};

struct EngineWithBackend {
  std::unique_ptr<Engine> engine;
  v1::Backend backend = v1::BACKEND_CPU;
  v1::DeviceInfo device;
};

bool HasCuda(Engine& engine, v1::DeviceInfo* device) {
  // Kept in a variable: a range-for over a member of a temporary dangles.
  const v1::ListDevicesResponse devices = engine.ListDevices();
  for (const auto& d : devices.devices()) {
    if (d.backend() == "cuda") {
      *device = d;
      return true;
    }
  }
  return false;
}

// One engine with one backend: cuda when asked for or (auto) when a device is
// present, else cpu. One backend only, so every evaluation lands on it.
absl::StatusOr<EngineWithBackend> CreateEngine(const Options& options,
                                               std::shared_ptr<EngineObserver> observer) {
  EngineOptions engine_options;
  engine_options.problems_dir = options.problems_dir;
  engine_options.run_timeout_seconds = options.run_timeout_seconds;
  engine_options.observer = std::move(observer);
  engine_options.reward_mode = "speedup";
  engine_options.partial_credit = false;
  engine_options.cpu_interleaved_runs = options.cpu_interleaved_runs;
  std::string cuda_error = "not tried";
  if (options.backend != "cpu") {
    EngineOptions cuda_options = engine_options;
    cuda_options.enable_cuda = true;
    cuda_options.enable_cpu = false;
    absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(cuda_options);
    EngineWithBackend result;
    if (engine.ok() && HasCuda(**engine, &result.device)) {
      result.engine = *std::move(engine);
      result.backend = v1::BACKEND_CUDA;
      return result;
    }
    cuda_error =
        engine.ok() ? "the engine found no CUDA device" : std::string(engine.status().message());
    if (options.backend == "cuda") {
      return absl::FailedPreconditionError(absl::StrCat("no CUDA backend: ", cuda_error));
    }
    std::fprintf(stderr, "bench_eval: no CUDA backend (%s); using the CPU backend\n",
                 cuda_error.c_str());
  }
  engine_options.enable_cuda = false;
  engine_options.enable_cpu = true;
  absl::StatusOr<std::unique_ptr<Engine>> engine = Engine::Create(engine_options);
  if (!engine.ok()) return engine.status();
  EngineWithBackend result;
  result.engine = *std::move(engine);
  result.backend = v1::BACKEND_CPU;
  const v1::ListDevicesResponse devices = result.engine->ListDevices();
  for (const auto& d : devices.devices()) {
    if (d.backend() == "cpu") result.device = d;
  }
  return result;
}

EvaluationRecord EvaluateOnce(Engine& engine, RecordingObserver& observer,
                              const v1::EvaluateRequest& request) {
  EvaluationRecord record;
  observer.Begin();
  const auto start = Clock::now();
  absl::StatusOr<v1::Verdict> verdict = engine.Evaluate(request, CallContext{});
  record.wall_seconds = SecondsSince(start);
  record.stages = observer.Take();
  if (!verdict.ok()) {
    record.error = verdict.status().ToString();
    return record;
  }
  record.ok = true;
  record.passed = verdict->correct() && verdict->stage() == "passed";
  record.error = verdict->error();
  if (!record.passed && record.error.empty()) record.error = "stage " + verdict->stage();
  record.speedup = verdict->speedup();
  record.reward = verdict->reward();
  record.roofline_frac = verdict->roofline_frac();
  record.reference_median_us = verdict->timing().reference().median_us();
  record.candidate_median_us = verdict->timing().candidate().median_us();
  record.candidate_samples = verdict->timing().candidate().samples();
  for (const auto& flag : verdict->flags()) record.flags.push_back(flag);
  return record;
}

ProblemResult RunProblem(Engine& engine, RecordingObserver& observer, v1::Backend backend,
                         const std::string& id, int repeats, Clock::time_point problem_deadline,
                         uint64_t first_seed) {
  ProblemResult result;
  result.id = id;
  v1::GetProblemRequest get;
  get.set_problem_id(id);
  absl::StatusOr<v1::GetProblemResponse> problem = engine.GetProblem(get);
  if (!problem.ok()) {
    result.skipped = problem.status().ToString();
    return result;
  }
  v1::EvaluateRequest request;
  request.set_problem_id(id);
  request.set_backend(backend);
  v1::Submission* submission = request.mutable_submission();
  submission->set_source(problem->problem().reference_source());
  *submission->mutable_launch_plan() = problem->problem().reference_plan();
  for (const auto& option : problem->problem().reference_compile_options()) {
    submission->mutable_compile_options()->add_options(option);
  }
  for (int i = 0; i < repeats; ++i) {
    if (i > 0) {
      // Expected end of the next evaluation: now + the mean of the warm ones
      // so far (the cold one when there is none yet).
      std::vector<double> walls;
      for (size_t j = result.evaluations.size() > 1 ? 1 : 0; j < result.evaluations.size(); ++j) {
        walls.push_back(result.evaluations[j].wall_seconds);
      }
      const auto expected_end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                   std::chrono::duration<double>(Mean(walls)));
      if (expected_end > problem_deadline) {
        result.budget_cut = true;
        break;
      }
    }
    request.set_seed(first_seed + static_cast<uint64_t>(i));
    result.evaluations.push_back(EvaluateOnce(engine, observer, request));
    const EvaluationRecord& last = result.evaluations.back();
    std::fprintf(stderr, "  %s #%d: %.3f s, %s%s\n", id.c_str(), i, last.wall_seconds,
                 last.passed ? "passed" : "NOT passed: ", last.passed ? "" : last.error.c_str());
    if (!last.ok) break;  // an infrastructure error: the next would fail alike
  }
  return result;
}

// ------------------------------------------------------------------ report

struct Summary {
  // Cold: the first evaluation. Warm: medians over the later ones.
  std::optional<EvaluationRecord> cold;
  int warm_count = 0;
  std::map<std::string, double> warm_median_stage_seconds;
  double warm_median_wall_seconds = 0;
  double warm_mean_wall_seconds = 0;
  double evaluations_per_minute = 0;
  int warm_cache_hits = 0, warm_cache_misses = 0;
  // Self-speedup over every passed evaluation.
  std::vector<double> speedups;
  double speedup_min = 0, speedup_median = 0, speedup_max = 0;
  double fraction_within_tolerance = 0;
  int failed = 0;
};

Summary Summarize(const ProblemResult& result) {
  Summary s;
  if (result.evaluations.empty()) return s;
  s.cold = result.evaluations.front();
  std::vector<double> walls;
  std::map<std::string, std::vector<double>> stages;
  for (size_t i = 1; i < result.evaluations.size(); ++i) {
    const EvaluationRecord& e = result.evaluations[i];
    if (!e.ok) continue;
    walls.push_back(e.wall_seconds);
    for (const char* stage : kStages) {
      auto it = e.stages.seconds.find(stage);
      stages[stage].push_back(it == e.stages.seconds.end() ? 0.0 : it->second);
    }
    s.warm_cache_hits += e.stages.cache_hits;
    s.warm_cache_misses += e.stages.cache_misses;
  }
  s.warm_count = static_cast<int>(walls.size());
  s.warm_median_wall_seconds = Median(walls);
  s.warm_mean_wall_seconds = Mean(walls);
  if (s.warm_mean_wall_seconds > 0) s.evaluations_per_minute = 60.0 / s.warm_mean_wall_seconds;
  for (const auto& [stage, values] : stages) s.warm_median_stage_seconds[stage] = Median(values);
  int within = 0;
  for (const EvaluationRecord& e : result.evaluations) {
    if (!e.passed) {
      ++s.failed;
      continue;
    }
    if (e.speedup <= 0) continue;
    s.speedups.push_back(e.speedup);
    within += std::abs(e.speedup - 1.0) <= kSelfSpeedupTolerance + 1e-12;
  }
  if (!s.speedups.empty()) {
    s.speedup_min = *std::min_element(s.speedups.begin(), s.speedups.end());
    s.speedup_max = *std::max_element(s.speedups.begin(), s.speedups.end());
    s.speedup_median = Median(s.speedups);
    s.fraction_within_tolerance = static_cast<double>(within) / s.speedups.size();
  }
  return s;
}

double Stage(const std::map<std::string, double>& seconds, const char* stage) {
  auto it = seconds.find(stage);
  return it == seconds.end() ? 0.0 : it->second;
}

Json StagesJson(const std::map<std::string, double>& seconds) {
  Json j = Json::object();
  for (const char* stage : kStages) j[stage] = Stage(seconds, stage);
  return j;
}

Json RecordJson(const EvaluationRecord& e) {
  Json j;
  j["wall_seconds"] = e.wall_seconds;
  j["stage_seconds"] = StagesJson(e.stages.seconds);
  j["compile_cache_hits"] = e.stages.cache_hits;
  j["compile_cache_misses"] = e.stages.cache_misses;
  j["passed"] = e.passed;
  if (!e.error.empty()) j["error"] = e.error;
  j["speedup"] = e.speedup;
  j["reward"] = e.reward;
  j["roofline_frac"] = e.roofline_frac;
  j["reference_median_us"] = e.reference_median_us;
  j["candidate_median_us"] = e.candidate_median_us;
  j["candidate_samples"] = e.candidate_samples;
  j["flags"] = e.flags;
  return j;
}

std::string Fixed(double value, int digits) { return absl::StrFormat("%.*f", digits, value); }

// Failures as the tables count them: evaluations that did not pass, and a
// problem that could not run for another reason than the budget.
int FailuresOf(const ProblemResult& r, const Summary& s) {
  int failures = s.failed;
  if ((!r.skipped.empty() || !s.cold) && r.skipped != kOutOfTime) ++failures;
  return failures;
}

// Every problem's figures so far, as --json writes them.
Json ProblemsJson(const std::vector<ProblemResult>& results, int* failures) {
  Json problems = Json::array();
  *failures = 0;
  for (const ProblemResult& r : results) {
    const Summary s = Summarize(r);
    *failures += FailuresOf(r, s);
    Json p;
    p["id"] = r.id;
    if (!r.skipped.empty()) {
      p["skipped"] = r.skipped;
      problems.push_back(p);
      continue;
    }
    p["budget_cut"] = r.budget_cut;
    if (s.cold) p["cold"] = RecordJson(*s.cold);
    p["warm"] = {{"count", s.warm_count},
                 {"median_wall_seconds", s.warm_median_wall_seconds},
                 {"mean_wall_seconds", s.warm_mean_wall_seconds},
                 {"median_stage_seconds", StagesJson(s.warm_median_stage_seconds)},
                 {"evaluations_per_minute", s.evaluations_per_minute},
                 {"compile_cache_hits", s.warm_cache_hits},
                 {"compile_cache_misses", s.warm_cache_misses}};
    p["self_speedup"] = {{"count", s.speedups.size()},
                         {"min", s.speedup_min},
                         {"median", s.speedup_median},
                         {"max", s.speedup_max},
                         {"fraction_within_tolerance", s.fraction_within_tolerance},
                         {"values", s.speedups}};
    p["failed"] = s.failed;
    Json all = Json::array();
    for (const EvaluationRecord& e : r.evaluations) all.push_back(RecordJson(e));
    p["evaluations"] = all;
    problems.push_back(p);
  }
  return problems;
}

int Main(int argc, char** argv) {
  Options options;
  std::string problems_list;
  CLI::App app{
      "bench_eval: wall time of a full evaluation and its stages, evaluations per minute with "
      "a warm compile cache, and the self-speedup spread (a problem's reference judged against "
      "itself), per problem"};
  app.add_option("--backend", options.backend, "auto | cuda | cpu")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}));
  app.add_option("--problems", problems_list,
                 "comma-separated problem ids (default: vector_add,relu,softmax,row_sum,matmul,"
                 "layernorm)");
  app.add_option("--repeats", options.repeats,
                 "evaluations per problem (the first cold, the rest with a warm compile cache)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--max-seconds", options.max_seconds, "wall-clock budget of the whole run [s]")
      ->check(CLI::PositiveNumber);
  app.add_option("--json", options.json_path, "also write the figures as JSON to this file");
  app.add_option("--problems-dir", options.problems_dir,
                 "problem folder (default: $KERNELEVAL_PROBLEMS_DIR, else the built-in set)");
  app.add_option("--run-timeout", options.run_timeout_seconds,
                 "engine's limit per backend call [s]")
      ->check(CLI::PositiveNumber);
  app.add_flag("!--cpu-plain-runs", options.cpu_interleaved_runs,
               "CPU backend: check correctness on the plain build, not the one whose threads "
               "interleave at read-modify-writes (to measure what the interleaving costs)");
  CLI11_PARSE(app, argc, argv);
  if (!problems_list.empty()) {
    options.problems = absl::StrSplit(problems_list, ',', absl::SkipWhitespace());
  }

  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.max_seconds));
  auto observer = std::make_shared<RecordingObserver>();
  absl::StatusOr<EngineWithBackend> engine = CreateEngine(options, observer);
  if (!engine.ok()) {
    std::fprintf(stderr, "bench_eval: %s\n", engine.status().ToString().c_str());
    return 2;
  }
  const double engine_start_seconds = SecondsSince(start);
  const bool emulated = engine->backend == v1::BACKEND_CPU;
  const std::string backend_name = emulated ? "cpu" : "cuda";
  std::fprintf(stderr, "bench_eval: backend %s, device %s (%s); engine started in %.2f s\n",
               backend_name.c_str(), engine->device.id().c_str(), engine->device.name().c_str(),
               engine_start_seconds);

  const std::string note =
      emulated ? "CPU backend: timings are of a CPU emulation of the kernels; the self-speedup "
                 "spread is an emulation figure, not a GPU figure"
               : "CUDA backend: GPU timings";
  std::vector<ProblemResult> results;
  // --json: rewritten after each problem (complete: false until the end), so
  // that a run killed on its way keeps the problems it finished.
  auto write_json = [&](bool complete) {
    if (options.json_path.empty()) return true;
    Json root;
    root["backend"] = backend_name;
    root["emulated"] = emulated;
    root["note"] = note;
    root["device"] = {{"id", engine->device.id()},
                      {"name", engine->device.name()},
                      {"roofline_known", engine->device.roofline_known()}};
    root["repeats"] = options.repeats;
    root["max_seconds"] = options.max_seconds;
    root["engine_start_seconds"] = engine_start_seconds;
    root["total_seconds"] = SecondsSince(start);
    root["self_speedup_tolerance"] = kSelfSpeedupTolerance;
    root["complete"] = complete;
    int failures = 0;
    Json problems = ProblemsJson(results, &failures);
    root["failures"] = failures;
    root["problems"] = std::move(problems);
    const std::string partial = options.json_path + ".partial";
    {
      std::ofstream out(partial);
      out << root.dump(2) << "\n";
      if (!out) return false;
    }
    return std::rename(partial.c_str(), options.json_path.c_str()) == 0;
  };
  for (size_t p = 0; p < options.problems.size(); ++p) {
    const std::string& id = options.problems[p];
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) {
      ProblemResult skipped;
      skipped.id = id;
      skipped.skipped = kOutOfTime;
      results.push_back(std::move(skipped));
      continue;
    }
    const double share = left / static_cast<double>(options.problems.size() - p);
    const auto problem_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(share));
    std::fprintf(stderr, "bench_eval: %s (budget %.0f s)\n", id.c_str(), share);
    results.push_back(RunProblem(*engine->engine, *observer, engine->backend, id, options.repeats,
                                 std::min(problem_deadline, deadline),
                                 /*first_seed=*/1000 * (p + 1)));
    write_json(/*complete=*/false);
  }
  const double total_seconds = SecondsSince(start);

  // ------------------------------------------------------------ the tables
  std::printf(
      "bench_eval results: backend %s, device %s (%s), %d evaluations per problem asked, "
      "budget %.0f s, ran %.1f s (engine start %.1f s)\n",
      backend_name.c_str(), engine->device.id().c_str(), engine->device.name().c_str(),
      options.repeats, options.max_seconds, total_seconds, engine_start_seconds);
  std::printf("note: %s\n\n", note.c_str());

  std::printf(
      "One full evaluation of the reference as a candidate: wall time and the engine's "
      "stages [s]\n");
  std::printf("%-12s | %-47s | %-52s | %9s\n", "", "cold: the first (compile cache empty)",
              "warm: median of the n later ones (compile cache hit)", "warm");
  std::printf("%-12s | %7s %7s %7s %7s %7s %7s | %4s %7s %7s %7s %7s %7s %7s | %9s\n", "problem",
              "wall", "compile", "correct", "timing", "queue", "total", "n", "wall", "compile",
              "correct", "timing", "queue", "total", "evals/min");
  std::vector<Summary> summaries;
  int failures = 0;
  for (const ProblemResult& r : results) {
    summaries.push_back(Summarize(r));
    const Summary& s = summaries.back();
    // Out of time is the budget's doing; anything else (an unknown id) is an error.
    failures += FailuresOf(r, s);
    if (!r.skipped.empty() || !s.cold) {
      std::printf("%-12s skipped: %s\n", r.id.c_str(), r.skipped.c_str());
      continue;
    }
    const auto& cold = s.cold->stages.seconds;
    std::printf("%-12s | %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f | ", r.id.c_str(),
                s.cold->wall_seconds, Stage(cold, "compile"), Stage(cold, "correctness"),
                Stage(cold, "timing"), Stage(cold, "queue_wait"), Stage(cold, "total"));
    if (s.warm_count == 0) {
      std::printf("%4d %-47s | %9s\n", 0, "(no warm evaluation: --repeats 1 or out of time)", "-");
      continue;
    }
    const auto& warm = s.warm_median_stage_seconds;
    std::printf("%4d %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f | %9.1f\n", s.warm_count,
                s.warm_median_wall_seconds, Stage(warm, "compile"), Stage(warm, "correctness"),
                Stage(warm, "timing"), Stage(warm, "queue_wait"), Stage(warm, "total"),
                s.evaluations_per_minute);
  }

  std::printf(
      "\nSelf-speedup: the reference judged against itself (true value 1.00); target on "
      "a GPU: every one within 1.00 +/- %.2f%s\n",
      kSelfSpeedupTolerance, emulated ? " (emulation figures below)" : "");
  std::printf("%-12s %4s %7s %7s %7s %9s %6s  %s\n", "problem", "n", "min", "median", "max",
              "within", "target", "speedups");
  for (size_t i = 0; i < results.size(); ++i) {
    const ProblemResult& r = results[i];
    const Summary& s = summaries[i];
    if (!r.skipped.empty() || s.speedups.empty()) {
      std::printf("%-12s %4d  no speedup measured%s\n", r.id.c_str(), 0,
                  r.skipped.empty() ? "" : (" (" + r.skipped + ")").c_str());
      continue;
    }
    std::vector<std::string> each;
    for (double v : s.speedups) each.push_back(Fixed(v, 3));
    const std::string target =
        emulated ? "n/a" : (s.fraction_within_tolerance == 1.0 ? "met" : "MISSED");
    std::printf("%-12s %4zu %7.3f %7.3f %7.3f %8.0f%% %6s  %s%s\n", r.id.c_str(), s.speedups.size(),
                s.speedup_min, s.speedup_median, s.speedup_max, 100 * s.fraction_within_tolerance,
                target.c_str(), absl::StrJoin(each, " ").c_str(),
                r.budget_cut ? " (cut by --max-seconds)" : "");
  }
  if (failures > 0) {
    std::printf(
        "\n%d failure(s): evaluations that did not pass or problems that could not run "
        "(see above)\n",
        failures);
  }

  if (!write_json(/*complete=*/true)) {
    std::fprintf(stderr, "bench_eval: could not write %s\n", options.json_path.c_str());
    return 2;
  }
  return failures > 0 ? 1 : 0;
}

}  // namespace
}  // namespace kerneleval::bench

int main(int argc, char** argv) { return kerneleval::bench::Main(argc, argv); }
