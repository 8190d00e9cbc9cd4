// CpuBackend: the Backend that runs submissions on the host CPU, so that the
// whole evaluator (compile, run, timeout, correctness, timing) works on
// machines without a GPU. Its timings are CPU times of an emulation, not GPU
// times: speedups measured here say little about a GPU.
//
// Engine side only: every request goes to a `kerneleval-worker cpu` process
// (cpu_worker.h), which compiles the source with the host compiler in a
// sandbox and runs kernels in sandboxed runner processes. A worker that fails
// (a kernel failure, a timeout, a crash) is replaced before the next request.
// Thread-safe; requests are served one at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "evaluator/engine/backend.h"
#include "evaluator/process/worker_process.h"

namespace kerneleval::cpu {

struct CpuBackendOptions {
  std::string worker_binary;  // empty: process::DefaultWorkerBinary()
  // [s] Kernel execution limit of one Run or Time call when the request gives
  // none (compiles have their own limit below).
  double timeout_seconds = 10;
  double compile_timeout_seconds = 60;  // [s] per host compile
  // [bytes] Address-space limit of the worker, its compiler and its runners.
  uint64_t memory_bytes = uint64_t{4} << 30;
  uint64_t max_output_bytes = uint64_t{1} << 30;  // [bytes] outputs of one reply
  unsigned threads = 0;  // OS threads running blocks; 0: hardware concurrency (at most 16)
  uint64_t fiber_stack_bytes = 64 << 10;  // [bytes] stack per GPU thread
  uint64_t print_budget_bytes = 1 << 20;  // [bytes] device printf output per run (discarded)
  uint64_t heap_bytes = 8 << 20;          // [bytes] device malloc heap per run
  // Compiled objects and the precompiled prelude; empty: env
  // KERNELEVAL_CPU_CACHE_DIR (kept), else a private temporary directory
  // removed with the backend.
  std::string cache_dir;
  std::string prelude_dir;       // empty: KERNELEVAL_CPU_PRELUDE_DIR or the built-in one
  std::string cuda_include_dir;  // empty: KERNELEVAL_CUDA_INCLUDE_DIR or the build's toolkit
  std::string compiler = "g++";
  bool precompiled_prelude = true;
  // Correctness runs on a build whose threads interleave at read-modify-
  // writes (a plain one of shared data loses updates, as on a GPU) in even
  // cases and run one after another in odd ones; timing runs the plain
  // build. Off: both run the plain build.
  bool interleaved_runs = true;
  // Start the worker and build the precompiled prelude in Create() (a few
  // seconds once per cache directory) rather than in the first request.
  bool warm_up = true;
};

class CpuBackend : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<CpuBackend>> Create(CpuBackendOptions options);
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;
  CpuBackend(CpuBackend&&) = delete;
  CpuBackend& operator=(CpuBackend&&) = delete;
  ~CpuBackend() override;

  [[nodiscard]] std::string_view name() const override { return "cpu"; }
  [[nodiscard]] v1::DeviceInfo device() const override { return device_; }
  [[nodiscard]] std::string target_arch() const override { return {}; }
  [[nodiscard]] uint64_t worker_restarts() const override {
    const uint64_t started = workers_started();
    return started > 0 ? started - 1 : 0;
  }

  // Builds what `run` and `timing` will load (the correctness build, the
  // timed build) into the cache, in a builder process of its own (a worker
  // in build-only mode, kept for the next Prepare), so that their first Run
  // and Time find it built. Calls run in parallel, beside Run and Time. A
  // build the deadline cuts goes on in its builder (the worker's run waits
  // for it rather than building it again).
  absl::StatusOr<PrepareReport> Prepare(const internal::RunRequest& run,
                                        const internal::TimingRequest& timing,
                                        absl::Time deadline) override;
  // Kills every builder, those building for a Prepare in progress included
  // (which then fails), and refuses later Prepare calls.
  void CancelPreparations() override;

  // Compile failures (including features the CPU backend cannot run) come
  // back as RunResult.failure with stage "compile".
  absl::StatusOr<internal::RunResult> Run(const internal::RunRequest& request) override;
  absl::StatusOr<internal::TimingResult> Time(const internal::TimingRequest& request) override;

  // Worker processes started so far (tests: a failure replaces the worker).
  [[nodiscard]] uint64_t workers_started() const;
  [[nodiscard]] const CpuBackendOptions& options() const { return options_; }

 private:
  CpuBackend(CpuBackendOptions options, bool owns_cache_dir);

  // Sends `request` to the worker and unpacks the reply into `reply`;
  // replaces the worker after any failure of the call.
  absl::Status Call(const google::protobuf::Message& request, google::protobuf::Message* reply,
                    double budget_seconds);
  // A worker process: the one that runs (build_only false) or a builder.
  absl::StatusOr<process::WorkerProcess> StartWorker(bool build_only) const;

  // Builders no Prepare holds now (at most kIdleBuilders), and those a
  // Prepare's deadline left finishing a build (at most kFinishingBuilders).
  static constexpr size_t kIdleBuilders = 4;
  static constexpr size_t kFinishingBuilders = 8;

  CpuBackendOptions options_;
  bool owns_cache_dir_;
  v1::DeviceInfo device_;
  mutable std::mutex mutex_;
  std::optional<process::WorkerProcess> worker_;
  uint64_t workers_started_ = 0;
  std::mutex builders_mutex_;
  std::vector<process::WorkerProcess> idle_builders_;
  std::vector<process::WorkerProcess> finishing_builders_;
  // Process ids of the builders Prepare calls hold now (still unreaped),
  // and whether CancelPreparations was called.
  std::set<pid_t> busy_builders_;
  bool stopping_ = false;
};

}  // namespace kerneleval::cpu
