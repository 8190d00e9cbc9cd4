// One evaluation, step by step: prepare (compile + plan), correctness,
// timing, verdict. The engine (engine.cc) schedules these steps; groups share
// the reference's work. Every failure of the submission becomes a Verdict;
// absl::Status errors are for what could not be judged at all.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "evaluator/compile/compile_service.h"
#include "evaluator/engine/backend.h"
#include "evaluator/engine/engine.h"
#include "evaluator/plan/signature.h"
#include "kerneleval/internal/worker.pb.h"
#include "kerneleval/v1/kerneleval.pb.h"
#include "rubric/rubric.h"

namespace kerneleval::engine {

// A program ready to run: NVRTC's output, its plan and kernel signatures.
struct PreparedProgram {
  internal::Program program;
  v1::LaunchPlan plan;
  plan::ParsedSource parsed;  // kernel signatures and integer constants
};

// Either a prepared program or the verdict that ends the evaluation early
// (stage "compile": compiler errors, a forbidden option, a bad plan).
struct Preparation {
  std::optional<PreparedProgram> program;
  std::optional<v1::Verdict> verdict;
};

// Reference work shared by every candidate of a request or group.
struct ReferenceRun {
  PreparedProgram program;
  std::vector<internal::Case> cases;  // correctness cases with the reference's plan
  internal::RunResult result;         // its outputs per case
  double seconds = 0;                 // [s] wall time of its correctness run (one backend call)
  double buffer_bytes = 0;            // [bytes] of every buffer of every case (BufferBytes)
};

// The timing request's sampling settings on `backend` ("cpu": fewer, shorter
// samples of a small shape; else the defaults, DefaultTimingConfig).
internal::TimingConfig TimingConfigFor(std::string_view backend);

// [s] The shortest time limit a backend call gets: the floor under a call
// made at its deadline, and the least a request's limits.timeout_seconds may
// set.
inline constexpr double kShortestRunLimitSeconds = 0.05;

struct EvaluationSettings {
  rubric::RewardConfig reward;
  v1::RewardSettings reward_settings;  // as applied, for the verdict
  uint64_t seed = 0;
  bool seed_fixed = false;
  // The problem came in the request, not from the server's registry: its
  // verdicts carry the flag "custom_problem".
  bool custom_problem = false;
  bool skip_timing = false;
  // EngineOptions::reward_emulated_speed.
  bool reward_emulated_speed = true;
  // EngineOptions::cpu_host_build_checks.
  bool cpu_host_build_checks = true;
  double run_timeout_seconds = 20;
  // run_timeout_seconds is the request's limits.timeout_seconds: a
  // reference that cannot finish within it is the request's bad input.
  bool run_timeout_from_request = false;
  // A candidate's correctness run may take at most this many times the
  // reference's on the same cases (ReferenceRun.seconds; times how many
  // more buffer bytes the candidate's plan has, scratch included), and
  // never less than the floor, within run_timeout_seconds: a kernel that hangs holds
  // its device that long, not the whole limit (a group of 64 that hang held
  // it 64 x 20 s). 0: the limit alone.
  double candidate_run_factor = 25;
  double candidate_run_floor_seconds = 5;
  // > 0: a group of this many candidates whose request set its own run
  // limit, too long to give each in full: the most one request may set (10 x
  // the server's limit) is shared between them as the floor above, with the
  // server's candidate_run_factor (EngineImpl::Admit). Named in timeouts.
  size_t own_limit_shared_by = 0;
  // > 0: the most a candidate's correctness run may take [s] (a shared own
  // limit when the server's candidate_run_factor is 0).
  double candidate_run_cap_seconds = 0;
  // limits.memory_bytes: the most a candidate's plan may allocate for one
  // case (its buffers: inputs, outputs, scratch) [bytes]; more is a
  // "runtime" verdict before anything runs. 0: the backend's own limits.
  uint64_t memory_bytes = 0;
  // limits.timing_budget_seconds: lowers the cap on sampling of a timing
  // request [s] (the backend's: 5 s on a GPU, 1.5 s on the CPU backend; a
  // larger value leaves it). The stopping rule ends sampling there, on
  // however few samples.
  double timing_budget_seconds = 0;
  std::string arch;  // NVRTC target
  // The caller's deadline: no backend call outlasts it (a worker is not held
  // for a caller that has gone), and a run it cut short is an error, not a
  // "timeout" verdict (which the engine would keep for identical requests).
  absl::Time deadline = absl::InfiniteFuture();
  // A group's candidates' correctness runs end by this (and by `deadline`):
  // what is left before `deadline` is for timing those that passed, so that
  // a group whose hanging kernels take its time still answers with its
  // correct ones timed (EngineImpl::EvaluateGroupAsync).
  absl::Time correctness_deadline = absl::InfiniteFuture();
  // A group's builds for its runs in the compile stage (PrepareRuns) end by
  // this: half its correctness time, so that a build that takes its whole
  // limit (a source made to compile slowly) leaves the others their runs
  // (the job starts once every build ended; one cut here is made again in
  // its first run, within its share, as before).
  absl::Time build_deadline = absl::InfiniteFuture();
};

class Evaluation {
 public:
  Evaluation(const v1::Problem& problem, Backend& backend, compile::CompileService& compiler,
             EvaluationSettings settings);

  // Compiles and parses the reference (a failure here is the problem's bug:
  // an INTERNAL / INVALID_ARGUMENT error, not a verdict).
  absl::StatusOr<PreparedProgram> PrepareReference(const CallContext& context);

  // Compiles the submission and parses its plan.
  absl::StatusOr<Preparation> PrepareCandidate(const v1::Submission& submission, std::string label,
                                               const CallContext& context);

  // The backend's work on a prepared program before its runs
  // (Backend::Prepare: the CPU backend builds its host objects), with the
  // plans its correctness run and its timing will use. Best effort: the
  // runs do what it could not. Ends by the settings' deadlines (a group's
  // build_deadline).
  absl::StatusOr<PrepareReport> PrepareRuns(const PreparedProgram& program);

  // Runs the reference on every correctness case (fresh inputs per trial).
  absl::StatusOr<ReferenceRun> RunReference(PreparedProgram reference);

  // Runs the candidate on the same cases and compares every output. Returns
  // nullopt when it passed (report in *report), or the failing verdict.
  // `run_deadline`: this run ends by it too (a group's share of its time for
  // one candidate); a run it cut is DEADLINE_EXCEEDED, as one the
  // settings' deadlines cut.
  absl::StatusOr<std::optional<v1::Verdict>> CheckCorrectness(
      const ReferenceRun& reference, const PreparedProgram& candidate,
      v1::CorrectnessReport* report, absl::Time run_deadline = absl::InfiniteFuture());

  // Times the reference and every candidate interleaved on the timed shape,
  // checks the outputs of the timed runs, and fills one verdict per candidate
  // (verdicts[i] must already carry candidate i's compile and correctness).
  // A candidate that faults while timing ends the backend's run for every
  // program: it gets its verdict, and the others are timed again without it.
  // On a GPU, where the programs of a run share one context, what one of
  // them may have done to another is settled by timing alone: a candidate
  // that faulted or failed a timed check beside others is timed again alone
  // with the reference, and that run decides its verdict; when the reference
  // faults or its inputs change beside several candidates, each is timed
  // again alone with it; beside one, that candidate is held responsible
  // (for a fault, once the reference timed alone is seen not to fault).
  absl::Status TimeAndScore(const ReferenceRun& reference,
                            std::vector<const PreparedProgram*> candidates,
                            std::vector<v1::Verdict*> verdicts, v1::TimingStats* reference_stats);

  // Finishes a verdict: reward from the rubric, settings, device, seed.
  void Finish(v1::Verdict* verdict) const;

  // A verdict for a submission that failed at `stage` with `error`.
  v1::Verdict Failed(std::string_view stage, std::string error) const;

  const v1::Problem& problem() const { return problem_; }
  Backend& backend() { return backend_; }

 private:
  // A reference that could not finish within the run limit: INVALID_ARGUMENT
  // when the request set the limit, FAILED_PRECONDITION when the server did.
  absl::Status LimitTooShort(absl::string_view message) const;
  // A reference that cannot run on this backend (its buffers too large, or a
  // custom problem's reference failing): INVALID_ARGUMENT for a custom
  // problem, FAILED_PRECONDITION for a built-in one; never a retryable code.
  absl::Status ReferenceCannotRun(absl::string_view message) const;
  // What one backend run of TimeAndScore leaves to do.
  struct TimingRun {
    enum class Next {
      kDone,       // every verdict is filled
      kWithout,    // candidate `without` faulted (its verdict filled): the rest again
      kEachAlone,  // the reference faulted: each candidate again, alone with it
    };
    Next next = Next::kDone;
    size_t without = 0;
    // Candidates (indices of this run) that failed in a way another program
    // of the run could have caused (programs share a GPU context): each is
    // timed again alone with the reference, and that run decides.
    std::vector<size_t> confirm_alone = {};
  };
  absl::StatusOr<TimingRun> TimeAndScoreOnce(const ReferenceRun& reference,
                                             const std::vector<const PreparedProgram*>& candidates,
                                             const std::vector<v1::Verdict*>& verdicts,
                                             v1::TimingStats* reference_stats);
  // [s] A backend call's limit: `limit`, or what is left of the caller's
  // deadline when that is less.
  // `limit` [s], cut to what is left before `deadline`.
  double WithinDeadline(double limit, absl::Time deadline) const;
  // Sets a backend request's time limit, WithinDeadline(limit, deadline), and
  // the deadline the whole call ends by (call_deadline_unix_seconds; never
  // before that limit's end). Returns the limit set [s].
  template <typename Request>
  double LimitCall(double limit, absl::Time deadline, Request* request) const {
    const double timeout = WithinDeadline(limit, deadline);
    request->set_timeout_seconds(timeout);
    if (deadline != absl::InfiniteFuture()) {
      const absl::Time end = std::max(deadline, absl::Now() + absl::Seconds(timeout));
      request->set_call_deadline_unix_seconds(absl::ToDoubleSeconds(end - absl::UnixEpoch()));
    }
    return timeout;
  }
  // [s] The limit of a candidate's correctness run on `cases`
  // (candidate_run_factor), scaled up by how many more buffer bytes its
  // cases have than the reference's: the worker fills and checks them all.
  double CandidateRunLimit(const ReferenceRun& reference,
                           const std::vector<internal::Case>& cases) const;
  // DEADLINE_EXCEEDED when `failure` is a timeout of a call whose limit
  // `deadline` cut below `limit` (WithinDeadline gave `timeout`) and that
  // deadline has come: the kernel might have finished in time; OK otherwise
  // (a timeout before the deadline is the kernel's: a CPU worker's bound on
  // one timed sample was read as the deadline, rt8 #1).
  absl::Status CutShortByDeadline(const internal::RunFailure& failure, double timeout, double limit,
                                  absl::Time deadline) const;
  absl::StatusOr<std::vector<internal::Case>> BuildCases(const PreparedProgram& program,
                                                         const std::vector<internal::Case>& base);
  absl::StatusOr<internal::ResolvedPlan> Resolve(const PreparedProgram& program,
                                                 const v1::ShapeBinding& shape);
  const v1::ShapeBinding& TimedShape() const;
  // Whether the correctness run has one case at the CPU timed shape besides
  // the correctness shapes (shape index correctness_shapes_size()): the CPU
  // backend times on its plain build, whose threads never interleave, so a
  // race taken only at the timed shape (a plain shared-memory `+= 1` where
  // N is the timed size) came out right in every checked timed run and
  // passed, ~10% faster than its twin with atomics (session 32). Checked
  // once there on the correctness runs' build, it loses updates as on a GPU.
  bool ChecksTimedShape() const;
  // The shape of a case's shape_index: a correctness shape, else the timed
  // shape where ChecksTimedShape(); nullptr for any other index.
  const v1::ShapeBinding* CaseShape(uint32_t shape_index) const;
  // The shape indices of the correctness run's cases: [0, CaseShapeCount()),
  // the timed shape's at TimedCaseShapeIndex() where ChecksTimedShape().
  uint32_t CaseShapeCount() const;
  uint32_t TimedCaseShapeIndex() const;
  // Whether the programs of one timing run share a memory space: the CUDA
  // backend times them in one context; the CPU backend gives each its own
  // process.
  bool ProgramsShareAContext() const { return backend_.name() == "cuda"; }

  const v1::Problem& problem_;
  Backend& backend_;
  compile::CompileService& compiler_;
  EvaluationSettings settings_;
};

// Seeds derived from the request's seed: one per (shape, trial), one per
// timing input set. SplitMix64 mixing, so neighbouring seeds are unrelated.
uint64_t DeriveSeed(uint64_t seed, uint64_t a, uint64_t b);

}  // namespace kerneleval::engine
