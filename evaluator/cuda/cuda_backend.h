// The CUDA backend: the engine's Backend for one GPU. Every call goes to a
// `kerneleval-worker cuda --device N` child process (evaluator/cuda/
// cuda_worker.h) that owns the device's context; the engine process itself
// never loads the CUDA driver. Calls are serialised by a mutex: one
// correctness run or timing at a time per device, so timings never overlap.
//
// Faults of the program are results, not errors:
//   a kernel fault (illegal address, ...)   RunFailure stage "runtime"; worker replaced
//   a launch over the device's limits       RunFailure stage "runtime"; worker kept
//   still running at the deadline           RunFailure stage "timeout"; worker killed, replaced
//   the worker died mid-request             RunFailure stage "runtime"; worker replaced
// Non-OK statuses mean nothing could be judged: FAILED_PRECONDITION (no
// driver / no device), UNAVAILABLE (no worker could be started),
// INVALID_ARGUMENT (a malformed request), RESOURCE_EXHAUSTED (the problem's
// buffers do not fit), INTERNAL.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "evaluator/engine/backend.h"
#include "evaluator/process/worker_process.h"
#include "kerneleval/v1/gpu_peaks.pb.h"

namespace kerneleval::cuda {

namespace wire {
class WorkerRequest;
class WorkerReply;
}  // namespace wire

struct CudaBackendOptions {
  std::string worker_binary;  // empty: process::DefaultWorkerBinary()
  bool calibrate = false;     // measure bandwidth and FP32 FLOP/s at worker start
  uint64_t printf_fifo_bytes = uint64_t{1} << 20;
  uint64_t malloc_heap_bytes = uint64_t{8} << 20;
  // A worker's start: driver load, context, calibration [s].
  double startup_timeout_seconds = 120;
  // On top of a request's own timeout before the engine kills the worker [s]:
  // the worker enforces the timeout itself and answers "timeout"; this catches
  // a worker stuck inside the driver.
  double kill_grace_seconds = 10;
  // Default request timeout when a request carries none [s].
  double default_timeout_seconds = 60;
  // The peak table to match the device against; nullopt: the embedded table.
  std::optional<v1::GpuPeakTable> peak_table;
  std::vector<std::string> extra_env;  // "NAME=VALUE" for the worker
};

class CudaBackend : public Backend {
 public:
  // Starts the device's worker and asks it to describe the device. Fails
  // cleanly (FAILED_PRECONDITION, the worker's message: "no CUDA driver
  // (libcuda.so.1 not found: ...)", "no CUDA device", INVALID_ARGUMENT "no
  // CUDA device 3 (this machine has 1)") on machines without one.
  static absl::StatusOr<std::unique_ptr<CudaBackend>> Create(
      int device, const CudaBackendOptions& options = {});
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;
  CudaBackend(CudaBackend&&) = delete;
  CudaBackend& operator=(CudaBackend&&) = delete;
  ~CudaBackend() override;

  [[nodiscard]] std::string_view name() const override { return "cuda"; }
  [[nodiscard]] v1::DeviceInfo device() const override;
  [[nodiscard]] std::string target_arch() const override;  // "sm_90a" (NvrtcTargetArch)
  [[nodiscard]] uint64_t worker_restarts() const override {
    return static_cast<uint64_t>(restarts());
  }

  absl::StatusOr<internal::RunResult> Run(const internal::RunRequest& request) override;
  absl::StatusOr<internal::TimingResult> Time(const internal::TimingRequest& request) override;

  // Workers started after the first (crashes, hangs, sticky errors).
  [[nodiscard]] int restarts() const;

 private:
  CudaBackend(int device, CudaBackendOptions options);

  // Starts a worker and reads its DeviceInfo; caller holds mutex_.
  absl::Status StartWorker();
  // Sends a request to the worker (started if needed) and waits up to
  // timeout + grace. OK with `reply` filled; DEADLINE_EXCEEDED: the worker
  // was killed; ABORTED: it died (message: how); other: could not start one.
  // Replaces the worker whenever it is gone or says it is exiting.
  absl::Status Call(const wire::WorkerRequest& request, double timeout_seconds,
                    wire::WorkerReply* reply);
  void DropWorker();

  const int device_;
  const CudaBackendOptions options_;
  // Held for a whole call: one run or timing at a time on the device.
  std::mutex mutex_;
  std::optional<process::WorkerProcess> worker_;  // guarded by mutex_
  int starts_ = 0;                                // guarded by mutex_
  // What device() and restarts() read: never blocked by a call in progress.
  mutable std::mutex state_mutex_;
  v1::DeviceInfo device_info_;
  bool worker_ready_ = false;
  int restarts_ = 0;
};

}  // namespace kerneleval::cuda
