// The seam between the engine and where kernels run. Implementations: the CPU
// backend (evaluator/cpu/, host emulation of CUDA) and the CUDA backend
// (evaluator/cuda/, driver API). Both keep untrusted code in worker processes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "kerneleval/internal/worker.pb.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval {

// A RESOURCE_EXHAUSTED that no retry cures: the request's buffers exceed a
// fixed limit of the backend, as its message says ("... exceed the CPU
// backend's limit of ..."; a worker's status crosses a process boundary as
// text). Others (fork, mmap, device memory in use) may pass on a retry.
inline bool ExceedsBackendLimit(const absl::Status& status) {
  return absl::IsResourceExhausted(status) &&
         absl::StrContains(status.message(), "backend's limit");
}

// An UNAVAILABLE that is a worker's own work failing (its L2 flush, stream
// hold, input generation, stashes: CudaWorker::OwnWorkFailed), not any
// program's: the engine tries again but never turns it into a verdict.
// Recognised by its message, as ExceedsBackendLimit.
inline constexpr char kWorkerOwnFailurePrefix[] = "the worker's own ";
inline bool IsWorkerOwnFailure(const absl::Status& status) {
  return absl::IsUnavailable(status) && absl::StartsWith(status.message(), kWorkerOwnFailurePrefix);
}

// What Backend::Prepare did.
struct PrepareReport {
  int builds = 0;            // programs built
  int cache_hits = 0;        // programs found built already
  double build_seconds = 0;  // [s] the builds took
  // A build that failed (the submission's error, or its limit).
  std::string failure;
  // The correctness build's failure, as the first Run would answer it (the
  // same build under the same limit): the engine gives it as the verdict
  // instead of building again on the device.
  std::optional<internal::RunFailure> run_failure;
};

class Backend {
 public:
  virtual ~Backend() = default;

  [[nodiscard]] virtual std::string_view name() const = 0;  // "cpu" | "cuda"
  [[nodiscard]] virtual v1::DeviceInfo device() const = 0;
  // Architecture NVRTC should compile for, e.g. "sm_90"; empty: the engine's
  // default (the CPU backend runs the source, not the CUBIN).
  [[nodiscard]] virtual std::string target_arch() const = 0;
  // Worker processes started after the first: each replaced one that
  // crashed, hung, broke its context or was killed. Monotonic.
  [[nodiscard]] virtual uint64_t worker_restarts() const = 0;

  // Optional work on a program before its runs, off its device's time: the
  // engine's compile stage calls it, in parallel for a group's candidates
  // and for the reference, once a program compiled and its plan resolved on
  // every shape. `run`: the program and one case per correctness shape
  // (plans, no seeds); `timing`: the program alone on the timed shape (no
  // programs when it will not be timed). The CPU backend builds the host
  // objects its Run and Time calls will load into its cache. Best effort:
  // whatever happens here, a build error included, the runs answer as they
  // would have without it (they build what is missing themselves). Ends by
  // `deadline`. The default does nothing.
  virtual absl::StatusOr<PrepareReport> Prepare(const internal::RunRequest& run,
                                                const internal::TimingRequest& timing,
                                                absl::Time deadline) {
    return PrepareReport{};
  }
  // Ends the Prepare calls in progress and refuses new ones (shutdown: a
  // build may take the whole compile limit, and the engine's shutdown
  // waits for its compile stage). The default does nothing.
  virtual void CancelPreparations() {}

  // Runs one program on every case in order: inputs generated in the worker
  // from each case's seed (evaluator/data/prng.h), outputs and scratch
  // poisoned before each case, inputs checked unchanged after it. A crash or
  // a hang is RunResult.failure (stage "runtime" / "timeout") and the worker
  // is replaced; a non-OK status means nothing could run (infrastructure).
  virtual absl::StatusOr<internal::RunResult> Run(const internal::RunRequest& request) = 0;

  // Times programs[0] (the reference) and the others interleaved on one
  // shape, on fresh inputs every round; returns raw samples and the last outputs per
  // input set of every program, for checking.
  virtual absl::StatusOr<internal::TimingResult> Time(const internal::TimingRequest& request) = 0;
};

}  // namespace kerneleval
