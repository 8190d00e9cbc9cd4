#include "evaluator/engine/evaluation.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "evaluator/data/compare.h"
#include "evaluator/data/dtype.h"
#include "evaluator/data/splitmix64.h"
#include "evaluator/plan/binding.h"
#include "evaluator/plan/directives.h"
#include "evaluator/problems/describe.h"
#include "evaluator/problems/problems.h"
#include "evaluator/timing/sampling.h"
#include "gpu_peaks/roofline.h"

namespace kerneleval::engine {
namespace {

// A backend call's worker died under it (killed by a signal, or exited):
// WorkerProcess::DiedError's "worker ..." UNAVAILABLE, not a worker that
// could not start.
bool WorkerDied(const absl::Status& status) {
  return absl::IsUnavailable(status) && absl::StartsWith(status.message(), "worker ");
}

// [bytes] What the CUDA backend packs for an argument (evaluator/cuda/launch.cc).
uint32_t PackedArgumentBytes(const internal::KernelArg& arg) {
  return arg.has_buffer() ? uint32_t{8} : arg.size_bytes();
}

// "8, 8, 4": the sizes of `items` (compiled parameters, packed arguments)
// as `size_of` gives them; "no" for none.
template <class Items, class SizeOf>
std::string JoinedSizes(const Items& items, SizeOf size_of) {
  if (items.empty()) return "no";
  return absl::StrJoin(items, ", ", [&](std::string* out, const auto& item) {
    absl::StrAppend(out, size_of(item));
  });
}

// Whether `launch`'s arguments fill `kernel`'s compiled parameters one for
// one, size for size. A kernel whose layout is unknown (no parameters
// reported, or a size of 0) is taken as it is.
bool ParameterLayoutMatches(const v1::KernelInfo& kernel, const internal::ResolvedLaunch& launch) {
  if (kernel.params().empty()) return true;
  if (kernel.params_size() != launch.args_size()) return false;
  for (int i = 0; i < launch.args_size(); ++i) {
    const uint32_t compiled = kernel.params(i).size_bytes();
    if (compiled != 0 && compiled != PackedArgumentBytes(launch.args(i))) return false;
  }
  return true;
}

// Failing checks kept in a verdict beyond the first: enough to see a pattern.
constexpr int kMaxFailingChecksReported = 4;
// A speedup above this is flagged for a human to look at.
constexpr double kSuspiciousSpeedup = 10.0;
// A time below this fraction of the roofline minimum is physically impossible.
constexpr double kRooflineFloorFactor = 0.9;

plan::ParamMap ParamsOf(const v1::ShapeBinding& shape) {
  plan::ParamMap params;
  for (const auto& [name, value] : shape.values()) params[name] = value;
  return params;
}

std::string ShapeText(const google::protobuf::Map<std::string, int64_t>& params) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : params) parts.push_back(absl::StrCat(name, "=", value));
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, ", ");
}

// "line 3: ..." for plan errors, as the issue asks: a bad plan is a compile verdict.
std::string PlanError(const absl::Status& status) { return std::string(status.message()); }

}  // namespace

uint64_t DeriveSeed(uint64_t seed, uint64_t a, uint64_t b) {
  auto mix = [](uint64_t z) { return data::SplitMix64Next(z); };
  return mix(mix(mix(seed) ^ a) ^ (b * 0x2545F4914F6CDD1DULL));
}

Evaluation::Evaluation(const v1::Problem& problem, Backend& backend,
                       compile::CompileService& compiler, EvaluationSettings settings)
    : problem_(problem), backend_(backend), compiler_(compiler), settings_(std::move(settings)) {}

double Evaluation::WithinDeadline(double limit, absl::Time deadline) const {
  const double left = absl::ToDoubleSeconds(deadline - absl::Now());
  // A floor so that a call made right at the deadline still gets an answer.
  return std::max(kShortestRunLimitSeconds, std::min(limit, left));
}

namespace {

// [bytes] Every buffer of a resolved plan: inputs, outputs, scratch.
uint64_t PlanBufferBytes(const internal::ResolvedPlan& plan) {
  uint64_t bytes = 0;
  for (const internal::BufferSpec& buffer : plan.buffers()) {
    bytes += buffer.elements() * data::DTypeSize(buffer.dtype());
  }
  return bytes;
}

// [bytes] Every buffer of every case: what a worker fills before and checks
// after a correctness run.
double BufferBytes(const std::vector<internal::Case>& cases) {
  double bytes = 0;
  for (const internal::Case& c : cases) bytes += static_cast<double>(PlanBufferBytes(c.plan()));
  return bytes;
}

}  // namespace

double Evaluation::CandidateRunLimit(const ReferenceRun& reference,
                                     const std::vector<internal::Case>& cases) const {
  const double limit =
      settings_.candidate_run_cap_seconds > 0
          ? std::min(settings_.run_timeout_seconds, settings_.candidate_run_cap_seconds)
          : settings_.run_timeout_seconds;
  if (settings_.candidate_run_factor <= 0 || reference.seconds <= 0) return limit;
  const double more_bytes =
      reference.buffer_bytes > 0 ? std::max(1.0, BufferBytes(cases) / reference.buffer_bytes) : 1.0;
  return std::min(limit, std::max(settings_.candidate_run_floor_seconds,
                                  settings_.candidate_run_factor * reference.seconds * more_bytes));
}

absl::Status Evaluation::CutShortByDeadline(const internal::RunFailure& failure, double timeout,
                                            double limit, absl::Time deadline) const {
  // A worker answers a moment after the limit it was given ends.
  constexpr absl::Duration kSlack = absl::Milliseconds(100);
  if (failure.stage() != "timeout" || timeout >= limit || absl::Now() + kSlack < deadline) {
    return absl::OkStatus();
  }
  return absl::DeadlineExceededError(absl::StrCat("the deadline came while a kernel ran (",
                                                  absl::SixDigits(timeout), " s of the ",
                                                  absl::SixDigits(limit), " s limit were left)"));
}

v1::Verdict Evaluation::Failed(std::string_view stage, std::string error) const {
  v1::Verdict verdict;
  verdict.set_correct(false);
  verdict.set_stage(std::string(stage));
  verdict.set_error(std::move(error));
  return verdict;
}

absl::StatusOr<PreparedProgram> Evaluation::PrepareReference(const CallContext& context) {
  v1::Submission reference;
  reference.set_source(problem_.reference_source());
  *reference.mutable_launch_plan() = problem_.reference_plan();
  for (const auto& option : problem_.reference_compile_options()) {
    reference.mutable_compile_options()->add_options(option);
  }
  absl::StatusOr<Preparation> prepared = PrepareCandidate(reference, "reference", context);
  if (!prepared.ok()) return prepared.status();
  if (prepared->verdict) {
    const std::string message = absl::StrCat("the reference of problem ", problem_.id(),
                                             " does not build: ", prepared->verdict->error(), "\n",
                                             prepared->verdict->compile().log());
    // A custom problem's reference is the caller's (it was INTERNAL, "a
    // bug", CLI exit 3; rt7 #4).
    if (settings_.custom_problem) return ReferenceCannotRun(message);
    return absl::InternalError(message);
  }
  return std::move(*prepared->program);
}

absl::StatusOr<Preparation> Evaluation::PrepareCandidate(const v1::Submission& submission,
                                                         std::string label,
                                                         const CallContext& context) {
  Preparation preparation;
  // The launch plan, read before compiling: NVRTC instantiates the template
  // kernels it names (`scale<float, 4><<<...`). Its errors are reported
  // after the compiler's.
  absl::StatusOr<v1::LaunchPlan> plan =
      submission.launch_plan().launches().empty()
          ? plan::ParseDirectives(submission.source())
          : absl::StatusOr<v1::LaunchPlan>(submission.launch_plan());
  compile::CompileJob job;
  job.source = submission.source();
  *job.options.mutable_options() = submission.compile_options().options();
  *job.options.mutable_name_expressions() = submission.compile_options().name_expressions();
  if (plan.ok()) {
    for (std::string& instance : plan::LaunchedTemplateInstances(*plan)) {
      const auto& known = job.options.name_expressions();
      if (std::find(known.begin(), known.end(), instance) == known.end()) {
        job.options.add_name_expressions(std::move(instance));
      }
    }
  }
  job.options.set_arch(submission.compile_options().arch().empty()
                           ? settings_.arch
                           : submission.compile_options().arch());
  // The CUDA worker loads the CUBIN where the device runs it and JIT-compiles
  // the PTX otherwise: a submission's compute_XX (no CUBIN at all), a CUBIN
  // the driver refuses. PTX is text of the order of the CUBIN's size, held
  // per program for the request only; the compile cache keeps both anyway,
  // and Finish drops both from verdicts.
  job.want_cubin = backend_.name() == "cuda";
  job.want_ptx = backend_.name() == "cuda";
  // The CPU backend's host build must see the source as NVRTC's preprocessor
  // did (a red team's `#ifdef __CUDACC_VER_MAJOR__` gave the GPU zeros).
  job.want_host_build_probe = backend_.name() == "cpu" && settings_.cpu_host_build_checks;
  absl::StatusOr<v1::CompileResult> compiled = compiler_.Compile(job);
  if (!compiled.ok()) {
    // Bad input to the compiler (oversize, forbidden option) is the
    // submission's fault: a compile verdict. Infrastructure errors propagate.
    if (absl::IsInvalidArgument(compiled.status())) {
      preparation.verdict = Failed("compile", std::string(compiled.status().message()));
      return preparation;
    }
    return compiled.status();
  }
  if (!compiled->success()) {
    v1::Verdict verdict = Failed("compile", "compilation failed");
    if (!compiled->diagnostics().empty()) {
      for (const auto& d : compiled->diagnostics()) {
        if (d.severity() == "error") {
          // Line 0: not about a line of the source (an option NVRTC refused).
          verdict.set_error(d.line() > 0 ? absl::StrCat("line ", d.line(), ": ", d.message())
                                         : d.message());
          break;
        }
      }
    }
    // NVRTC suggests options a submission cannot have: say what to do.
    if (absl::StrContains(compiled->log(), "--extended-lambda")) {
      absl::StrAppend(verdict.mutable_error(),
                      " (--extended-lambda is not an option here: a plain [] lambda defined in "
                      "device code is callable there, or use a __device__ functor)");
    } else if (absl::StrContains(compiled->log(), "-default-device")) {
      absl::StrAppend(verdict.mutable_error(),
                      " (-default-device is not an option here: a submission is device code "
                      "only, so mark helper functions __device__; no host code, main() or CUDA "
                      "runtime calls, the launch plan replaces host launches)");
    } else if (absl::StrContains(verdict.error(), "cannot open source file \"")) {
      // `#include <vector>`, <iostream> or <torch/extension.h>: kernels
      // written as a PyTorch extension or a host program (sweep 3, M4).
      absl::StrAppend(verdict.mutable_error(),
                      " (a submission is device code compiled by NVRTC, which has the CUDA "
                      "headers, <cuda/std/...>, <cub/...> and C++ headers usable in device code "
                      "such as <cmath>, <cstdint>, <type_traits> and <limits>, but no host "
                      "library: drop host includes, host wrappers, main() and PyTorch bindings; "
                      "the harness allocates the buffers and launches the kernels of the "
                      "// @launch lines)");
    }
    // `k<COLS><<<...` names a problem parameter, whose value the C++ of a
    // template argument cannot know: say so beside NVRTC's "undefined".
    if (plan.ok()) {
      std::set<std::string> argument_names;  // identifiers in template arguments
      for (const std::string& instance : plan::LaunchedTemplateInstances(*plan)) {
        for (absl::string_view word :
             absl::StrSplit(absl::string_view(instance).substr(instance.find('<')),
                            absl::ByAnyChar(" <>,()*+-&/%:"), absl::SkipEmpty())) {
          argument_names.emplace(word);
        }
      }
      for (const auto& parameter : problem_.parameters()) {
        if (argument_names.count(parameter.name()) > 0) {
          absl::StrAppend(verdict.mutable_error(), " (template arguments are compile-time C++, ",
                          "not plan expressions: pass ", parameter.name(),
                          " as a kernel argument, or instantiate for constants of your own)");
          break;
        }
      }
    }
    *verdict.mutable_compile() = *std::move(compiled);
    preparation.verdict = std::move(verdict);
    return preparation;
  }

  PreparedProgram program;
  program.program.set_label(label);
  program.program.set_source(submission.source());
  for (const auto& option : submission.compile_options().options()) {
    if (option.rfind("-D", 0) == 0) program.program.add_defines(option);
  }
  *program.program.mutable_compiled() = *std::move(compiled);

  auto fail_plan = [&](std::string error) {
    v1::Verdict verdict = Failed("compile", std::move(error));
    *verdict.mutable_compile() = program.program.compiled();
    verdict.mutable_compile()->clear_cubin();
    verdict.mutable_compile()->clear_ptx();
    verdict.mutable_compile()->clear_host_build_probe();
    preparation.verdict = std::move(verdict);
    return preparation;
  };

  if (!plan.ok()) return fail_plan(PlanError(plan.status()));
  program.plan = *std::move(plan);
  if (program.plan.launches().empty()) {
    // The first launch of the example, in this problem's own names.
    std::string example = "// @launch my_kernel<<<ceil_div(N, 256), 256>>>(x, y, N)";
    for (absl::string_view line :
         absl::StrSplit(problems::Describe(problem_).example_launch, '\n')) {
      if (absl::StrContains(line, "@launch")) {
        example = std::string(absl::StripAsciiWhitespace(line));
        break;
      }
    }
    return fail_plan(absl::StrCat("no launch plan: add a line such as `", example,
                                  "` to the source (see `kerneleval problems show ", problem_.id(),
                                  "`)"));
  }
  absl::StatusOr<plan::ParsedSource> parsed = plan::ParseSource(submission.source());
  if (!parsed.ok()) return fail_plan(PlanError(parsed.status()));
  program.parsed = *std::move(parsed);
  // Each instantiated template kernel is bound as the kernel NVRTC compiled:
  // its parameter types are the instance's (`const T*` is `float const*`).
  for (const v1::KernelInfo& kernel : program.program.compiled().kernels()) {
    if (kernel.name_expression().empty()) continue;
    absl::StatusOr<plan::KernelSignature> instance =
        plan::SignatureOfInstance(kernel.name_expression(), kernel);
    if (!instance.ok()) return fail_plan(PlanError(instance.status()));
    program.parsed.kernels.push_back(*std::move(instance));
  }
  // A block must fit the register file with the registers NVRTC gave each
  // thread: on the CPU backend nothing else checks it (a GPU refuses the
  // launch; sweep 6, 1024 threads of a 128-register kernel passed here).
  plan::ApplyRegisterLimits(program.program.compiled().kernels(), program.parsed.kernels);

  // The plan must be resolvable on every shape before anything runs; the
  // timed shape too (a plan that only works on small shapes fails here).
  std::vector<const v1::ShapeBinding*> shapes;
  for (const auto& shape : problem_.correctness_shapes()) shapes.push_back(&shape);
  if (!settings_.skip_timing) shapes.push_back(&TimedShape());
  // The CPU backend times a smaller shape than a GPU: the plan must also be
  // valid (grid and block within a GPU's limits) on the shape a GPU times,
  // which this backend does not run (sweep 6: a grid.y of 65536 there
  // passed). Only checked, not run: no memory limit applies.
  const v1::ShapeBinding* gpu_timed_shape = nullptr;
  if (!settings_.skip_timing && &TimedShape() != &problem_.timed_shape() &&
      !problem_.timed_shape().values().empty()) {
    gpu_timed_shape = &problem_.timed_shape();
    shapes.push_back(gpu_timed_shape);
  }
  for (const v1::ShapeBinding* shape : shapes) {
    const std::string shape_name =
        shape->label().empty() ? ShapeText(shape->values()) : shape->label();
    absl::StatusOr<internal::ResolvedPlan> resolved = Resolve(program, *shape);
    if (!resolved.ok()) {
      return fail_plan(absl::StrCat(PlanError(resolved.status()), " (shape ", shape_name,
                                    shape == gpu_timed_shape
                                        ? ", the one a GPU times; this backend runs smaller ones)"
                                        : ")"));
    }
    if (settings_.memory_bytes > 0 && shape != gpu_timed_shape) {
      const uint64_t bytes = PlanBufferBytes(*resolved);
      if (bytes > settings_.memory_bytes) {
        v1::Verdict verdict =
            Failed("runtime", absl::StrCat("the plan's buffers take ", bytes, " bytes on shape ",
                                           shape_name, ", more than the request's limit of ",
                                           settings_.memory_bytes, " bytes (limits.memory_bytes)"));
        *verdict.mutable_compile() = program.program.compiled();
        verdict.mutable_compile()->clear_cubin();
        verdict.mutable_compile()->clear_ptx();
        verdict.mutable_compile()->clear_host_build_probe();
        preparation.verdict = std::move(verdict);
        return preparation;
      }
    }
  }
  if (context.on_event) {
    v1::EvaluateEvent event;
    v1::CompileResult* summary = event.mutable_compiled()->mutable_compile();
    *summary = program.program.compiled();
    summary->clear_cubin();
    summary->clear_ptx();
    summary->clear_host_build_probe();
    if (label != "reference") context.on_event(event);
  }
  preparation.program = std::move(program);
  return preparation;
}

absl::StatusOr<PrepareReport> Evaluation::PrepareRuns(const PreparedProgram& program) {
  // The kernels a run loads are those of its cases' plans: one case per
  // shape names them all (trials differ in their inputs alone).
  internal::RunRequest run;
  *run.mutable_program() = program.program;
  for (uint32_t s = 0; s < CaseShapeCount(); ++s) {
    absl::StatusOr<internal::ResolvedPlan> plan = Resolve(program, *CaseShape(s));
    if (!plan.ok()) return plan.status();  // checked in PrepareCandidate already
    internal::Case* c = run.add_cases();
    c->set_label(absl::StrCat("shape", s));
    c->set_shape_index(s);
    *c->mutable_plan() = *std::move(plan);
  }
  internal::TimingRequest timing;
  if (!settings_.skip_timing) {
    absl::StatusOr<internal::ResolvedPlan> plan = Resolve(program, TimedShape());
    if (!plan.ok()) return plan.status();
    internal::TimedProgram* timed = timing.add_programs();
    *timed->mutable_program() = program.program;
    *timed->mutable_plan() = *std::move(plan);
  }
  return backend_.Prepare(
      run, timing,
      std::min({settings_.deadline, settings_.correctness_deadline, settings_.build_deadline}));
}

absl::StatusOr<internal::ResolvedPlan> Evaluation::Resolve(const PreparedProgram& program,
                                                           const v1::ShapeBinding& shape) {
  plan::PlanLimits limits;
  absl::StatusOr<internal::ResolvedPlan> resolved =
      plan::ResolvePlan(program.plan, problem_, ParamsOf(shape), program.parsed, limits);
  if (!resolved.ok()) return resolved.status();
  problems::ApplyInputDistributions(shape, &*resolved);
  // The symbol to load: NVRTC's mangled name for the kernel the plan names,
  // whose compiled parameter layout (CUBIN, else PTX) must be the one the
  // arguments are packed for. The plan is bound to the signature the source
  // parser saw, and the driver takes each parameter's size from the image:
  // with a kernel declared where the parser does not look (through a macro),
  // one argument too few had cuLaunchKernel read past the argument array,
  // and a parameter larger than its argument copied worker memory (secret
  // keys among it) into the kernel's parameters.
  for (int l = 0; l < resolved->launches_size(); ++l) {
    internal::ResolvedLaunch& launch = *resolved->mutable_launches(l);
    launch.set_symbol(launch.kernel());
    const v1::KernelInfo* mismatched = nullptr;
    for (const auto& kernel : program.program.compiled().kernels()) {
      const std::string& name = kernel.name();
      if (name == launch.kernel() ||
          (!kernel.name_expression().empty() && kernel.name_expression() == launch.kernel()) ||
          (name.size() > launch.kernel().size() &&
           name.compare(0, launch.kernel().size(), launch.kernel()) == 0 &&
           name[launch.kernel().size()] == '(')) {
        if (!ParameterLayoutMatches(kernel, launch)) {
          mismatched = &kernel;
          continue;  // an overload may match
        }
        launch.set_symbol(kernel.mangled_name().empty() ? name : kernel.mangled_name());
        mismatched = nullptr;
        break;
      }
    }
    if (mismatched != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("launch ", l + 1, " (", launch.kernel(), "): the compiled kernel takes ",
                       mismatched->params_size(), " parameters of ",
                       JoinedSizes(mismatched->params(),
                                   [](const v1::KernelParam& param) { return param.size_bytes(); }),
                       " bytes, the plan passes ", launch.args_size(), " of ",
                       JoinedSizes(launch.args(), PackedArgumentBytes),
                       " (is the kernel declared where the source's signature is not?)"));
    }
  }
  return resolved;
}

const v1::ShapeBinding& Evaluation::TimedShape() const {
  if (backend_.name() == "cpu") {
    if (!problem_.cpu_timed_shape().values().empty()) return problem_.cpu_timed_shape();
    if (!problem_.correctness_shapes().empty()) return problem_.correctness_shapes(0);
  }
  return problem_.timed_shape();
}

bool Evaluation::ChecksTimedShape() const {
  return backend_.name() == "cpu" && !settings_.skip_timing &&
         !problem_.cpu_timed_shape().values().empty();
}

uint32_t Evaluation::TimedCaseShapeIndex() const {
  return static_cast<uint32_t>(problem_.correctness_shapes_size());
}

uint32_t Evaluation::CaseShapeCount() const {
  return TimedCaseShapeIndex() + (ChecksTimedShape() ? 1 : 0);
}

const v1::ShapeBinding* Evaluation::CaseShape(uint32_t shape_index) const {
  if (shape_index < TimedCaseShapeIndex()) {
    return &problem_.correctness_shapes(static_cast<int>(shape_index));
  }
  if (shape_index == TimedCaseShapeIndex() && ChecksTimedShape()) return &TimedShape();
  return nullptr;
}

absl::StatusOr<std::vector<internal::Case>> Evaluation::BuildCases(
    const PreparedProgram& program, const std::vector<internal::Case>& base) {
  std::vector<internal::Case> cases = base;
  for (auto& c : cases) {
    // The case's shape, for its input distributions too (a binding of the
    // values alone dropped them).
    const v1::ShapeBinding* shape = CaseShape(c.shape_index());
    if (shape == nullptr) {
      return absl::InternalError(absl::StrCat("case ", c.label(), ": no shape ", c.shape_index()));
    }
    absl::StatusOr<internal::ResolvedPlan> resolved = Resolve(program, *shape);
    if (!resolved.ok()) return resolved.status();
    *c.mutable_plan() = *std::move(resolved);
  }
  return cases;
}

absl::Status Evaluation::LimitTooShort(absl::string_view message) const {
  // The request's own limit: its bad input (INVALID_ARGUMENT, CLI exit 2);
  // the server's: how the server is set up.
  if (settings_.run_timeout_from_request) {
    return absl::InvalidArgumentError(absl::StrCat("limits.timeout_seconds: ", message));
  }
  return absl::FailedPreconditionError(message);
}

absl::Status Evaluation::ReferenceCannotRun(absl::string_view message) const {
  // A custom problem's reference and shapes are the caller's: a permanent
  // error of its request (RESOURCE_EXHAUSTED, which clients retry, would
  // come back every time). A built-in problem's: how the server is set up.
  if (settings_.custom_problem)
    return absl::InvalidArgumentError(absl::StrCat("problem: ", message));
  return absl::FailedPreconditionError(message);
}

absl::StatusOr<ReferenceRun> Evaluation::RunReference(PreparedProgram reference) {
  const uint32_t trials = problem_.correctness_trials() ? problem_.correctness_trials() : 3;
  std::vector<internal::Case> base;
  for (uint32_t s = 0; s < CaseShapeCount(); ++s) {
    const v1::ShapeBinding& shape = *CaseShape(s);
    // The timed shape's case has one trial: its inputs are fresh, and the
    // timed runs check the shape's outputs on two more input sets.
    const bool timed = s == TimedCaseShapeIndex();
    for (uint32_t t = 0; t < (timed ? 1 : trials); ++t) {
      internal::Case c;
      std::string name = shape.label();
      if (name.empty()) name = timed ? "cpu_timed" : absl::StrCat("shape", s);
      c.set_label(absl::StrCat(name, "#", t));
      *c.mutable_params() = shape.values();
      c.set_shape_index(s);
      c.set_input_seed(DeriveSeed(settings_.seed, s, t));
      base.push_back(std::move(c));
    }
  }
  ReferenceRun run;
  absl::StatusOr<std::vector<internal::Case>> cases = BuildCases(reference, base);
  if (!cases.ok()) {
    return absl::InternalError(
        absl::StrCat("reference plan of ", problem_.id(), ": ", cases.status().message()));
  }
  internal::RunRequest request;
  *request.mutable_program() = reference.program;
  for (const auto& c : *cases) *request.add_cases() = c;
  double timeout = LimitCall(settings_.run_timeout_seconds, settings_.deadline, &request);
  absl::Time started = absl::Now();
  absl::StatusOr<internal::RunResult> result = backend_.Run(request);
  if (WorkerDied(result.status())) {
    // Killed from outside (the OOM killer, an operator): once more, on the
    // fresh worker the backend starts (the whole request was lost, rt7 #3).
    timeout = LimitCall(settings_.run_timeout_seconds, settings_.deadline, &request);
    started = absl::Now();
    result = backend_.Run(request);
    if (WorkerDied(result.status()) && settings_.custom_problem) {
      // Twice: the caller's reference is the likely cause (UNAVAILABLE,
      // which clients retry, would come back every time).
      return ReferenceCannotRun(absl::StrCat("the worker running the reference of ", problem_.id(),
                                             " died twice (", result.status().message(), ")"));
    }
  }
  run.seconds = absl::ToDoubleSeconds(absl::Now() - started);
  if (ExceedsBackendLimit(result.status())) {
    return ReferenceCannotRun(
        absl::StrCat("the correctness cases of ", problem_.id(),
                     " do not fit this backend: ", result.status().message()));
  }
  if (!result.ok()) return result.status();
  if (result->has_failure()) {
    if (absl::Status cut = CutShortByDeadline(result->failure(), timeout,
                                              settings_.run_timeout_seconds, settings_.deadline);
        !cut.ok()) {
      return cut;
    }
    if (result->failure().stage() == "timeout") {
      const std::string late =
          absl::StrCat("the reference of ", problem_.id(),
                       " did not finish within the time limit of ", absl::SixDigits(timeout), " s");
      // A custom problem's reference that hangs (or is too slow) under the
      // server's limit is the caller's bad input, not how the server is set up.
      if (settings_.custom_problem && !settings_.run_timeout_from_request) {
        return ReferenceCannotRun(absl::StrCat(late, " (", result->failure().message(), ")"));
      }
      return LimitTooShort(absl::StrCat(late, ": the limit is too short for this problem (",
                                        result->failure().message(), ")"));
    }
    const std::string message =
        absl::StrCat("the reference of ", problem_.id(), " failed (", result->failure().stage(),
                     "): ", result->failure().message());
    if (settings_.custom_problem) return ReferenceCannotRun(message);
    return absl::InternalError(message);
  }
  run.program = std::move(reference);
  run.cases = *std::move(cases);
  run.buffer_bytes = BufferBytes(run.cases);
  run.result = *std::move(result);
  return run;
}

namespace {

// Compares every output of one case; appends checks (all when passing, the
// failing ones otherwise). Returns true when every output passed.
absl::StatusOr<bool> CompareCase(const v1::Problem& problem, const internal::Case& c,
                                 const internal::CaseResult& expected,
                                 const internal::CaseResult& got, v1::CorrectnessReport* report,
                                 int* failing_reported, std::string_view trial_label) {
  bool passed = true;
  plan::ParamMap params;
  for (const auto& [name, value] : c.params()) params[name] = value;
  for (const v1::TensorSpec& spec : problem.outputs()) {
    const internal::Tensor* want = nullptr;
    const internal::Tensor* have = nullptr;
    for (const auto& t : expected.outputs()) {
      if (t.name() == spec.name()) want = &t;
    }
    for (const auto& t : got.outputs()) {
      if (t.name() == spec.name()) have = &t;
    }
    if (!want || !have) {
      return absl::InternalError(absl::StrCat("output ", spec.name(), " missing from a run"));
    }
    absl::StatusOr<std::vector<int64_t>> dims = problems::EvalShape(spec, params);
    if (!dims.ok()) return dims.status();
    const data::ToleranceValues tolerance = data::ResolveTolerance(spec.dtype(), spec.tolerance());
    v1::OutputCheck check =
        data::CompareTensor(*want, *have, *dims, tolerance.atol, tolerance.rtol);
    check.set_output(spec.name());
    check.set_shape_label(std::string(trial_label));
    // Labels are "<shape>#<trial>" (timing: "timed#<input set>").
    if (const size_t hash = trial_label.rfind('#'); hash != std::string_view::npos) {
      uint32_t trial = 0;
      const std::string_view number = trial_label.substr(hash + 1);
      if (absl::SimpleAtoi(absl::string_view(number.data(), number.size()), &trial)) {
        check.set_trial(trial);
      }
    }
    *check.mutable_shape() = c.params();
    if (!check.passed()) {
      passed = false;
      if ((*failing_reported)++ < kMaxFailingChecksReported) *report->add_checks() = check;
    } else if (*failing_reported == 0) {
      *report->add_checks() = std::move(check);
    }
  }
  return passed;
}

std::string DescribeFailure(const v1::OutputCheck& check) {
  std::string where = absl::StrJoin(check.first_mismatch().index(), ", ");
  return absl::StrCat("output ", check.output(), " is wrong on shape ", check.shape_label(), " (",
                      ShapeText(check.shape()), "): ", check.mismatches(), " of ", check.elements(),
                      " elements differ; first at [", where, "]: got ",
                      check.first_mismatch().got(), ", expected ",
                      check.first_mismatch().expected(), " (max abs error ", check.max_abs_error(),
                      ", atol ", check.atol(), ", rtol ", check.rtol(), ")");
}

// For a backend that sends the timed outputs back (the CPU backend) rather
// than checking them (the CUDA worker: ProgramTiming.checked_runs), the
// same checks made here: per candidate, the last run of each input set
// against the reference's outputs on its inputs (reference_outputs; empty:
// the reference's own last outputs, the same inputs), then the drawn runs,
// set-major, against the reference's drawn runs likewise. The reference
// gets its own runs' modified_input.
absl::Status CheckTimedOutputsHere(const internal::TimingRequest& request,
                                   internal::TimingResult* result) {
  if (result->programs_size() == 0 || result->programs(0).checked_runs_size() > 0) {
    return absl::OkStatus();
  }
  internal::ProgramTiming* ref_timing = result->mutable_programs(0);
  for (int set = 0; set < ref_timing->last_outputs_size(); ++set) {
    internal::TimedRunCheck* run = ref_timing->add_checked_runs();
    run->set_input_set(static_cast<uint32_t>(set));
    run->set_modified_input(ref_timing->last_outputs(set).modified_input());
  }
  for (int d = 0; d < ref_timing->drawn_outputs_size(); ++d) {
    internal::TimedRunCheck* run = ref_timing->add_checked_runs();
    run->set_drawn(true);
    run->set_modified_input(ref_timing->drawn_outputs(d).modified_input());
  }
  for (int p = 1; p < result->programs_size(); ++p) {
    internal::ProgramTiming* timing = result->mutable_programs(p);
    const auto& expected = timing->reference_outputs_size() > 0
                               ? timing->reference_outputs()
                               : result->programs(0).last_outputs();
    const int sets = std::min(timing->last_outputs_size(), expected.size());
    const auto& expected_drawn = timing->reference_drawn_outputs_size() > 0
                                     ? timing->reference_drawn_outputs()
                                     : result->programs(0).drawn_outputs();
    const int drawn_count = std::min(timing->drawn_outputs_size(), expected_drawn.size());
    // Several runs may be drawn per set (up to 4), set-major:
    // drawn_outputs(set * per_set + d).
    const int drawn_per_set =
        sets > 0 && drawn_count > sets && drawn_count % sets == 0 ? drawn_count / sets : 1;
    auto check = [&](const internal::CaseResult& want, const internal::CaseResult& got, int set,
                     bool drawn) -> absl::Status {
      absl::StatusOr<std::vector<v1::OutputCheck>> checks =
          data::CompareOutputs(request.check_outputs(), want, got);
      if (!checks.ok()) return checks.status();
      internal::TimedRunCheck* run = timing->add_checked_runs();
      run->set_input_set(static_cast<uint32_t>(set));
      run->set_drawn(drawn);
      run->set_modified_input(got.modified_input());
      run->set_reference_modified_input(want.modified_input());
      for (v1::OutputCheck& output : *checks) *run->add_outputs() = std::move(output);
      return absl::OkStatus();
    };
    for (int set = 0; set < sets; ++set) {
      if (absl::Status s = check(expected.Get(set), timing->last_outputs(set), set, false);
          !s.ok()) {
        return s;
      }
    }
    for (int d = 0; d < drawn_count; ++d) {
      if (absl::Status s =
              check(expected_drawn.Get(d), timing->drawn_outputs(d), d / drawn_per_set, true);
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<v1::Verdict>> Evaluation::CheckCorrectness(
    const ReferenceRun& reference, const PreparedProgram& candidate, v1::CorrectnessReport* report,
    absl::Time run_deadline) {
  absl::StatusOr<std::vector<internal::Case>> cases = BuildCases(candidate, reference.cases);
  if (!cases.ok()) return std::optional<v1::Verdict>(Failed("compile", PlanError(cases.status())));
  internal::RunRequest request;
  *request.mutable_program() = candidate.program;
  for (const auto& c : *cases) *request.add_cases() = c;
  const double limit = CandidateRunLimit(reference, *cases);
  const absl::Time deadline =
      std::min({settings_.deadline, settings_.correctness_deadline, run_deadline});
  double timeout = LimitCall(limit, deadline, &request);
  absl::StatusOr<internal::RunResult> result = backend_.Run(request);
  if (WorkerDied(result.status())) {
    // Once more on a fresh worker, as the reference's run (a worker killed
    // from outside lost the request, or a group's every verdict). The
    // reference ran there: a second death is this kernel's doing.
    const absl::Status first = result.status();
    timeout = LimitCall(limit, deadline, &request);
    result = backend_.Run(request);
    if (WorkerDied(result.status())) {
      return std::optional<v1::Verdict>(Failed(
          "runtime", absl::StrCat("the worker running this kernel's correctness cases "
                                  "died twice (",
                                  first.message(), "; then ", result.status().message(), ")")));
    }
  }
  if (!result.ok()) return result.status();
  if (result->has_failure()) {
    const internal::RunFailure& failure = result->failure();
    if (absl::Status cut = CutShortByDeadline(failure, timeout, limit, deadline); !cut.ok()) {
      return cut;
    }
    std::string error = failure.message();
    if (failure.stage() == "timeout" && limit < settings_.run_timeout_seconds &&
        settings_.candidate_run_factor <= 0) {
      // Only a shared own limit (candidate_run_cap_seconds) cuts it here.
      absl::StrAppend(&error, " (the limit of this run: ", absl::SixDigits(limit),
                      " s, this candidate's share of its group's own limits.timeout_seconds: ",
                      settings_.own_limit_shared_by, " candidates at ",
                      absl::SixDigits(settings_.run_timeout_seconds),
                      " s each would take more than the most one request may set)");
    } else if (failure.stage() == "timeout" && limit < settings_.run_timeout_seconds) {
      absl::StrAppend(&error, " (the limit of this run: ", absl::SixDigits(limit), " s, ",
                      absl::SixDigits(settings_.candidate_run_factor),
                      " x the reference's run on the same cases (",
                      absl::SixDigits(reference.seconds),
                      " s; more if its buffers are larger), at least ",
                      absl::SixDigits(settings_.candidate_run_floor_seconds), " s, within the ",
                      absl::SixDigits(settings_.run_timeout_seconds), " s limit)");
      if (settings_.own_limit_shared_by > 0) {
        absl::StrAppend(&error, "; a group's own limits.timeout_seconds is shared by its ",
                        settings_.own_limit_shared_by,
                        " candidates: each gets it in full only while they all fit in the "
                        "most one request may set");
      }
    }
    // Some backends name the case in the message already ("case 'tail'").
    if (!failure.case_label().empty() &&
        !absl::StrContains(error, absl::StrCat("case '", failure.case_label(), "'"))) {
      absl::StrAppend(&error, " (case ", failure.case_label(), ")");
    }
    // "compile": the backend could not build it (e.g. the CPU backend
    // meeting inline PTX); "timeout"; "correctness": it ran to a wrong
    // program's end (the CPU backend's blocks racing on memory); anything
    // else ran and crashed.
    const std::string stage = failure.stage() == "timeout" || failure.stage() == "compile" ||
                                      failure.stage() == "correctness"
                                  ? failure.stage()
                                  : "runtime";
    return std::optional<v1::Verdict>(Failed(stage, std::move(error)));
  }
  if (result->cases_size() != static_cast<int>(cases->size())) {
    return absl::InternalError("backend returned the wrong number of cases");
  }
  report->Clear();
  for (const std::string& note : result->notes()) report->add_notes(note);
  std::set<std::string> shapes;
  int failing = 0;
  std::string first_error;
  for (size_t i = 0; i < cases->size(); ++i) {
    const internal::Case& c = (*cases)[i];
    shapes.insert(c.label().substr(0, c.label().find('#')));
    const internal::CaseResult& got = result->cases(static_cast<int>(i));
    if (!got.modified_input().empty()) {
      report->set_inputs_modified(true);
      report->set_modified_input(got.modified_input());
      if (first_error.empty()) {
        first_error = absl::StrCat("the kernel modified its input ", got.modified_input(),
                                   " (case ", c.label(), "); inputs are read-only");
      }
      ++failing;
      continue;
    }
    absl::StatusOr<bool> passed = CompareCase(
        problem_, c, reference.result.cases(static_cast<int>(i)), got, report, &failing, c.label());
    if (!passed.ok()) return passed.status();
    if (!*passed && first_error.empty()) {
      for (const auto& check : report->checks()) {
        if (!check.passed()) {
          first_error = DescribeFailure(check);
          if (!got.schedule().empty()) absl::StrAppend(&first_error, "; ", got.schedule());
          break;
        }
      }
    }
    report->set_trials_run(report->trials_run() + 1);
  }
  report->set_shapes_checked(static_cast<uint32_t>(shapes.size()));
  report->set_failing_checks(static_cast<uint32_t>(failing));
  report->set_passed(failing == 0);
  if (failing == 0) return std::optional<v1::Verdict>();
  v1::Verdict verdict = Failed("correctness", first_error);
  *verdict.mutable_correctness() = *report;
  return std::optional<v1::Verdict>(std::move(verdict));
}

internal::TimingConfig TimingConfigFor(std::string_view backend) {
  internal::TimingConfig config;
  if (backend == "cpu") {
    // Emulated kernels run ~1000x slower than on a GPU: a few samples of a
    // small shape say what the CPU backend can say, in bounded time.
    config.set_warmup_runs(1);
    config.set_min_samples(10);
    config.set_min_seconds(0.05);
    config.set_max_seconds(1.5);
    config.set_target_rel_stderr(0.02);
    config.set_input_sets(2);
    config.set_flush_l2(false);
  }
  return timing::WithDefaults(config);
}

namespace {

void FillStats(const timing::SampleStats& stats, double total_seconds, v1::TimingStats* out) {
  out->set_samples(stats.samples);
  out->set_median_us(stats.median);
  out->set_mean_us(stats.mean);
  out->set_stdev_us(stats.stdev);
  out->set_min_us(stats.min);
  out->set_max_us(stats.max);
  out->set_rel_stderr_median(stats.rel_stderr_median);
  out->set_total_seconds(total_seconds);
}

}  // namespace

absl::Status Evaluation::TimeAndScore(const ReferenceRun& reference,
                                      std::vector<const PreparedProgram*> candidates,
                                      std::vector<v1::Verdict*> verdicts,
                                      v1::TimingStats* reference_stats) {
  // Candidates to time again alone with the reference (a failure in a group
  // that another program of it may have caused), and each verdict as it was
  // before timing, to time those again from.
  std::vector<std::pair<const PreparedProgram*, v1::Verdict*>> alone;
  std::map<const v1::Verdict*, v1::Verdict> before_timing;
  if (candidates.size() > 1) {
    for (const v1::Verdict* verdict : verdicts) before_timing.emplace(verdict, *verdict);
  }
  // The device heap (malloc() in a kernel) belongs to the whole context and
  // is neither stashed nor poisoned between the programs of a run: a
  // candidate that uses it is timed alone with the reference (the CUDA
  // worker is replaced after it), never where a sibling runs after it.
  if (candidates.size() > 1 && backend_.name() == "cuda") {
    std::vector<const PreparedProgram*> shared;
    std::vector<v1::Verdict*> shared_verdicts;
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i]->program.compiled().uses_device_malloc()) {
        alone.emplace_back(candidates[i], verdicts[i]);
      } else {
        shared.push_back(candidates[i]);
        shared_verdicts.push_back(verdicts[i]);
      }
    }
    candidates = std::move(shared);
    verdicts = std::move(shared_verdicts);
  }
  while (!candidates.empty()) {
    absl::StatusOr<TimingRun> run =
        TimeAndScoreOnce(reference, candidates, verdicts, reference_stats);
    if (!run.ok()) return run.status();
    for (size_t i : run->confirm_alone) alone.emplace_back(candidates[i], verdicts[i]);
    if (run->next == TimingRun::Next::kDone) break;
    if (run->next == TimingRun::Next::kEachAlone) {
      for (size_t i = 0; i < candidates.size(); ++i) alone.emplace_back(candidates[i], verdicts[i]);
      break;
    }
    candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(run->without));
    verdicts.erase(verdicts.begin() + static_cast<std::ptrdiff_t>(run->without));
  }
  // The reference timing reported stays the group's; when no group run
  // finished, it is the first of these runs'.
  for (const auto& [candidate, verdict] : alone) {
    *verdict = before_timing.at(verdict);
    v1::TimingStats stats;
    if (absl::Status s = TimeAndScore(reference, {candidate}, {verdict}, &stats); !s.ok()) return s;
    if (reference_stats && reference_stats->samples() == 0) *reference_stats = stats;
  }
  return absl::OkStatus();
}

absl::StatusOr<Evaluation::TimingRun> Evaluation::TimeAndScoreOnce(
    const ReferenceRun& reference, const std::vector<const PreparedProgram*>& candidates,
    const std::vector<v1::Verdict*>& verdicts, v1::TimingStats* reference_stats) {
  if (candidates.empty()) return TimingRun{};
  const bool shared_context = ProgramsShareAContext();
  const v1::ShapeBinding& shape = TimedShape();
  internal::TimingRequest request;
  *request.mutable_params() = shape.values();
  *request.mutable_config() = TimingConfigFor(backend_.name());
  if (settings_.timing_budget_seconds > 0) {
    // Lower only: a request may not hold a shared device for longer.
    internal::TimingConfig* config = request.mutable_config();
    config->set_max_seconds(std::min(config->max_seconds(), settings_.timing_budget_seconds));
    config->set_min_seconds(std::min(config->min_seconds(), config->max_seconds()));
  }
  for (uint32_t i = 0; i < request.config().input_sets(); ++i) {
    request.add_input_seeds(DeriveSeed(settings_.seed, 1000003, i));
  }
  const double limit =
      settings_.run_timeout_seconds + request.config().max_seconds() * (1 + candidates.size());
  const double timeout = LimitCall(limit, settings_.deadline, &request);
  std::vector<const PreparedProgram*> programs = {&reference.program};
  programs.insert(programs.end(), candidates.begin(), candidates.end());
  // What the timed outputs are checked for, resolved for the timed shape
  // (the CUDA worker checks them itself).
  const plan::ParamMap params = ParamsOf(shape);
  for (const v1::TensorSpec& spec : problem_.outputs()) {
    absl::StatusOr<std::vector<int64_t>> dims = problems::EvalShape(spec, params);
    if (!dims.ok()) return dims.status();
    const data::ToleranceValues tolerance = data::ResolveTolerance(spec.dtype(), spec.tolerance());
    internal::CheckedOutput* output = request.add_check_outputs();
    output->set_name(spec.name());
    output->mutable_dims()->Assign(dims->begin(), dims->end());
    output->set_atol(tolerance.atol);
    output->set_rtol(tolerance.rtol);
  }
  for (const PreparedProgram* program : programs) {
    absl::StatusOr<internal::ResolvedPlan> plan = Resolve(*program, shape);
    if (!plan.ok()) return plan.status();  // checked in PrepareCandidate already
    internal::TimedProgram* timed = request.add_programs();
    *timed->mutable_program() = program->program;
    *timed->mutable_plan() = *std::move(plan);
  }
  auto fail = [&](size_t i, std::string_view stage, std::string error) {
    v1::Verdict failed = Failed(stage, std::move(error));
    failed.mutable_compile()->Swap(verdicts[i]->mutable_compile());
    failed.mutable_correctness()->Swap(verdicts[i]->mutable_correctness());
    *verdicts[i] = std::move(failed);
  };
  absl::StatusOr<internal::TimingResult> result = backend_.Time(request);
  // The worker's own work failed (a device refusing its L2 flush, now and
  // then or always): no program's doing, so tried again as it was, twice,
  // then the error; never a verdict (taken for a dead worker, two failures
  // and a good twin run failed an honest kernel: red team rt13 #3).
  for (int retry = 0; retry < 2 && IsWorkerOwnFailure(result.status()); ++retry) {
    LimitCall(limit, settings_.deadline, &request);
    result = backend_.Time(request);
  }
  if (IsWorkerOwnFailure(result.status())) return result.status();
  if (absl::IsUnavailable(result.status()) || absl::IsResourceExhausted(result.status())) {
    // The worker itself died (a backend that reports no verdict for it,
    // like the CPU backend's worker ending on a reply it could not hold),
    // or the programs' timed buffers do not fit together (a candidate's
    // plan can ask for gigabytes of scratch). A candidate may have caused
    // it: with others, each is timed again alone, so none loses its verdict
    // to another; alone, the reference timed by itself tells whether it was
    // this kernel.
    if (candidates.size() > 1) return TimingRun{.next = TimingRun::Next::kEachAlone};
    // Once more as it was: a worker that could not start, or a fork that
    // failed for a moment, is nobody's doing.
    const absl::Status first = result.status();
    LimitCall(limit, settings_.deadline, &request);
    result = backend_.Time(request);
    if (absl::IsUnavailable(result.status()) || absl::IsResourceExhausted(result.status())) {
      // The reference against a copy of itself (the memory and work of an
      // honest candidate): if that runs, this kernel was the cause.
      internal::TimingRequest twin = request;
      *twin.mutable_programs(1) = request.programs(0);
      twin.mutable_programs(1)->mutable_program()->set_label("reference twin");
      LimitCall(limit, settings_.deadline, &twin);
      absl::StatusOr<internal::TimingResult> twin_result = backend_.Time(twin);
      if (ExceedsBackendLimit(first) && ExceedsBackendLimit(twin_result.status())) {
        return ReferenceCannotRun(absl::StrCat("the timed shape of ", problem_.id(),
                                               " does not fit this backend twice (the reference "
                                               "and a candidate): ",
                                               first.message()));
      }
      if (!twin_result.ok() || twin_result->has_failure()) return first;
      fail(0, "runtime",
           absl::IsUnavailable(first)
               ? absl::StrCat("while timing, the worker timing this kernel died (", first.message(),
                              ") twice, and not when the reference is timed against itself")
               : absl::StrCat("while timing: ", first.message()));
      return TimingRun{};
    }
  }
  if (!result.ok()) return result.status();
  if (result->has_failure()) {
    if (absl::Status cut =
            CutShortByDeadline(result->failure(), timeout, limit, settings_.deadline);
        !cut.ok()) {
      return cut;
    }
  }
  if (result->programs_size() != static_cast<int>(programs.size()) && !result->has_failure()) {
    return absl::InternalError("timing returned the wrong number of programs");
  }

  // Which program failed: a reference failure is ours, a candidate's is a verdict.
  if (result->has_failure()) {
    const internal::RunFailure& failure = result->failure();
    if (failure.program() == reference.program.program.label()) {
      if (candidates.size() > 1) return TimingRun{.next = TimingRun::Next::kEachAlone};
      // The reference passed its own checks: timed alone, it tells whether
      // it or the candidate timed with it is at fault.
      internal::TimingRequest alone = request;
      alone.mutable_programs()->DeleteSubrange(1, alone.programs_size() - 1);
      LimitCall(limit, settings_.deadline, &alone);
      absl::StatusOr<internal::TimingResult> alone_result = backend_.Time(alone);
      if (!alone_result.ok()) return alone_result.status();
      if (alone_result->has_failure()) {
        if (absl::Status cut = CutShortByDeadline(alone_result->failure(), alone.timeout_seconds(),
                                                  limit, settings_.deadline);
            !cut.ok()) {
          return cut;
        }
        if (alone_result->failure().stage() == "timeout") {
          return LimitTooShort(absl::StrCat("timing the reference of ", problem_.id(),
                                            " alone did not finish within ",
                                            absl::SixDigits(alone.timeout_seconds()),
                                            " s: the time limit is too short for this problem"));
        }
        return absl::InternalError(
            absl::StrCat("the reference failed while timing: ", failure.message()));
      }
      if (failure.stage() == "timeout") {
        // The run as a whole ran out of time (the worker charges that to its
        // first program): this kernel's samples took it.
        fail(0, "timeout",
             absl::StrCat("while timing with this kernel: ", failure.message(),
                          " (the reference timed alone finishes)"));
      } else {
        fail(0, "runtime",
             absl::StrCat("while timing, the reference timed with this kernel failed (",
                          failure.message(),
                          ") and timed alone it does not: this kernel wrote into its memory"));
      }
      return TimingRun{};
    }
    const std::string stage =
        failure.stage() == "timeout" || failure.stage() == "compile" ? failure.stage() : "runtime";
    const std::string error = absl::StrCat("while timing: ", failure.message());
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i]->program.label() == failure.program()) {
        fail(i, stage, error);
        if (candidates.size() == 1) return TimingRun{};
        TimingRun run{.next = TimingRun::Next::kWithout, .without = i};
        // "resources": it held more memory than its share of the group's
        // (the CPU backend's runners); alone, its share is larger.
        if (shared_context || failure.stage() == "resources") run.confirm_alone.push_back(i);
        return run;
      }
    }
    // Not attributed to one program (the worker died or was killed, which a
    // candidate beside others can cause on a GPU): each is timed again alone;
    // alone, it fails with it.
    if (shared_context && candidates.size() > 1) {
      return TimingRun{.next = TimingRun::Next::kEachAlone};
    }
    for (size_t i = 0; i < candidates.size(); ++i) fail(i, stage, error);
    return TimingRun{};
  }

  if (absl::Status checked = CheckTimedOutputsHere(request, &*result); !checked.ok()) {
    return checked;
  }

  double flops = 0, bytes = 0;
  if (absl::StatusOr<double> f = problems::EvalFlops(problem_, params); f.ok()) flops = *f;
  if (absl::StatusOr<double> b = problems::EvalBytes(problem_, params); b.ok()) bytes = *b;
  double t_min_us = 0;    // [us] the roofline: roofline_frac = t_min / t_new
  double t_floor_us = 0;  // [us] below 0.9 x this a time is impossible
  const v1::DeviceInfo device = backend_.device();
  if (device.roofline_known()) {
    absl::StatusOr<double> t_min_s =
        gpu_peaks::RooflineMinSeconds(device.peaks(), problem_.compute_type(), flops, bytes);
    if (t_min_s.ok()) t_min_us = *t_min_s * 1e6;
    // The floor allows what an honest kernel can legally do faster than the
    // roofline assumes: arithmetic of the same accuracy on faster units
    // (3xTF32 for fp32, FP64 tensor cores), and outputs that are still in L2
    // when the stop event fires (after the flush L2 holds clean lines, so up
    // to its size of writes need not reach memory in the timed region).
    double output_bytes = 0;
    if (absl::StatusOr<double> o = problems::EvalOutputBytes(problem_, params); o.ok()) {
      output_bytes = *o;
    }
    const double floor_bytes =
        std::max(0.0, bytes - std::min(output_bytes, static_cast<double>(device.l2_bytes())));
    absl::StatusOr<double> t_floor_s = gpu_peaks::RooflineFloorSeconds(
        device.peaks(), problem_.compute_type(), flops, floor_bytes);
    if (t_floor_s.ok()) t_floor_us = *t_floor_s * 1e6;
  }

  const timing::SampleStats ref_stats = timing::Summarize(result->programs(0).samples_us());
  double ref_total = 0;
  for (double s : result->programs(0).samples_us()) ref_total += s * 1e-6;

  // The reference never writes its inputs (every problem's reference passes
  // as a candidate). If they changed while timing, a program timed with it
  // wrote into its buffers: its times and the outputs checked against it
  // prove nothing. Beside several candidates, each is timed again alone.
  // Its runs on the candidates' inputs (reference_outputs) run on inputs
  // generated for them, as every timed run.
  std::string reference_tampered;
  auto check_reference_inputs = [&](const std::string& modified_input) {
    if (reference_tampered.empty() && !modified_input.empty()) {
      reference_tampered = absl::StrCat("the reference's input ", modified_input,
                                        " changed during timing: a program timed with it wrote "
                                        "into its buffers");
    }
  };
  for (const internal::TimedRunCheck& ref_run : result->programs(0).checked_runs()) {
    check_reference_inputs(ref_run.modified_input());
  }
  for (const internal::ProgramTiming& timing : result->programs()) {
    for (const internal::TimedRunCheck& run : timing.checked_runs()) {
      check_reference_inputs(run.reference_modified_input());
    }
  }
  if (!reference_tampered.empty() && candidates.size() > 1) {
    return TimingRun{.next = TimingRun::Next::kEachAlone};
  }
  if (reference_stats) FillStats(ref_stats, ref_total, reference_stats);

  TimingRun run;
  // A note about one program starts with "<label>: ".
  std::set<std::string, std::less<>> candidate_labels;
  for (const auto* candidate : candidates) candidate_labels.insert(candidate->program.label());
  for (size_t i = 0; i < candidates.size(); ++i) {
    v1::Verdict& verdict = *verdicts[i];
    const internal::ProgramTiming& timing = result->programs(static_cast<int>(i + 1));
    v1::TimingReport* report = verdict.mutable_timing();
    FillStats(ref_stats, ref_total, report->mutable_reference());
    const timing::SampleStats stats = timing::Summarize(timing.samples_us());
    double total = 0;
    for (double s : timing.samples_us()) total += s * 1e-6;
    FillStats(stats, total, report->mutable_candidate());
    report->set_emulated(backend_.name() == "cpu");
    *report->mutable_shape() = shape.values();
    report->set_flops(flops);
    report->set_bytes(bytes);
    report->set_roofline_min_us(t_min_us);
    report->set_sm_clock_mhz(result->sm_clock_mhz());
    report->set_sm_clock_min_mhz(result->sm_clock_min_mhz());
    report->set_throttled(result->throttled());
    report->set_converged(result->converged());
    // The sets whose outputs were checked (the time cap may end timing
    // before every set had a round).
    const auto sets =
        std::count_if(timing.checked_runs().begin(), timing.checked_runs().end(),
                      [](const internal::TimedRunCheck& checked) { return !checked.drawn(); });
    report->set_input_sets(static_cast<uint32_t>(sets));
    // The backend's notes on this candidate, the reference, or the whole
    // run; not those on the group's other candidates.
    for (const std::string& note : result->notes()) {
      const std::string_view label = std::string_view(note).substr(0, note.find(": "));
      const bool other_candidate =
          label != candidates[i]->program.label() && candidate_labels.contains(label);
      if (!other_candidate) report->add_notes(note);
    }

    // The outputs of timed runs must match too: a kernel that caches across
    // launches or skips repeated inputs fails here.
    int failing = 0;
    std::string error;
    v1::CorrectnessReport timed_report;
    if (!reference_tampered.empty()) error = reference_tampered;
    // Per input set, the last run (label "timed#<set>"), then the runs drawn
    // at random ("drawn#<set>"); the first that fails decides.
    for (const internal::TimedRunCheck& timed : timing.checked_runs()) {
      if (!error.empty()) break;
      const std::string label =
          absl::StrCat(timed.drawn() ? "drawn#" : "timed#", timed.input_set());
      bool passed = true;
      for (v1::OutputCheck check : timed.outputs()) {
        check.set_shape_label(label);
        check.set_trial(timed.input_set());
        *check.mutable_shape() = shape.values();
        if (check.passed()) continue;
        passed = false;
        if (failing++ < kMaxFailingChecksReported) *timed_report.add_checks() = std::move(check);
      }
      if (!timed.modified_input().empty()) {
        error = absl::StrCat("the kernel modified its input ", timed.modified_input(),
                             " during timing");
        break;
      }
      if (!passed) {
        error = absl::StrCat("during timing (input set ", timed.input_set(),
                             timed.drawn() ? ", a run drawn at random among its runs): "
                                           : ", after repeated launches): ",
                             DescribeFailure(timed_report.checks(0)));
        break;
      }
    }
    if (!error.empty()) {
      verdict.set_correct(false);
      verdict.set_stage("correctness");
      verdict.set_error(error);
      for (const auto& check : timed_report.checks()) {
        if (!check.passed()) *verdict.mutable_correctness()->add_checks() = check;
      }
      verdict.mutable_correctness()->set_passed(false);
      if (shared_context && candidates.size() > 1) run.confirm_alone.push_back(i);
      continue;
    }

    const double speedup = timing::Speedup(ref_stats, stats);
    if (t_floor_us > 0 && stats.median > 0 &&
        timing::BelowRooflineFloor(stats.median, t_floor_us, kRooflineFloorFactor)) {
      verdict.set_correct(false);
      verdict.set_stage("correctness");
      verdict.set_error(absl::StrCat(
          "median time ", stats.median, " us is below ", kRooflineFloorFactor,
          " x the least time this work can take on this device, ", t_floor_us,
          " us (the roofline, ", t_min_us,
          " us, allowing arithmetic of the same accuracy on faster units and outputs left "
          "in L2): physically impossible, so the measurement is not trusted"));
      verdict.add_flags("below_roofline_floor");
      continue;
    }
    verdict.set_correct(true);
    verdict.set_stage("passed");
    verdict.clear_error();
    const bool emulated = backend_.name() == "cpu";
    if (emulated && !settings_.reward_emulated_speed) {
      // The reward's observation: as fast as the reference (EngineOptions).
      verdict.set_speedup(1.0);
      verdict.add_flags("emulated_speed_not_rewarded");
    } else {
      if (std::isfinite(speedup) && speedup > 0) verdict.set_speedup(speedup);
      if (t_min_us > 0 && stats.median > 0) verdict.set_roofline_frac(t_min_us / stats.median);
    }
    if (speedup > kSuspiciousSpeedup) verdict.add_flags("speedup_above_10x");
    if (emulated) verdict.add_flags("emulated_timing");
    if (result->throttled()) verdict.add_flags("clock_throttled");
    if (!result->converged()) verdict.add_flags("timing_not_converged");
  }
  return run;
}

void Evaluation::Finish(v1::Verdict* verdict) const {
  verdict->set_problem_id(problem_.id());
  verdict->set_backend(std::string(backend_.name()));
  *verdict->mutable_device() = backend_.device();
  *verdict->mutable_reward_settings() = settings_.reward_settings;
  if (settings_.seed_fixed) {
    verdict->set_seed(settings_.seed);
    verdict->add_flags("fixed_seed");
  }
  if (settings_.custom_problem) verdict->add_flags("custom_problem");
  if (verdict->stage().empty()) verdict->set_stage(verdict->correct() ? "passed" : "runtime");
  rubric::Observation observation;
  observation.correct = verdict->correct();
  observation.stage = verdict->stage();
  if (verdict->speedup() != 0) observation.speedup = verdict->speedup();
  if (verdict->roofline_frac() != 0) observation.roofline_frac = verdict->roofline_frac();
  verdict->set_reward(rubric::SanitizedScore(settings_.reward, observation));
  // The CUBIN is large and of no use to a caller reading a verdict.
  verdict->mutable_compile()->clear_cubin();
  verdict->mutable_compile()->clear_ptx();
  verdict->mutable_compile()->clear_host_build_probe();
}

}  // namespace kerneleval::engine
