// Runner processes: where untrusted kernel code runs. The cpu worker starts
// one per Run request (and one per program of a Time request) as a fresh
// program image, `kerneleval-worker cpu-runner` (fork + exec: nothing of the
// worker's memory, e.g. another program's outputs it relayed, is in the
// runner's address space). The runner reads its job from its channel, closes
// every other descriptor (stdio goes to /dev/null), applies the file-system
// sandbox (it may read only the shared object), the kKernelCode system-call
// profile (no fork/exec, no sockets, no shared memory or IPC, no timers or
// other signals sent later) and, once its pool threads are started, no new
// threads, all BEFORE dlopen() runs any code of the submission, runs,
// reports on its channel and exits. The buffers a runner
// runs on live in a memfd the worker created and also maps (fd 5 in the
// runner; layout: SharedBufferLayout, one region per case or input set);
// the runner maps only their data pages, between guard pages of its own.
// The worker generates the inputs and poisons the outputs there, and reads
// the outputs and checks the inputs and the bytes around each buffer there,
// while no code of the runner runs: nothing the runner says about its
// buffers is taken, so kernel code, which shares the runner's process,
// cannot forge it. A program never sees memory another program wrote.
//
// Channel protocol (framing.h frames on a stream socket, fd 3 in the runner):
//   worker -> runner  the job: an internal::RunRequest (Run: the cases'
//                     plans; their seeds are zero, the worker keeps them) or
//                     an internal::TimingRequest holding the one program to
//                     time, placeholder seeds and the config (Time).
//   runner -> worker  kLoadingFrame once sandboxed, right before dlopen(): a
//                     runner that ends before it is the harness's failure
//                     (infrastructure); any end after it is the kernel's.
//   Run:    the runner runs every case once, in order, replies kRunDoneFrame
//           and exits 0; the worker reads the buffers after the exit.
//   Time:   the worker generates every round's inputs and poisons the
//           outputs itself, while the runner is stopped, and reads the
//           outputs from the memfd: the runner runs only while a sample is
//           taken. runner -> worker "ready" after setup; then per command
//           frame from the worker ("P": prepare the next run, i.e.
//           StartRunAfresh without the stack fill, and report the fiber
//           stacks' ranges in the RunnerReport; "R" set: run the plan, only
//           right after a "P"; "F": finish) one reply: "p", "k", or for "F"
//           an empty internal::ProgramTiming, then exit 0. Between "p" and
//           "R" the worker zeros the stack pages kernels touched, from
//           outside (ZeroTouchedPages). The sample is all the CPU time the
//           runner spends on the "P" and the "R": kernel code can hook any
//           code the runner runs (sweep 41).
// Failures: a fault ends the runner by its signal; a kernel error (trap,
// failed assert, deadlock, invalid launch) exits kKernelErrorExit with the
// message in the RunnerReport, a memfd page shared with the worker (fd 4).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <csignal>
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
// Blocks of a correctness run's grid raced (SetRaceCheckedMemory): a wrong
// program, like a wrong answer (message).
inline constexpr int kKernelRaceExit = 73;
inline constexpr char kLoadingFrame[] = "loading";
inline constexpr char kRunDoneFrame[] = "done";

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
  // The fault's address lies in dynamic shared memory: at this byte, past
  // the launch's request (FindDynamicSharedFault).
  int32_t fault_in_shared;
  uint64_t fault_shared_offset;
  uint64_t fault_shared_requested;
  // The fault's address lies in the guard page below a GPU thread's stack
  // of fault_stack_bytes (FindStackOverflow).
  int32_t fault_in_stack;
  uint64_t fault_stack_bytes;
  uint32_t buffer_count;
  BufferRange buffers[kMaxBuffers];
  char message[4096];
  // The fiber stacks' runs of mappings, written by the timing runner on each
  // "P" for its worker to zero; 0 where the runner zeroed them itself (more
  // runs than fit). Kernel code can rewrite them: that only leaves its own
  // stacks as they were, or fails its program.
  static constexpr int kMaxStackRanges = 512;
  uint32_t stack_range_count;
  AddressRange stack_ranges[kMaxStackRanges];
};

enum class RunnerJob { kRunCases, kTimeProgram };

struct RunnerConfig {
  RunnerJob job = RunnerJob::kRunCases;
  std::string library_path;               // the compiled submission
  std::vector<std::string> kernel_names;  // launcher i of the library runs kernel_names[i]
  DeviceRuntimeOptions runtime;

  // As arguments of `kerneleval-worker cpu-runner` and back.
  [[nodiscard]] std::vector<std::string> ToArgs() const;
  static RunnerConfig FromArgs(int argc, char** argv);
};

// Where the buffers of one plan lie in a region of a runner's memfd:
// buffer b (plan order) at offsets[b] from the region's start; its data
// starts GuardedDataOffset(bytes) into those pages and ends 0-15 bytes
// before their end (the runner maps them between guard pages, like
// GuardedBuffer). Regions follow one another: RegionOffsets.
struct SharedBufferLayout {
  std::vector<uint64_t> offsets;  // [bytes] page-aligned
  uint64_t set_bytes = 0;         // [bytes] page-aligned
};
SharedBufferLayout LayoutFor(const internal::ResolvedPlan& plan);
// [bytes] The start of each region of `plans` (one per case, or per input
// set of a timed program), then the memfd's size.
std::vector<uint64_t> RegionOffsets(const std::vector<const internal::ResolvedPlan*>& plans);

// A runner, seen from the worker. Move-only; the destructor kills and reaps
// the child and unmaps the report.
class RunnerProcess {
 public:
  // Starts `worker_binary cpu-runner <config>` and sends it `job` (see the
  // protocol above). The calling process must be single-threaded.
  // `shared_buffers_fd`: the memfd of the job's buffers (RegionOffsets),
  // fd 5 in the runner.
  static absl::StatusOr<RunnerProcess> Start(const std::string& worker_binary,
                                             const RunnerConfig& config,
                                             const google::protobuf::MessageLite& job,
                                             int shared_buffers_fd);

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
  // The state letter of /proc/PID/stat now: 'T' stopped, 'Z' ended and not
  // yet reaped, 'R'/'S'/'D' running or waiting; '?' once reaped. After
  // PauseAndWaitStopped, anything but 'T' or an end means that something
  // else resumed the child (a signal).
  [[nodiscard]] char State() const noexcept { return ReadProcState(); }
  // CPU time consumed so far by all threads of the child (the kernel's
  // clock, not the wall's: time the child waits for a core does not count).
  // Read by the parent, so code in the child cannot forge it.
  [[nodiscard]] absl::StatusOr<absl::Duration> CpuTime() const;
  // CPU time consumed so far by the child's main thread alone
  // (/proc/PID/task/PID/schedstat, ns; the same clock as CpuTime's), where
  // the kernel has it (CONFIG_SCHED_INFO); an error otherwise.
  [[nodiscard]] absl::StatusOr<absl::Duration> MainThreadCpuTime() const;
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
  int wait_status_ = SIGKILL;  // a waitpid() status; until known, "killed"
};

// A sentence on how a runner ended abnormally, e.g. "killed by signal 11
// (SIGSEGV): out-of-bounds access? write 4 bytes past the end of buffer 'y'",
// or the kernel's own message. Empty for a clean exit 0.
std::string DescribeRunnerEnd(int wait_status, const RunnerReport& report);

// `kerneleval-worker cpu-runner`: reads the job on `channel_fd`, runs it,
// returns the exit code.
int CpuRunnerMain(int channel_fd, int argc, char** argv);

}  // namespace kerneleval::cpu
