// Runner processes: where untrusted kernel code runs. The cpu worker starts
// one per Run request (and one per program of a Time request) as a fresh
// program image, `kerneleval-worker cpu-runner` (fork + exec: nothing of the
// worker's memory, e.g. another program's outputs it relayed, is in the
// runner's address space). The runner reads its job from its channel, closes
// every other descriptor (stdio goes to /dev/null), applies the file-system
// sandbox (it may read only the shared object) and the kKernel system-call
// profile (no fork/exec, no sockets) BEFORE dlopen() runs any code of the
// submission, runs, reports on its channel and exits. Each runner maps fresh
// buffers, so a program never sees memory another program wrote.
//
// Channel protocol (framing.h frames on a stream socket, fd 3 in the runner):
//   worker -> runner  the job: an internal::RunRequest (Run) or an
//                     internal::TimingRequest holding the one program to time,
//                     the input seeds and the config (Time).
//   runner -> worker  kLoadingFrame once sandboxed, right before dlopen(): a
//                     runner that ends before it is the harness's failure
//                     (infrastructure); any end after it is the kernel's.
//   Run:    runner -> worker  one internal::RunResult, then exit 0.
//   Time:   the program's buffers of every input set live in a memfd the
//           worker created and also maps (fd 5 in the runner; layout:
//           SharedBufferLayout). The worker generates every round's inputs
//           and poisons the outputs there itself, while the runner is
//           stopped, and reads the outputs from there: the runner runs only
//           while a sample is taken. runner -> worker "ready" after setup;
//           then per command frame from the worker ("R" set: run the plan,
//           "F": finish) one reply: "k", or for "F" an empty
//           internal::ProgramTiming, then exit 0.
// Failures: a fault ends the runner by its signal; a kernel error (trap,
// failed assert, deadlock, invalid launch) exits kKernelErrorExit with the
// message in the RunnerReport, a memfd page shared with the worker (fd 4).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "evaluator/cpu/device_runtime.h"
#include "google/protobuf/message_lite.h"
#include "kerneleval/internal/worker.pb.h"

namespace kerneleval::cpu {

inline constexpr int kKernelErrorExit = 70;  // message in RunnerReport::message
// The harness could not go on (sandbox, job, channel); before kLoadingFrame
// not the kernel's fault, after it possibly its doing.
inline constexpr int kSetupFailedExit = 71;
inline constexpr int kLoadFailedExit = 72;  // dlopen failed (message)
inline constexpr char kLoadingFrame[] = "loading";

// A page shared between the worker and a runner: where the runner was, and
// what went wrong. Written by the runner (and, in a fault, by its signal
// handler); read by the worker after the runner ended. Kernel code can write
// it too: it only ever feeds a failure message.
struct RunnerReport {
  static constexpr int kMaxBuffers = 64;
  struct BufferRange {
    uint64_t begin;
    uint64_t end;
    char name[48];
  };
  std::atomic<int32_t> case_index;    // -1 before the first case
  std::atomic<int32_t> launch_index;  // -1 outside launches
  std::atomic<int32_t> fault_signal;
  int32_t fault_code;
  uint64_t fault_address;
  uint32_t buffer_count;
  BufferRange buffers[kMaxBuffers];
  char message[4096];
};

enum class RunnerJob { kRunCases, kTimeProgram };

struct RunnerConfig {
  RunnerJob job = RunnerJob::kRunCases;
  std::string library_path;               // the compiled submission
  std::vector<std::string> kernel_names;  // launcher i of the library runs kernel_names[i]
  DeviceRuntimeOptions runtime;
  unsigned input_threads = 1;  // threads generating inputs

  // As arguments of `kerneleval-worker cpu-runner` and back.
  [[nodiscard]] std::vector<std::string> ToArgs() const;
  static RunnerConfig FromArgs(int argc, char** argv);
};

// Where the buffers of one plan lie in a timing memfd: input set s, buffer
// b (plan order) at file offset s * set_bytes + offsets[b]; its data starts
// GuardedDataOffset(bytes) into those pages (the runner maps them between
// guard pages, like GuardedBuffer).
struct SharedBufferLayout {
  std::vector<uint64_t> offsets;  // [bytes] page-aligned
  uint64_t set_bytes = 0;         // [bytes] page-aligned
};
SharedBufferLayout LayoutFor(const internal::ResolvedPlan& plan);

// A runner, seen from the worker. Move-only; the destructor kills and reaps
// the child and unmaps the report.
class RunnerProcess {
 public:
  // Starts `worker_binary cpu-runner <config>` and sends it `job` (see the
  // protocol above). The calling process must be single-threaded.
  // `shared_buffers_fd` (timing): the memfd of SharedBufferLayout, fd 5 in
  // the runner; -1 for none.
  static absl::StatusOr<RunnerProcess> Start(const std::string& worker_binary,
                                             const RunnerConfig& config,
                                             const google::protobuf::MessageLite& job,
                                             int shared_buffers_fd = -1);

  RunnerProcess(RunnerProcess&& other) noexcept;
  RunnerProcess& operator=(RunnerProcess&& other) noexcept;
  RunnerProcess(const RunnerProcess&) = delete;
  RunnerProcess& operator=(const RunnerProcess&) = delete;
  ~RunnerProcess();

  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] pid_t pid() const { return pid_; }
  [[nodiscard]] const RunnerReport& report() const { return *report_; }

  // SIGKILL, then reap. Idempotent.
  void Kill() noexcept;
  // SIGSTOP / SIGCONT: while another program is timed, this one (and any
  // thread its kernel code left running) gets no CPU. PauseAndWaitStopped
  // also waits until every thread has stopped (or the child ended, which is
  // reaped and recorded): after it, the CPU clock below stands still. It
  // returns false if the child ended or did not stop within `timeout`.
  bool PauseAndWaitStopped(absl::Duration timeout) noexcept;
  void Continue() noexcept;
  // CPU time consumed so far by all threads of the child (the kernel's
  // clock, not the wall's: time the child waits for a core does not count).
  // Read by the parent, so code in the child cannot forge it.
  [[nodiscard]] absl::StatusOr<absl::Duration> CpuTime() const;
  // Resident memory of the child now [bytes] (/proc/PID/statm; shared pages
  // of the timed buffers included).
  [[nodiscard]] absl::StatusOr<uint64_t> ResidentBytes() const;
  // Waits for the child to end (at most `timeout`, then kills it); returns
  // the wait status.
  int Wait(absl::Duration timeout) noexcept;
  [[nodiscard]] bool ended() const { return pid_ < 0; }
  [[nodiscard]] int wait_status() const { return wait_status_; }

 private:
  RunnerProcess(pid_t pid, int fd, RunnerReport* report) : pid_(pid), fd_(fd), report_(report) {}
  void Close() noexcept;
  // The state letter of /proc/PID/stat ('T' stopped), '?' if unreadable.
  [[nodiscard]] char ReadProcState() const noexcept;

  pid_t pid_ = -1;
  int fd_ = -1;
  RunnerReport* report_ = nullptr;
  int wait_status_ = 0;
};

// A sentence on how a runner ended abnormally, e.g. "killed by signal 11
// (SIGSEGV): out-of-bounds access? write 4 bytes past the end of buffer 'y'",
// or the kernel's own message. Empty for a clean exit 0.
std::string DescribeRunnerEnd(int wait_status, const RunnerReport& report);

// `kerneleval-worker cpu-runner`: reads the job on `channel_fd`, runs it,
// returns the exit code.
int CpuRunnerMain(int channel_fd, int argc, char** argv);

}  // namespace kerneleval::cpu
