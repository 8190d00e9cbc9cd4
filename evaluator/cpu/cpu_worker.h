// `kerneleval-worker cpu`: the long-lived child of CpuBackend. Compiles
// programs on the host (HostCompiler, sandboxed g++) and runs them in runner
// processes (runner.h). Single-threaded by design: it forks the compiler and
// the runners.
//
// Wire (framing.h on the channel): each request is a google.protobuf.Any
// holding an internal::RunRequest or internal::TimingRequest; each reply an
// Any holding the RunResult / TimingResult, or a google.protobuf.StringValue
// "<absl status code>:<message>" when the request could not be served
// (infrastructure: no sandbox, no compiler, a malformed plan).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kerneleval::cpu {

// A builder's notes (CpuWorkerSettings::build_only), one per build.
inline constexpr char kBuildNoteCacheHit[] = "host build: cache hit";
inline constexpr char kBuildNotePrefix[] = "host build (s): ";

struct CpuWorkerSettings {
  std::string cache_dir;         // compiled objects (shared with later workers)
  std::string prelude_dir;       // empty: KERNELEVAL_CPU_PRELUDE_DIR, else the build's
  std::string cuda_include_dir;  // empty: the toolkit's include/ found at build time
  std::string compiler = "g++";
  double compile_timeout_seconds = 60;  // [s]
  double default_timeout_seconds = 10;  // [s] when a request gives none
  unsigned threads = 0;                 // 0: hardware concurrency (at most 16)
  uint64_t fiber_stack_bytes = 64 << 10;
  uint64_t print_budget_bytes = 1 << 20;
  uint64_t heap_bytes = 8 << 20;
  uint64_t max_output_bytes = uint64_t{1} << 30;  // [bytes] of outputs in one reply
  bool precompiled_prelude = true;
  // Correctness runs (Run) use the interleaved build, where a block's
  // threads run store by store (host_compiler.h); timing uses the plain one.
  bool interleaved_runs = true;
  // A builder (CpuBackend::Prepare): a Run or Time request builds what that
  // request would build (the same translation units, compilers and cache
  // keys) and answers without running anything: an empty result, or the
  // build's failure. Each build is a note: kBuildNoteCacheHit, or
  // kBuildNotePrefix followed by its seconds.
  bool build_only = false;

  // As command-line arguments of the worker ("--name=value") and back.
  [[nodiscard]] std::vector<std::string> ToArgs() const;
  static CpuWorkerSettings FromArgs(int argc, char** argv);
};

// The prelude directory: env KERNELEVAL_CPU_PRELUDE_DIR, else the source
// tree's evaluator/cpu/prelude (compile definition).
std::string DefaultPreludeDir();
// The CUDA include directory: env KERNELEVAL_CUDA_INCLUDE_DIR, else the
// toolkit's found at build time.
std::string DefaultCudaIncludeDir();

// Serves requests on `channel_fd` until EOF; returns the exit code.
int CpuWorkerMain(int channel_fd, int argc, char** argv);

}  // namespace kerneleval::cpu
