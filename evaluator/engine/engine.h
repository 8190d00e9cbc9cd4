// The evaluation engine: the narrow API that server/ and cli/ call. Knows
// nothing about gRPC: requests and verdicts are the kerneleval.v1 protobuf
// messages, errors are absl::Status (mapped to gRPC status once, in server/).
//
// Status codes returned (the server maps them one to one):
//   INVALID_ARGUMENT    malformed request or over a size limit (message names the field)
//   NOT_FOUND           unknown problem id
//   FAILED_PRECONDITION a backend this engine lacks (e.g. cuda without a GPU)
//   RESOURCE_EXHAUSTED  queue full (returned at once)
//   UNAVAILABLE         no worker could be started
//   DEADLINE_EXCEEDED / CANCELLED  the caller's deadline passed or it went away
// A submission that fails to compile, crashes, hangs or is wrong is an OK
// result carrying its Verdict.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "evaluator/engine/backend.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval {

// What the engine reports for metrics; server/ implements it with Prometheus.
// Called from engine threads: implementations must be thread-safe and cheap.
class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  // stage: "compile", "correctness", "timing", "queue_wait", "total" [seconds];
  // "compile_wait": from a submission's admission (a Compile call's, from
  // its turn being asked) to a compile thread taking it, reported as its
  // compile begins (a pool too small for its clients shows here first);
  // "host_build": a backend's build of a compiled program for its runs, on
  // the compile pool after "compile" (the CPU backend's host objects,
  // Backend::Prepare; a cache hit takes milliseconds).
  virtual void OnLatency(std::string_view stage, double seconds) {}
  // A finished evaluation: its verdict's stage ("passed", "compile", ...).
  virtual void OnVerdict(std::string_view stage) {}
  virtual void OnWorkerRestart(std::string_view backend) {}
  virtual void OnCompileCache(bool hit) {}
  // A prepared reference (problem and device) found or compiled.
  virtual void OnReferenceCache(bool hit) {}
  virtual void OnQueueDepth(std::string_view device, int depth) {}
  virtual void OnDeduplicated() {}
  // A job's time on a device [s] (correctness and timing runs, from the
  // device taking it to its answer; other clients' jobs served between its
  // candidates are theirs), by CallContext.client_id: who uses the devices.
  virtual void OnDeviceSeconds(std::string_view client_id, double seconds) {}
};

// Per-call context, filled by the caller (server or CLI).
struct CallContext {
  std::string request_id;  // appears in every log line about the call
  std::string client_id;   // fairness key (EvaluateRequest.client_id, else the peer)
  absl::Time deadline = absl::InfiniteFuture();
  // Polled before each expensive stage; true means the caller went away.
  std::function<bool()> cancelled;
  // Progress events for EvaluateStream (queued, compiled, correctness,
  // timing); the verdict itself comes through the completion callback.
  std::function<void(const v1::EvaluateEvent&)> on_event;
};

struct EngineOptions {
  std::string problems_dir;   // empty: DefaultProblemsDir()
  std::string worker_binary;  // empty: process::DefaultWorkerBinary()
  v1::Backend default_backend = v1::BACKEND_AUTO;
  bool enable_cuda = true;  // probe for GPUs at start
  bool enable_cpu = true;
  // Concurrent compiles of one client (0: one per core), on the compile
  // pool's general threads (as many).
  int compile_workers = 0;
  // Compile threads beyond those, each taking only a compile of a client
  // with none running: while other clients' slow sources (up to the compile
  // limit each) hold the general threads, this many more clients start at
  // once (one thread each) instead of waiting. At most this many compiles
  // beyond compile_workers run at once.
  int compile_reserve_threads = 2;
  double compile_timeout_seconds = 30;
  std::string compile_cache_dir;  // empty: in-memory cache only
  // Bound on compile_cache_dir [bytes]; least recently used entries go first.
  uint64_t compile_cache_dir_bytes = uint64_t{4} << 30;
  // CPU backend: compiled kernels and the precompiled prelude, shared by
  // engines of this user. Empty: $KERNELEVAL_CPU_CACHE_DIR, else
  // $XDG_CACHE_HOME/kerneleval/cpu, else ~/.cache/kerneleval/cpu.
  std::string cpu_cache_dir;
  // CPU backend: correctness runs on the build whose threads interleave at
  // every store (plain read-modify-writes of shared data lose updates, as on
  // a GPU; evaluator/cpu/README.md). Off: the plain build, where they pass.
  bool cpu_interleaved_runs = true;
  // The CPU backend's host build sees the submission as NVRTC's preprocessor
  // does: NVRTC's predefined macros, and every conditional branch taken or
  // skipped as NVRTC did, else a compile failure (evaluator/compile/
  // host_build_probe.h). Off only in tests of the defenses behind it, whose
  // host code needs a gate between the builds.
  bool cpu_host_build_checks = true;
  // [s] The CPU backend's limit on one host build of a program; 0 = its
  // default (CpuBackendOptions, 60 s).
  double cpu_compile_timeout_seconds = 0;
  std::string default_arch = "sm_90";
  double run_timeout_seconds = 20;  // per backend call (correctness or timing)
  // A candidate's correctness run: at most this many times the reference's
  // on the same cases (times how many more buffer bytes its plan has), at
  // least the floor, within run_timeout_seconds (a
  // kernel that hangs then holds its device seconds, not the whole limit).
  // 0: run_timeout_seconds alone.
  double candidate_run_factor = 25;
  double candidate_run_floor_seconds = 5;
  uint64_t worker_memory_bytes = uint64_t{4} << 30;
  // Per device; beyond it RESOURCE_EXHAUSTED. One client (client_id, or a
  // named token's client) may hold half of it; a client with nothing queued
  // is admitted past it, up to twice it in all.
  size_t queue_capacity = 256;
  // [bytes] Per submitted source (Evaluate, EvaluateGroup, Compile); not the
  // problems' own reference sources.
  size_t max_source_bytes = 1 << 20;
  size_t max_group_size = 128;
  // [bytes] Held by admitted requests in all (submissions with their plans
  // and options, custom problems, Compile sources) until answered; past it
  // RESOURCE_EXHAUSTED, unless nothing is held. The server's memory for
  // them peaks at 2.6-2.9x this (copies, compiled programs, and requests
  // the transport read before they were refused; bench/server/
  // admission_memory_bench.py): 6 groups of 128 distinct 1 MiB sources took
  // it to 1.9 GiB before this bound, 1.16 GiB with it.
  uint64_t max_admitted_bytes = uint64_t{512} << 20;
  // Problems sent in the request (problem_ref.problem). Their verdicts carry
  // the flag "custom_problem" (the id may be a built-in one's, the tolerance
  // and reference the caller's). false: PERMISSION_DENIED, for servers whose
  // verdicts others read by problem id (CI, leaderboards).
  bool allow_custom_problems = true;
  // Prepared references (compiled reference source and plan) kept per
  // problem and device; past either bound the least recently used go.
  // Custom problems each bring one: a client sending new ones keeps built-in
  // problems' references only as long as it does not evict them.
  size_t reference_cache_entries = 1024;
  uint64_t reference_cache_bytes = uint64_t{256} << 20;
  // Requests that fix their inputs' seed (to reproduce a verdict). Their
  // verdicts carry the flag "fixed_seed": a kernel can be fitted to inputs
  // that do not change (a policy that sees a failing check's expected value
  // can hard-code it next time). false: PERMISSION_DENIED, for servers that
  // grade training rollouts, whose clients may pass a framework's episode
  // seed without meaning to fix the inputs.
  bool allow_fixed_seeds = true;
  // Emulated timing (the CPU backend) in the reward's speed score. The
  // emulator's costs are not a GPU's: threads without barriers run as a
  // plain loop there, so row_sum serialised to one thread per row ran
  // 160-190x faster than the parallel reference (reward 3.3) and would be
  // far slower on a GPU. false: a passing verdict with emulated timing is
  // rewarded at speedup 1 (0.3, as if it ran at the reference's speed),
  // `speedup` says 1 and the flag "emulated_speed_not_rewarded" says why;
  // the measured times stay in `timing`. For training without a GPU.
  bool reward_emulated_speed = true;
  bool calibrate = false;  // measure device bandwidth/FLOP/s at start
  // Default reward settings (KERNEL_ENV_REWARD / KERNEL_ENV_PARTIAL_CREDIT
  // when empty / unset, as the seed reads them).
  std::string reward_mode;
  std::optional<bool> partial_credit;
  std::shared_ptr<EngineObserver> observer;
  // Decorates each CUDA backend before the engine uses it; empty: none. A
  // seam for tests that run the CUDA backend on the test driver
  // (tests/support/fake_cuda turns each program into a host module first).
  std::function<std::unique_ptr<Backend>(std::unique_ptr<Backend>)> wrap_cuda_backend;
};

class Engine {
 public:
  using VerdictCallback = std::function<void(absl::StatusOr<v1::Verdict>)>;
  using GroupCallback = std::function<void(absl::StatusOr<v1::EvaluateGroupResponse>)>;
  using CompileCallback = std::function<void(absl::StatusOr<v1::CompileResult>)>;

  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineOptions& options);
  virtual ~Engine() = default;

  // Asynchronous: validates at once (errors go to `done` before returning
  // for bad requests and full queues), then works on the engine's queues and
  // calls `done` exactly once from an engine thread.
  virtual void EvaluateAsync(v1::EvaluateRequest request, CallContext context,
                             VerdictCallback done) = 0;
  virtual void EvaluateGroupAsync(v1::EvaluateGroupRequest request, CallContext context,
                                  GroupCallback done) = 0;

  // Synchronous conveniences (the CLI's embedded mode).
  absl::StatusOr<v1::Verdict> Evaluate(const v1::EvaluateRequest& request, CallContext context);
  absl::StatusOr<v1::EvaluateGroupResponse> EvaluateGroup(const v1::EvaluateGroupRequest& request,
                                                          CallContext context);

  virtual absl::StatusOr<v1::CompileResult> Compile(const v1::CompileRequest& request,
                                                    const CallContext& context) = 0;
  // As Compile, calling `done` exactly once: on the caller's thread for what
  // needs no compile (a bad request, a cache hit, a refused option), else
  // from an engine thread once the caller's turn on the compile pool came
  // (the gRPC front holds no thread while it waits). This default compiles
  // on the caller's thread. By value: an override keeps them past the call.
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  virtual void CompileAsync(v1::CompileRequest request, CallContext context, CompileCallback done) {
    done(Compile(request, context));
  }
  virtual absl::StatusOr<v1::ListProblemsResponse> ListProblems(
      const v1::ListProblemsRequest& request) = 0;
  virtual absl::StatusOr<v1::GetProblemResponse> GetProblem(
      const v1::GetProblemRequest& request) = 0;
  virtual v1::ListDevicesResponse ListDevices() = 0;

  // True once at least one backend has a worker ready (health: SERVING).
  [[nodiscard]] virtual bool Ready() const = 0;
  // Stops accepting work; in-flight evaluations finish or are cancelled by
  // `deadline`. Idempotent.
  virtual void Shutdown(absl::Time deadline) = 0;
};

}  // namespace kerneleval
