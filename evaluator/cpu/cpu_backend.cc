#include "evaluator/cpu/cpu_backend.h"

#include <google/protobuf/any.pb.h>
#include <google/protobuf/wrappers.pb.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "evaluator/cpu/cpu_worker.h"
#include "evaluator/cpu/host_compiler.h"

namespace kerneleval::cpu {
namespace {

namespace fs = std::filesystem;

// [s] Beyond the worker's own limits before the engine gives up on it.
constexpr double kSlackSeconds = 15;

// [s] A call's budget `budget`, cut to its caller's deadline
// (call_deadline_unix_seconds; 0: none) plus a moment for the worker's own
// answer at a limit that ends there. Sets *by_deadline when the deadline cut
// it: a call that outlasts the budget then ran out of the caller's time (a
// first run's build of the program may take most of it), not the kernel's.
double CallBudget(double budget, double call_deadline_unix_seconds, bool* by_deadline) {
  *by_deadline = false;
  if (call_deadline_unix_seconds <= 0) return budget;
  constexpr double kAnswerSeconds = 0.5;
  const double left =
      call_deadline_unix_seconds - absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  if (left + kAnswerSeconds >= budget) return budget;
  *by_deadline = true;
  return std::max(left, 0.0) + kAnswerSeconds;
}

absl::Status PastTheCallersDeadline(double budget) {
  return absl::DeadlineExceededError(absl::StrCat(
      "the deadline came while the CPU worker built or ran the program (", budget, " s)"));
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "host CPU";
}

unsigned EffectiveThreads(unsigned requested) {
  return requested ? requested : std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
}

CpuWorkerSettings SettingsFor(const CpuBackendOptions& o) {
  CpuWorkerSettings s;
  s.cache_dir = o.cache_dir;
  s.prelude_dir = o.prelude_dir;
  s.cuda_include_dir = o.cuda_include_dir;
  s.compiler = o.compiler;
  s.compile_timeout_seconds = o.compile_timeout_seconds;
  s.default_timeout_seconds = o.timeout_seconds;
  s.threads = EffectiveThreads(o.threads);
  s.fiber_stack_bytes = o.fiber_stack_bytes;
  s.print_budget_bytes = o.print_budget_bytes;
  s.heap_bytes = o.heap_bytes;
  s.max_output_bytes = o.max_output_bytes;
  s.precompiled_prelude = o.precompiled_prelude;
  s.interleaved_runs = o.interleaved_runs;
  return s;
}

// The worker's "<code>:<message>" error reply as a status.
absl::Status WorkerError(const std::string& text) {
  const size_t colon = text.find(':');
  int code = static_cast<int>(absl::StatusCode::kInternal);
  if (colon == std::string::npos || !absl::SimpleAtoi(text.substr(0, colon), &code) || code <= 0 ||
      code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::InternalError(text);
  }
  return absl::Status(static_cast<absl::StatusCode>(code),
                      absl::StrCat("CPU backend: ", text.substr(colon + 1)));
}

// The worker's reply `answer` unpacked into `reply`, or its error.
absl::Status Unpack(const google::protobuf::Any& answer, google::protobuf::Message* reply) {
  if (answer.Is<google::protobuf::StringValue>()) {
    google::protobuf::StringValue error;
    answer.UnpackTo(&error);
    return WorkerError(error.value());
  }
  if (!answer.UnpackTo(reply)) {
    return absl::InternalError(absl::StrCat("CPU backend: unexpected reply ", answer.type_url()));
  }
  return absl::OkStatus();
}

// Sends `request` to `worker` and unpacks its reply into `reply`, waiting
// until `deadline`. After an error the worker must not be used again; at
// the deadline it is killed, unless `keep_running` (a builder left to
// finish its build).
absl::Status Exchange(process::WorkerProcess& worker, const google::protobuf::Message& request,
                      google::protobuf::Message* reply, absl::Time deadline,
                      bool keep_running = false) {
  google::protobuf::Any envelope;
  envelope.PackFrom(request);
  if (absl::Status s = worker.Send(envelope); !s.ok()) return s;
  google::protobuf::Any answer;
  absl::Status s = worker.Receive(&answer, deadline);
  if (absl::IsDeadlineExceeded(s) && !keep_running) worker.Kill();
  if (!s.ok()) return s;
  return Unpack(answer, reply);
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuBackend>> CpuBackend::Create(CpuBackendOptions options) {
  process::IgnoreSigpipe();
  if (options.worker_binary.empty()) options.worker_binary = process::DefaultWorkerBinary();
  if (::access(options.worker_binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("CPU backend: worker binary ", options.worker_binary, " is not executable"));
  }
  if (options.timeout_seconds <= 0) options.timeout_seconds = 10;
  if (options.compile_timeout_seconds <= 0) options.compile_timeout_seconds = 60;
  if (options.prelude_dir.empty()) options.prelude_dir = DefaultPreludeDir();
  if (options.cuda_include_dir.empty()) options.cuda_include_dir = DefaultCudaIncludeDir();
  bool owns_cache_dir = false;
  if (options.cache_dir.empty()) {
    // A cache shared by backends (tests, restarts): kept, never removed.
    if (const char* shared = std::getenv("KERNELEVAL_CPU_CACHE_DIR"); shared && *shared) {
      options.cache_dir = shared;
    }
  }
  if (options.cache_dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "kerneleval-cpu-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) {
      return absl::FailedPreconditionError("CPU backend: cannot create a cache directory");
    }
    options.cache_dir = pattern;
    owns_cache_dir = true;
  }
  // The same checks the worker makes, here where they can fail Create().
  HostCompilerOptions compiler;
  compiler.compiler = options.compiler;
  compiler.prelude_dir = options.prelude_dir;
  compiler.cuda_include_dir = options.cuda_include_dir;
  compiler.cache_dir = options.cache_dir;
  absl::StatusOr<HostCompiler> checked = HostCompiler::Create(compiler);
  if (!checked.ok()) {
    if (owns_cache_dir) {
      std::error_code ec;
      fs::remove_all(options.cache_dir, ec);
    }
    return checked.status();
  }
  const bool warm_up = options.warm_up;
  std::unique_ptr<CpuBackend> backend(new CpuBackend(std::move(options), owns_cache_dir));
  if (warm_up) {
    // An empty program: starts the worker and builds the precompiled prelude.
    internal::RunRequest request;
    request.mutable_program()->set_label("warm-up");
    internal::RunResult result;
    absl::Status s = backend->Call(request, &result,
                                   backend->options_.compile_timeout_seconds * 2 + kSlackSeconds);
    if (!s.ok()) return s;
    if (result.has_failure()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "CPU backend: the host compiler does not work: ", result.failure().message()));
    }
  }
  return backend;
}

CpuBackend::CpuBackend(CpuBackendOptions options, bool owns_cache_dir)
    : options_(std::move(options)), owns_cache_dir_(owns_cache_dir) {
  const unsigned threads = EffectiveThreads(options_.threads);
  device_.set_id("cpu");
  device_.set_backend("cpu");
  device_.set_name(absl::StrCat("CPU emulation on ", CpuModelName(), " (", threads, " threads)"));
  device_.set_sm_count(threads);
  device_.set_memory_bytes(options_.memory_bytes);
  device_.set_roofline_known(false);
  device_.set_ready(true);
}

CpuBackend::~CpuBackend() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    worker_.reset();
  }
  {
    std::lock_guard<std::mutex> lock(builders_mutex_);
    idle_builders_.clear();
    finishing_builders_.clear();
  }
  if (owns_cache_dir_) {
    std::error_code ec;
    fs::remove_all(options_.cache_dir, ec);
  }
}

uint64_t CpuBackend::workers_started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return workers_started_;
}

absl::StatusOr<process::WorkerProcess> CpuBackend::StartWorker(bool build_only) const {
  CpuWorkerSettings settings = SettingsFor(options_);
  settings.build_only = build_only;
  process::WorkerOptions worker_options;
  worker_options.binary = options_.worker_binary;
  worker_options.mode = "cpu";
  worker_options.extra_args = settings.ToArgs();
  worker_options.address_space_bytes = options_.memory_bytes;
  // Outputs travel as frames, not files; compiled objects and the
  // precompiled prelude (~100 MB) are the largest files written.
  worker_options.max_file_bytes = uint64_t{1} << 30;
  return process::WorkerProcess::Start(worker_options);
}

absl::Status CpuBackend::Call(const google::protobuf::Message& request,
                              google::protobuf::Message* reply, double budget_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (worker_ && !worker_->Alive()) worker_.reset();
  if (!worker_) {
    absl::StatusOr<process::WorkerProcess> started = StartWorker(/*build_only=*/false);
    if (!started.ok()) return started.status();
    worker_.emplace(*std::move(started));
    ++workers_started_;
  }
  absl::Status s = Exchange(*worker_, request, reply, absl::Now() + absl::Seconds(budget_seconds));
  if (!s.ok()) worker_.reset();
  return s;
}

absl::StatusOr<PrepareReport> CpuBackend::Prepare(const internal::RunRequest& run,
                                                  const internal::TimingRequest& timing,
                                                  absl::Time deadline) {
  std::optional<process::WorkerProcess> builder;
  {
    std::lock_guard<std::mutex> lock(builders_mutex_);
    // Builders left building at an earlier deadline: idle again once they
    // answered.
    for (auto it = finishing_builders_.begin(); it != finishing_builders_.end();) {
      google::protobuf::Any answer;
      const absl::Status s = it->Receive(&answer, absl::Now());
      if (absl::IsDeadlineExceeded(s)) {
        ++it;
        continue;
      }
      if (s.ok() && idle_builders_.size() < kIdleBuilders) idle_builders_.push_back(std::move(*it));
      it = finishing_builders_.erase(it);
    }
    while (!builder && !idle_builders_.empty()) {
      if (idle_builders_.back().Alive()) builder.emplace(std::move(idle_builders_.back()));
      idle_builders_.pop_back();
    }
  }
  if (!builder) {
    absl::StatusOr<process::WorkerProcess> started = StartWorker(/*build_only=*/true);
    if (!started.ok()) return started.status();
    builder.emplace(*std::move(started));
  }
  {
    std::lock_guard<std::mutex> lock(builders_mutex_);
    if (stopping_) return absl::UnavailableError("the CPU backend is stopping");
    busy_builders_.insert(builder->pid());
  }
  PrepareReport report;
  // The builder builds what each request would, answering without running
  // it: one note per build.
  const auto build = [&](const google::protobuf::Message& request, int builds,
                         auto* result) -> absl::Status {
    const double left = absl::ToDoubleSeconds(deadline - absl::Now());
    if (left <= 0) return absl::DeadlineExceededError("the deadline came before the host build");
    // The deadline does not end the build: the builder finishes it into the
    // cache, where the worker's first run waits for it (HostCompiler builds
    // a program once at a time) instead of building it again.
    const double limit = options_.compile_timeout_seconds * builds + kSlackSeconds;
    const bool by_deadline = left < limit;
    if (absl::Status s = Exchange(*builder, request, result,
                                  absl::Now() + absl::Seconds(std::min(limit, left)), by_deadline);
        !s.ok()) {
      {
        std::lock_guard<std::mutex> lock(builders_mutex_);
        busy_builders_.erase(builder->pid());
        if (absl::IsDeadlineExceeded(s) && by_deadline && !stopping_) {
          finishing_builders_.push_back(*std::move(builder));
          // The oldest go first past the bound (killed, their builds lost).
          if (finishing_builders_.size() > kFinishingBuilders) {
            finishing_builders_.erase(finishing_builders_.begin());
          }
        }
      }
      builder.reset();  // left building, or not to be used again
      return s;
    }
    for (const std::string& note : result->notes()) {
      absl::string_view text = note;
      double seconds = 0;
      if (note == kBuildNoteCacheHit) {
        ++report.cache_hits;
      } else if (absl::ConsumePrefix(&text, kBuildNotePrefix) && absl::SimpleAtod(text, &seconds)) {
        ++report.builds;
        report.build_seconds += seconds;
      }
    }
    if (result->has_failure()) report.failure = result->failure().message();
    return absl::OkStatus();
  };
  internal::RunResult built;
  absl::Status s = build(run, 1, &built);
  if (s.ok() && built.has_failure()) report.run_failure = built.failure();
  if (s.ok() && report.failure.empty() && timing.programs_size() > 0) {
    internal::TimingResult timed;
    s = build(timing, timing.programs_size(), &timed);
  }
  if (builder) {
    std::lock_guard<std::mutex> lock(builders_mutex_);
    busy_builders_.erase(builder->pid());
    if (!stopping_ && idle_builders_.size() < kIdleBuilders) {
      idle_builders_.push_back(*std::move(builder));
    }
  }
  if (!s.ok()) return s;
  return report;
}

void CpuBackend::CancelPreparations() {
  std::vector<process::WorkerProcess> ended;
  {
    std::lock_guard<std::mutex> lock(builders_mutex_);
    stopping_ = true;
    // Unreaped while their Prepare holds them (it takes them out of the set
    // before it lets them go), so each id is still that builder's. Their
    // Prepare sees the builder die and fails; the builds are lost.
    for (const pid_t pid : busy_builders_) {
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
    }
    for (auto* list : {&idle_builders_, &finishing_builders_}) {
      for (auto& builder : *list) ended.push_back(std::move(builder));
      list->clear();
    }
  }
  // Killed and reaped here, outside the lock.
}

absl::StatusOr<internal::RunResult> CpuBackend::Run(const internal::RunRequest& request) {
  const double timeout =
      request.timeout_seconds() > 0 ? request.timeout_seconds() : options_.timeout_seconds;
  internal::RunResult result;
  bool by_deadline = false;
  const double budget = CallBudget(options_.compile_timeout_seconds + timeout + kSlackSeconds,
                                   request.call_deadline_unix_seconds(), &by_deadline);
  absl::Status s = Call(request, &result, budget);
  if (absl::IsDeadlineExceeded(s) && by_deadline) return PastTheCallersDeadline(budget);
  if (absl::IsDeadlineExceeded(s)) {
    // The worker's own limits should have answered first: treat as a hang.
    result.Clear();
    internal::RunFailure* failure = result.mutable_failure();
    failure->set_stage("timeout");
    failure->set_message(absl::StrCat("the CPU worker did not answer within ",
                                      options_.compile_timeout_seconds + timeout, " s"));
    failure->set_program(request.program().label());
    return result;
  }
  if (!s.ok()) return s;
  if (result.has_failure()) {
    std::lock_guard<std::mutex> lock(mutex_);
    worker_.reset();  // a fresh worker for the next request
  }
  return result;
}

absl::StatusOr<internal::TimingResult> CpuBackend::Time(const internal::TimingRequest& request) {
  const double timeout =
      request.timeout_seconds() > 0 ? request.timeout_seconds() : options_.timeout_seconds;
  bool by_deadline = false;
  const double budget =
      CallBudget(options_.compile_timeout_seconds * std::max(1, request.programs_size()) + timeout +
                     kSlackSeconds,
                 request.call_deadline_unix_seconds(), &by_deadline);
  internal::TimingResult result;
  absl::Status s = Call(request, &result, budget);
  if (absl::IsDeadlineExceeded(s) && by_deadline) return PastTheCallersDeadline(budget);
  if (absl::IsDeadlineExceeded(s)) {
    result.Clear();
    internal::RunFailure* failure = result.mutable_failure();
    failure->set_stage("timeout");
    failure->set_message(absl::StrCat("the CPU worker did not answer within ", budget, " s"));
    if (request.programs_size() > 0) {
      failure->set_program(request.programs(request.programs_size() - 1).program().label());
    }
    return result;
  }
  if (!s.ok()) return s;
  if (result.has_failure()) {
    std::lock_guard<std::mutex> lock(mutex_);
    worker_.reset();
  }
  return result;
}

}  // namespace kerneleval::cpu
