#include "evaluator/cpu/cpu_backend.h"

#include <google/protobuf/any.pb.h>
#include <google/protobuf/wrappers.pb.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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
  if (owns_cache_dir_) {
    std::error_code ec;
    fs::remove_all(options_.cache_dir, ec);
  }
}

uint64_t CpuBackend::workers_started() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return workers_started_;
}

absl::Status CpuBackend::Call(const google::protobuf::Message& request,
                              google::protobuf::Message* reply, double budget_seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (worker_ && !worker_->Alive()) worker_.reset();
  if (!worker_) {
    process::WorkerOptions worker_options;
    worker_options.binary = options_.worker_binary;
    worker_options.mode = "cpu";
    worker_options.extra_args = SettingsFor(options_).ToArgs();
    worker_options.address_space_bytes = options_.memory_bytes;
    // Outputs travel as frames, not files; compiled objects and the
    // precompiled prelude (~100 MB) are the largest files written.
    worker_options.max_file_bytes = uint64_t{1} << 30;
    absl::StatusOr<process::WorkerProcess> started = process::WorkerProcess::Start(worker_options);
    if (!started.ok()) return started.status();
    worker_.emplace(*std::move(started));
    ++workers_started_;
  }
  google::protobuf::Any envelope;
  envelope.PackFrom(request);
  google::protobuf::Any answer;
  absl::Status s = worker_->Call(envelope, &answer, absl::Now() + absl::Seconds(budget_seconds));
  if (!s.ok()) {
    worker_.reset();
    return s;
  }
  if (answer.Is<google::protobuf::StringValue>()) {
    google::protobuf::StringValue error;
    answer.UnpackTo(&error);
    worker_.reset();
    return WorkerError(error.value());
  }
  if (!answer.UnpackTo(reply)) {
    worker_.reset();
    return absl::InternalError(absl::StrCat("CPU backend: unexpected reply ", answer.type_url()));
  }
  return absl::OkStatus();
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
