// CompileService: the compile stage the engine, the server and the CLI use.
// Compiles run in a pool of sandboxed worker processes (`kerneleval-worker
// compile`), each under a wall-clock and a memory limit; results are cached by
// content (memory LRU + optional directory) and identical concurrent compiles
// run once. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "evaluator/compile/compile_cache.h"
#include "evaluator/process/worker_process.h"
#include "evaluator/sandbox/sandbox.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::compile {

// KERNELEVAL_UNSANDBOXED_COMPILE_FOR_TRUSTED_SOURCES=1 in the environment:
// compile workers run without their sandbox (no file-system view, no
// seccomp filter), for an operator compiling only sources it trusts (the
// GPU check's own kernels) on a machine where the sandbox cannot be built
// (gVisor has no Landlock). A submission could then read any file the
// server can: never for untrusted sources. The service's
// sandbox_description() starts with kUnsandboxedDescriptionPrefix, and it
// warns at start.
inline constexpr char kUnsandboxedCompileVariable[] =
    "KERNELEVAL_UNSANDBOXED_COMPILE_FOR_TRUSTED_SOURCES";
inline constexpr char kUnsandboxedDescriptionPrefix[] = "NONE (";

struct CompileServiceOptions {
  int workers = 0;                             // worker processes; 0: one per core
  absl::Duration timeout = absl::Seconds(30);  // wall-clock limit per compile
  uint64_t memory_bytes = uint64_t{4} << 30;   // RLIMIT_AS per worker [bytes]
  size_t max_source_bytes = size_t{1} << 20;
  std::string default_arch = "sm_90";  // for jobs that name none
  bool cache = true;                   // false: every compile runs (benchmarks)
  uint64_t cache_memory_bytes = uint64_t{256} << 20;
  std::string cache_dir;  // on-disk cache shared across restarts; empty: memory only
  uint64_t cache_dir_bytes = uint64_t{4} << 30;  // bound on cache_dir; 0: none
  // NVRTC's automatic precompiled headers (--pch) in each worker's scratch
  // directory: repeat compiles including CUB or cuda/std reuse the parsed
  // headers.
  bool precompiled_headers = true;
  uint64_t pch_dir_limit_bytes = uint64_t{2} << 30;  // a worker clears its PCHs beyond this
  // How workers confine their file system view: both Landlock and a mount
  // namespace where the kernel allows, else whichever works. Tests pick one
  // mechanism to check each fallback on its own. Never "none", unless the
  // process environment has kUnsandboxedCompileVariable=1 (below).
  sandbox::FilesystemMechanism filesystem_sandbox =
      sandbox::FilesystemMechanism::kLandlockAndMountNamespace;
  std::string scratch_dir;    // parent of the workers' scratch dirs; empty: $TMPDIR or /tmp
  std::string worker_binary;  // empty: process::DefaultWorkerBinary()
  // Variables the workers get besides (or instead of) this process's
  // (process::WorkerOptions::extra_env): tests set the unsandboxed switch
  // here rather than in their own, threaded, environment.
  std::vector<std::string> worker_env;
  // Workers started by Create() (the first one also proves the worker binary,
  // the toolkit and the sandbox work).
  int prestart_workers = 1;
  // A worker is replaced after this many compiles (0: never): NVRTC's heap
  // and the PCH directory grow in a long-lived process, and a worker that a
  // hostile source ever subverted would otherwise keep compiling for other
  // clients. The replacement starts at once, as after a death: the compile
  // that reached the limit pays one worker start (once per this many).
  uint64_t max_jobs_per_worker = 500;
};

struct CompileJob {
  std::string source;
  v1::CompileOptions options;  // arch empty: CompileServiceOptions.default_arch
  bool want_ptx = false;
  bool want_cubin = false;
  // Also probe what NVRTC's preprocessor makes of the source
  // (CompileResult.host_build_probe), which the CPU backend's host build
  // must agree with. Such results are cached apart.
  bool want_host_build_probe = false;
  // Answer only what needs no worker (a cache hit, a refused option or
  // architecture); NOT_FOUND instead of compiling. The engine answers such
  // Compile calls at once rather than in the caller's turn on its pool.
  bool without_worker = false;
};

struct CompileServiceStats {
  uint64_t compiles = 0;  // jobs that ran in a worker
  uint64_t cache_hits = 0;
  uint64_t shared_inflight = 0;  // jobs that waited for an identical running one
  uint64_t timeouts = 0;
  uint64_t worker_deaths = 0;  // timeouts included
  uint64_t workers_started = 0;
  uint64_t workers_retired = 0;  // replaced after max_jobs_per_worker compiles
};

class CompileService {
 public:
  // Starts `prestart_workers` workers; an error when the worker binary, the
  // toolkit or the sandbox is unusable (the service never compiles
  // unsandboxed).
  static absl::StatusOr<std::unique_ptr<CompileService>> Create(
      const CompileServiceOptions& options);
  ~CompileService();
  CompileService(const CompileService&) = delete;
  CompileService& operator=(const CompileService&) = delete;
  CompileService(CompileService&&) = delete;
  CompileService& operator=(CompileService&&) = delete;

  // Verdicts (a CompileResult, success true or false): compile errors,
  // refused options and malformed architectures (the log names them), a
  // compile over the time limit ("compile exceeded the 30 s limit"; the
  // worker is killed and replaced), a worker that died compiling (e.g. out of
  // memory). Errors: InvalidArgument for an empty or oversize source;
  // Unavailable/FailedPrecondition/Internal when no worker could be started
  // or NVRTC could not run.
  // compile_seconds is the wall time of the worker call (0 on a cache hit);
  // ptx and cubin are present only when the job asks for them.
  absl::StatusOr<v1::CompileResult> Compile(const CompileJob& job);

  [[nodiscard]] CompileServiceStats stats() const;
  [[nodiscard]] const CompileServiceOptions& options() const { return options_; }
  [[nodiscard]] const std::string& toolkit_version() const { return toolkit_version_; }
  // How the workers are confined, as the first worker reported it.
  [[nodiscard]] const std::string& sandbox_description() const { return sandbox_; }

 private:
  struct Worker;
  struct InFlight;
  explicit CompileService(const CompileServiceOptions& options);

  absl::StatusOr<std::unique_ptr<Worker>> StartWorker();
  absl::StatusOr<std::unique_ptr<Worker>> AcquireWorker();
  void ReleaseWorker(std::unique_ptr<Worker> worker);
  // Kills `worker` and starts its replacement: after a death (crash,
  // timeout) or, `retired`, after max_jobs_per_worker compiles.
  void DiscardWorker(std::unique_ptr<Worker> worker, bool retired = false);
  absl::StatusOr<v1::CompileResult> RunInWorker(const std::string& source,
                                                const std::vector<std::string>& options,
                                                const std::string& arch,
                                                const std::vector<std::string>& name_expressions,
                                                bool host_build_probe, bool* cacheable);

  CompileServiceOptions options_;
  std::string toolkit_version_;
  std::string prelude_;  // content, part of the cache key
  std::string sandbox_;
  std::unique_ptr<CompileCache> cache_;

  mutable std::mutex mutex_;
  std::condition_variable worker_available_;
  std::vector<std::unique_ptr<Worker>> idle_;
  int live_workers_ = 0;  // idle + busy + starting
  std::map<std::string, std::shared_ptr<InFlight>> inflight_;
  CompileServiceStats stats_;
};

}  // namespace kerneleval::compile
