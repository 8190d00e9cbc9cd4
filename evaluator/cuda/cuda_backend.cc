#include "evaluator/cuda/cuda_backend.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "evaluator/cuda/cuda_worker.pb.h"
#include "evaluator/cuda/device.h"
#include "evaluator/timing/sampling.h"

#ifdef KERNELEVAL_HAVE_GPU_PEAKS
#include "gpu_peaks/peak_table.h"
#endif

namespace kerneleval::cuda {
namespace {

absl::Status StatusFromWire(const wire::WorkerError& error) {
  return absl::Status(static_cast<absl::StatusCode>(error.code()), error.message());
}

}  // namespace

CudaBackend::CudaBackend(int device, CudaBackendOptions options)
    : device_(device), options_(std::move(options)) {}

CudaBackend::~CudaBackend() {
  std::lock_guard<std::mutex> lock(mutex_);
  worker_.reset();  // closes the channel; the destructor kills and reaps
}

absl::StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(
    int device, const CudaBackendOptions& options) {
  process::IgnoreSigpipe();
  std::unique_ptr<CudaBackend> backend(new CudaBackend(device, options));
  std::lock_guard<std::mutex> lock(backend->mutex_);
  if (absl::Status status = backend->StartWorker(); !status.ok()) return status;
  return backend;
}

absl::Status CudaBackend::StartWorker() {
  process::WorkerOptions worker_options;
  worker_options.binary = options_.worker_binary;
  worker_options.mode = "cuda";
  worker_options.extra_args = {"--device",
                               absl::StrCat(device_),
                               "--printf-fifo-bytes",
                               absl::StrCat(options_.printf_fifo_bytes),
                               "--malloc-heap-bytes",
                               absl::StrCat(options_.malloc_heap_bytes)};
  if (options_.calibrate) worker_options.extra_args.push_back("--calibrate");
  // Whatever the server inherited (the options' own entries still win): with
  // CUDA_LAUNCH_BLOCKING=1 every launch would wait for the stream-holding
  // kernel, and every sample's hold would time out; with
  // CUDA_DEVICE_WAITS_ON_EXCEPTION=1 a kernel's fault would hang until the
  // time limit (a "timeout" instead of "runtime"); with
  // CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 each fault would write a GPU core
  // dump.
  worker_options.extra_env = {"CUDA_LAUNCH_BLOCKING=0", "CUDA_DEVICE_WAITS_ON_EXCEPTION",
                              "CUDA_ENABLE_COREDUMP_ON_EXCEPTION",
                              "CUDA_ENABLE_USER_TRIGGERED_COREDUMP"};
  worker_options.extra_env.insert(worker_options.extra_env.end(), options_.extra_env.begin(),
                                  options_.extra_env.end());
  worker_options.address_space_bytes = 0;  // the driver reserves huge virtual ranges
  absl::StatusOr<process::WorkerProcess> started = process::WorkerProcess::Start(worker_options);
  if (!started.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot start the CUDA worker: ", started.status().message()));
  }
  wire::WorkerRequest request;
  request.mutable_describe();
  wire::WorkerReply reply;
  const absl::Status called =
      started->Call(request, &reply, absl::Now() + absl::Seconds(options_.startup_timeout_seconds));
  if (!called.ok()) {
    return absl::UnavailableError(
        absl::StrCat("the CUDA worker for device ", device_, " did not start: ", called.message()));
  }
  if (reply.has_error()) return StatusFromWire(reply.error());
  if (!reply.has_device()) return absl::InternalError("the CUDA worker sent no DeviceInfo");
  v1::DeviceInfo info = reply.device();
#ifdef KERNELEVAL_HAVE_GPU_PEAKS
  if (options_.peak_table.has_value()) {
    MatchPeaks(*options_.peak_table, &info);
  } else if (absl::StatusOr<v1::GpuPeakTable> table = gpu_peaks::LoadEmbeddedPeakTable();
             table.ok()) {
    MatchPeaks(*table, &info);
  }
#else
  if (options_.peak_table.has_value()) MatchPeaks(*options_.peak_table, &info);
#endif
  spdlog::info("cuda:{}: worker {} ready ({}, sm_{}{}, roofline {})", device_, started->pid(),
               info.name(), info.compute_capability_major(), info.compute_capability_minor(),
               info.roofline_known() ? "known" : "unknown");
  worker_.emplace(*std::move(started));
  std::lock_guard<std::mutex> state(state_mutex_);
  device_info_ = std::move(info);
  worker_ready_ = true;
  if (starts_++ > 0) ++restarts_;
  return absl::OkStatus();
}

void CudaBackend::DropWorker() {
  if (worker_.has_value()) worker_->Kill();
  worker_.reset();
  std::lock_guard<std::mutex> state(state_mutex_);
  worker_ready_ = false;
}

absl::Status CudaBackend::Call(const wire::WorkerRequest& request, double timeout_seconds,
                               wire::WorkerReply* reply) {
  if (!worker_.has_value() || !worker_->Alive()) {
    worker_.reset();
    if (absl::Status status = StartWorker(); !status.ok()) return status;
  }
  const double timeout = timeout_seconds > 0 ? timeout_seconds : options_.default_timeout_seconds;
  const absl::Time deadline = absl::Now() + absl::Seconds(timeout + options_.kill_grace_seconds);
  absl::Status status = worker_->Call(request, reply, deadline);
  if (absl::IsDeadlineExceeded(status)) {
    spdlog::warn("cuda:{}: worker {} did not answer by the deadline: killed", device_,
                 worker_->pid());
  } else if (!status.ok()) {
    const std::string how = worker_->exit_description();
    spdlog::warn("cuda:{}: worker {} died: {}", device_, worker_->pid(),
                 how.empty() ? std::string(status.message()) : how);
    status = absl::AbortedError(how.empty() ? std::string(status.message()) : how);
  } else {
    // Also in the Run/Time result (RunResult.notes, TimingResult.notes).
    for (const std::string& note : reply->notes()) spdlog::info("cuda:{}: {}", device_, note);
    if (!reply->worker_exiting()) return absl::OkStatus();
    // After a fault, a hang, or a program that used the device heap (the
    // notes above say which).
    spdlog::warn("cuda:{}: worker {} exits after this request", device_, worker_->pid());
  }
  // The worker is gone or going: replace it now, so that the next evaluation
  // does not pay for the start. A failure here is retried by the next call.
  DropWorker();
  if (absl::Status restarted = StartWorker(); !restarted.ok()) {
    spdlog::error("cuda:{}: {}", device_, std::string(restarted.message()));
  }
  return status;
}

v1::DeviceInfo CudaBackend::device() const {
  std::lock_guard<std::mutex> state(state_mutex_);
  v1::DeviceInfo info = device_info_;
  info.set_ready(worker_ready_);
  return info;
}

std::string CudaBackend::target_arch() const {
  std::lock_guard<std::mutex> state(state_mutex_);
  return NvrtcTargetArch(static_cast<int>(device_info_.compute_capability_major()),
                         static_cast<int>(device_info_.compute_capability_minor()));
}

int CudaBackend::restarts() const {
  std::lock_guard<std::mutex> state(state_mutex_);
  return restarts_;
}

absl::StatusOr<internal::RunResult> CudaBackend::Run(const internal::RunRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  wire::WorkerRequest wire_request;
  *wire_request.mutable_run() = request;
  wire::WorkerReply reply;
  const absl::Status status = Call(wire_request, request.timeout_seconds(), &reply);
  internal::RunResult result;
  if (absl::IsDeadlineExceeded(status) || absl::IsAborted(status)) {
    internal::RunFailure* failure = result.mutable_failure();
    failure->set_stage(absl::IsDeadlineExceeded(status) ? "timeout" : "runtime");
    failure->set_message(absl::IsDeadlineExceeded(status)
                             ? "the worker did not answer by the deadline and was killed"
                             : absl::StrCat("the CUDA worker died: ", status.message()));
    failure->set_program(request.program().label());
    return result;
  }
  if (!status.ok()) return status;
  if (reply.has_error()) return StatusFromWire(reply.error());
  if (!reply.has_run()) return absl::InternalError("the CUDA worker sent no RunResult");
  internal::RunResult run = std::move(*reply.mutable_run());
  for (std::string& note : *reply.mutable_notes()) run.add_notes(std::move(note));
  return run;
}

absl::StatusOr<internal::TimingResult> CudaBackend::Time(const internal::TimingRequest& request) {
  std::lock_guard<std::mutex> lock(mutex_);
  wire::WorkerRequest wire_request;
  *wire_request.mutable_time() = request;
  wire::WorkerReply reply;
  // The worker's own deadline when the request sets none: 2x the sampling
  // cap plus a minute (warm-up, allocation, input generation).
  double timeout = request.timeout_seconds();
  if (timeout <= 0) {
    timeout = 2 * timing::WithDefaults(request.config()).max_seconds() + 60;
  }
  const absl::Status status = Call(wire_request, timeout, &reply);
  internal::TimingResult result;
  if (absl::IsDeadlineExceeded(status) || absl::IsAborted(status)) {
    internal::RunFailure* failure = result.mutable_failure();
    failure->set_stage(absl::IsDeadlineExceeded(status) ? "timeout" : "runtime");
    failure->set_message(absl::IsDeadlineExceeded(status)
                             ? "the worker did not answer by the deadline and was killed"
                             : absl::StrCat("the CUDA worker died: ", status.message()));
    return result;
  }
  if (!status.ok()) return status;
  if (reply.has_error()) return StatusFromWire(reply.error());
  if (!reply.has_time()) return absl::InternalError("the CUDA worker sent no TimingResult");
  internal::TimingResult timed = std::move(*reply.mutable_time());
  for (std::string& note : *reply.mutable_notes()) timed.add_notes(std::move(note));
  return timed;
}

}  // namespace kerneleval::cuda
