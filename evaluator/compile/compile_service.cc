#include "evaluator/compile/compile_service.h"

#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "evaluator/compile/options.h"
#include "evaluator/compile/toolkit.h"
#include "kerneleval/internal/compile.pb.h"
#include "spdlog/spdlog.h"

namespace kerneleval::compile {
namespace {

namespace fs = std::filesystem;

constexpr absl::Duration kWorkerStartTimeout = absl::Seconds(60);

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

std::string FormatSeconds(absl::Duration d) {
  return absl::StrFormat("%g s", absl::ToDoubleSeconds(d));
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30) && bytes % (uint64_t{1} << 30) == 0) {
    return absl::StrCat(bytes >> 30, " GiB");
  }
  if (bytes >= (uint64_t{1} << 20) && bytes % (uint64_t{1} << 20) == 0) {
    return absl::StrCat(bytes >> 20, " MiB");
  }
  return absl::StrCat(bytes, " bytes");
}

// A verdict without a compile: refused input the user can fix.
v1::CompileResult Refused(std::string message, const std::string& arch,
                          const google::protobuf::RepeatedPtrField<std::string>& options) {
  v1::CompileResult result;
  result.set_success(false);
  result.set_arch(arch);
  *result.mutable_options() = options;
  v1::Diagnostic* d = result.add_diagnostics();
  d->set_severity("error");
  d->set_message(message);
  result.set_log(std::move(message));
  return result;
}

}  // namespace

struct CompileService::Worker {
  process::WorkerProcess process;
  std::string scratch_dir;
  uint64_t jobs = 0;  // compiles answered

  Worker(process::WorkerProcess p, std::string dir)
      : process(std::move(p)), scratch_dir(std::move(dir)) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  Worker(Worker&&) = delete;
  Worker& operator=(Worker&&) = delete;
  ~Worker() {
    process.Kill();
    std::error_code ec;
    fs::remove_all(scratch_dir, ec);
  }
};

struct CompileService::InFlight {
  std::condition_variable done_cv;
  bool done = false;
  absl::StatusOr<v1::CompileResult> result = absl::UnknownError("not finished");
};

CompileService::CompileService(const CompileServiceOptions& options) : options_(options) {
  if (options_.workers <= 0) {
    options_.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (options_.scratch_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    options_.scratch_dir = tmp && *tmp ? tmp : "/tmp";
  }
}

CompileService::~CompileService() {
  std::lock_guard lock(mutex_);
  idle_.clear();  // kills the idle workers; callers must not be inside Compile()
}

absl::StatusOr<std::unique_ptr<CompileService>> CompileService::Create(
    const CompileServiceOptions& options) {
  process::IgnoreSigpipe();
  std::unique_ptr<CompileService> service(new CompileService(options));
  absl::StatusOr<ToolkitPaths> toolkit = FindToolkit();
  if (!toolkit.ok()) return toolkit.status();
  service->toolkit_version_ = NvrtcVersionString();
  service->prelude_ = ReadFile(toolkit->prelude);
  if (absl::Status s = CheckArch(service->options_.default_arch); !s.ok()) return s;
  if (service->options_.cache) {
    service->cache_ = std::make_unique<CompileCache>(service->options_.cache_memory_bytes,
                                                     service->options_.cache_dir,
                                                     service->options_.cache_dir_bytes);
  }
  const int prestart = std::min(service->options_.prestart_workers, service->options_.workers);
  for (int i = 0; i < prestart; ++i) {
    {
      std::lock_guard lock(service->mutex_);
      ++service->live_workers_;
    }
    absl::StatusOr<std::unique_ptr<Worker>> worker = service->StartWorker();
    if (!worker.ok()) return worker.status();
    service->ReleaseWorker(*std::move(worker));
  }
  return service;
}

absl::StatusOr<std::unique_ptr<CompileService::Worker>> CompileService::StartWorker() {
  std::string pattern = options_.scratch_dir + "/kerneleval-compile-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(
        absl::StrCat("mkdtemp in ", options_.scratch_dir, ": ", std::strerror(errno)));
  }
  process::WorkerOptions worker_options;
  worker_options.binary = options_.worker_binary;
  worker_options.mode = "compile";
  worker_options.extra_args = {
      absl::StrCat("--scratch-dir=", pattern), absl::StrCat("--arch=", options_.default_arch),
      absl::StrCat("--filesystem-sandbox=", sandbox::MechanismName(options_.filesystem_sandbox))};
  if (options_.precompiled_headers) {
    worker_options.extra_args.push_back("--pch");
    worker_options.extra_args.push_back(
        absl::StrCat("--pch-limit-bytes=", options_.pch_dir_limit_bytes));
  }
  worker_options.address_space_bytes = options_.memory_bytes;
  worker_options.extra_env = options_.worker_env;
  absl::StatusOr<process::WorkerProcess> started = process::WorkerProcess::Start(worker_options);
  if (!started.ok()) {
    std::error_code ec;
    fs::remove_all(pattern, ec);
    return started.status();
  }
  auto worker = std::make_unique<Worker>(*std::move(started), pattern);
  internal::CompileWorkerReady ready;
  absl::Status s = worker->process.Receive(&ready, absl::Now() + kWorkerStartTimeout);
  if (!s.ok()) {
    return absl::UnavailableError(absl::StrCat("compile worker did not start: ", s.message()));
  }
  if (!ready.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("compile worker cannot serve: ", ready.error()));
  }
  {
    std::lock_guard lock(mutex_);
    ++stats_.workers_started;
    if (sandbox_.empty()) {
      sandbox_ = ready.sandbox();
      if (absl::StartsWith(sandbox_, kUnsandboxedDescriptionPrefix)) {
        spdlog::warn(
            "compile workers run WITHOUT their sandbox ({}): submissions can read any "
            "file this process can; for trusted sources only",
            sandbox_);
      }
    }
  }
  spdlog::debug("compile worker {} ready ({})", worker->process.pid(), ready.sandbox());
  return worker;
}

absl::StatusOr<std::unique_ptr<CompileService::Worker>> CompileService::AcquireWorker() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!idle_.empty()) {
      std::unique_ptr<Worker> worker = std::move(idle_.back());
      idle_.pop_back();
      return worker;
    }
    if (live_workers_ < options_.workers) {
      ++live_workers_;
      lock.unlock();
      absl::StatusOr<std::unique_ptr<Worker>> worker = StartWorker();
      if (!worker.ok()) {
        lock.lock();
        --live_workers_;
        worker_available_.notify_one();
      }
      return worker;
    }
    worker_available_.wait(lock);
  }
}

void CompileService::ReleaseWorker(std::unique_ptr<Worker> worker) {
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(worker));
  worker_available_.notify_one();
}

void CompileService::DiscardWorker(std::unique_ptr<Worker> worker, bool retired) {
  worker.reset();  // kill, reap, remove its scratch directory
  {
    std::lock_guard lock(mutex_);
    --live_workers_;
    ++(retired ? stats_.workers_retired : stats_.worker_deaths);
  }
  worker_available_.notify_one();
  // A fresh worker takes its place now, so the next compile does not pay
  // for the start.
  {
    std::lock_guard lock(mutex_);
    if (live_workers_ >= options_.workers) return;
    ++live_workers_;
  }
  absl::StatusOr<std::unique_ptr<Worker>> replacement = StartWorker();
  if (replacement.ok()) {
    ReleaseWorker(*std::move(replacement));
  } else {
    spdlog::warn("compile worker replacement failed: {}", replacement.status().ToString());
    std::lock_guard lock(mutex_);
    --live_workers_;
    worker_available_.notify_one();
  }
}

absl::StatusOr<v1::CompileResult> CompileService::RunInWorker(
    const std::string& source, const std::vector<std::string>& options, const std::string& arch,
    const std::vector<std::string>& name_expressions, bool host_build_probe, bool* cacheable) {
  *cacheable = false;
  internal::CompileJobRequest request;
  request.set_source(source);
  for (const std::string& option : options) request.add_options(option);
  request.set_arch(arch);
  for (const std::string& expression : name_expressions) request.add_name_expressions(expression);
  request.set_host_build_probe(host_build_probe);

  // An idle worker may have died since its last job: one retry with another.
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<std::unique_ptr<Worker>> worker = AcquireWorker();
    if (!worker.ok()) return worker.status();
    const auto start = std::chrono::steady_clock::now();
    if (absl::Status sent = (*worker)->process.Send(request); !sent.ok()) {
      DiscardWorker(*std::move(worker));
      if (attempt == 0) continue;
      return sent;
    }
    internal::CompileJobResponse response;
    const absl::Status received =
        (*worker)->process.Receive(&response, absl::Now() + options_.timeout);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (received.ok()) {
      const bool retire =
          options_.max_jobs_per_worker > 0 && ++(*worker)->jobs >= options_.max_jobs_per_worker;
      if (retire) {
        DiscardWorker(*std::move(worker), /*retired=*/true);
      } else {
        ReleaseWorker(*std::move(worker));
      }
      if (!response.error().empty()) return absl::InternalError(response.error());
      v1::CompileResult result = std::move(*response.mutable_result());
      result.set_compile_seconds(seconds);
      *cacheable = true;
      return result;
    }
    v1::CompileResult failed;
    failed.set_success(false);
    failed.set_arch(arch);
    failed.set_toolkit_version(toolkit_version_);
    for (const std::string& option : options) failed.add_options(option);
    failed.set_compile_seconds(seconds);
    if (absl::IsDeadlineExceeded(received)) {
      failed.set_log(
          absl::StrCat("compile exceeded the ", FormatSeconds(options_.timeout), " limit"));
      {
        std::lock_guard lock(mutex_);
        ++stats_.timeouts;
      }
    } else if (absl::IsUnavailable(received)) {
      failed.set_log(absl::StrCat("the compiler died while compiling (", received.message(),
                                  "); its memory limit is ", FormatBytes(options_.memory_bytes)));
    } else {
      DiscardWorker(*std::move(worker));
      return received;
    }
    v1::Diagnostic* d = failed.add_diagnostics();
    d->set_severity("error");
    d->set_message(failed.log());
    spdlog::warn("compile worker {}: {}", (*worker)->process.pid(), failed.log());
    DiscardWorker(*std::move(worker));
    return failed;
  }
}

absl::StatusOr<v1::CompileResult> CompileService::Compile(const CompileJob& job) {
  if (job.source.empty()) return absl::InvalidArgumentError("source is empty");
  if (job.source.size() > options_.max_source_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("source is ", job.source.size(),
                                                   " bytes; the limit is ",
                                                   FormatBytes(options_.max_source_bytes)));
  }
  const std::string arch = job.options.arch().empty() ? options_.default_arch : job.options.arch();
  if (absl::Status s = CheckArch(arch); !s.ok()) {
    return Refused(std::string(s.message()), arch, job.options.options());
  }
  absl::StatusOr<std::vector<std::string>> checked = CheckUserOptions(
      std::vector<std::string>(job.options.options().begin(), job.options.options().end()));
  if (!checked.ok()) {
    return Refused(std::string(checked.status().message()), arch, job.options.options());
  }
  absl::StatusOr<std::vector<std::string>> name_expressions =
      CheckNameExpressions(std::vector<std::string>(job.options.name_expressions().begin(),
                                                    job.options.name_expressions().end()));
  if (!name_expressions.ok()) {
    return Refused(std::string(name_expressions.status().message()), arch, job.options.options());
  }

  const std::string key = CacheKey({.source = job.source,
                                    .options = &*checked,
                                    .arch = arch,
                                    .toolkit_version = toolkit_version_,
                                    .prelude = prelude_,
                                    .name_expressions = &*name_expressions,
                                    .host_build_probe = job.want_host_build_probe});
  auto deliver = [&](const v1::CompileResult& full, bool hit) {
    v1::CompileResult result;
    // Copy all but the bulky fields the job did not ask for.
    result = full;
    if (!job.want_ptx) result.clear_ptx();
    if (!job.want_cubin) result.clear_cubin();
    result.set_cache_hit(hit);
    if (hit) result.set_compile_seconds(0);
    return result;
  };
  if (cache_) {
    if (std::shared_ptr<const v1::CompileResult> hit = cache_->Lookup(key)) {
      std::lock_guard lock(mutex_);
      ++stats_.cache_hits;
      return deliver(*hit, true);
    }
  }
  if (job.without_worker) return absl::NotFoundError("not compiled yet");

  // Single flight: the first caller of a key compiles, the others wait.
  std::shared_ptr<InFlight> flight;
  bool leader = false;
  {
    std::unique_lock lock(mutex_);
    auto [it, inserted] = inflight_.try_emplace(key);
    if (inserted) {
      it->second = std::make_shared<InFlight>();
      leader = true;
    }
    flight = it->second;
    if (!leader) {
      ++stats_.shared_inflight;
      flight->done_cv.wait(lock, [&] { return flight->done; });
      if (!flight->result.ok()) return flight->result.status();
      return deliver(*flight->result, false);
    }
  }

  bool cacheable = false;
  absl::StatusOr<v1::CompileResult> result = RunInWorker(
      job.source, *checked, arch, *name_expressions, job.want_host_build_probe, &cacheable);
  if (result.ok() && cacheable && cache_) {
    cache_->Insert(key, std::make_shared<const v1::CompileResult>(*result));
  }
  {
    std::lock_guard lock(mutex_);
    ++stats_.compiles;
    flight->result = result;
    flight->done = true;
    inflight_.erase(key);
  }
  flight->done_cv.notify_all();
  if (!result.ok()) return result.status();
  return deliver(*result, false);
}

CompileServiceStats CompileService::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace kerneleval::compile
