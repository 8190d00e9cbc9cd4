// A worker process: untrusted or fragile work (compiles, kernels) runs in a
// child that the engine can kill and replace. The child is `kerneleval-worker
// <mode>` with a socket on fd 3 (kWorkerChannelFd) speaking framing.h.
#pragma once

#include <google/protobuf/message_lite.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kerneleval::process {

inline constexpr int kWorkerChannelFd = 3;

struct WorkerOptions {
  std::string binary;  // empty: DefaultWorkerBinary()
  std::string mode;    // first argument, e.g. "compile", "cpu", "cuda"
  std::vector<std::string> extra_args;
  // "NAME=VALUE" replaces the inherited NAME (or adds it); "NAME" removes it;
  // of two entries of one name, the later wins.
  std::vector<std::string> extra_env;
  // Address-space limit [bytes]; 0 = none (the CUDA driver reserves huge
  // virtual ranges, so CUDA workers run without one).
  uint64_t address_space_bytes = 0;
  uint64_t max_file_bytes = uint64_t{1} << 30;  // RLIMIT_FSIZE [bytes]
  uint64_t max_open_files = 256;
};

// Owns one child process (and its process group). Move-only; the destructor
// kills and reaps the child, never throws.
class WorkerProcess {
 public:
  static absl::StatusOr<WorkerProcess> Start(const WorkerOptions& options);

  WorkerProcess(WorkerProcess&& other) noexcept;
  WorkerProcess& operator=(WorkerProcess&& other) noexcept;
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;
  ~WorkerProcess();

  absl::Status Send(const google::protobuf::MessageLite& message);
  // Waits for one reply until `deadline`. DeadlineExceeded: the worker is
  // still running (the caller usually kills it). Unavailable: the worker died;
  // the message says how ("killed by signal 11 (SIGSEGV)").
  absl::Status Receive(google::protobuf::MessageLite* message, absl::Time deadline);

  // Sends a request and waits for its reply; on a timeout the worker is killed.
  absl::Status Call(const google::protobuf::MessageLite& request,
                    google::protobuf::MessageLite* reply, absl::Time deadline);

  // SIGKILL to the whole process group, then reap. Idempotent.
  void Kill() noexcept;
  // True while the child has not exited (reaps it if it has).
  bool Alive() noexcept;
  [[nodiscard]] pid_t pid() const { return pid_; }
  // How the child ended, e.g. "exited with status 3", "killed by signal 9
  // (SIGKILL)"; empty while it runs.
  [[nodiscard]] const std::string& exit_description() const { return exit_description_; }
  [[nodiscard]] int term_signal() const { return term_signal_; }

 private:
  WorkerProcess(pid_t pid, int fd) : pid_(pid), fd_(fd) {}
  void Reap(bool block) noexcept;
  absl::Status DiedError(const absl::Status& cause);

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string exit_description_;
  int term_signal_ = 0;
};

// The worker binary: env KERNELEVAL_WORKER, else `kerneleval-worker` beside
// the running executable, else the build tree's copy.
std::string DefaultWorkerBinary();

// Ignores SIGPIPE process-wide (a dead worker must give an error, not a
// signal). Idempotent; call once at start-up of anything that talks to workers.
void IgnoreSigpipe();

}  // namespace kerneleval::process
