// The host compile of the CPU backend: a translation unit (source_rewrite.h)
// to a shared object, by g++ in a sandbox that can read only the toolchain,
// the CUDA headers and the prelude, and write only its own work directory.
// Compiled objects are cached by content within the cache directory; the
// prelude is precompiled once (a .gch) to make repeat compiles cheap.
//
// Must be used from a single-threaded process (the worker): the compiler is
// forked and sandboxed before exec, and the sandbox refuses to run in a
// process with other threads. Several processes may share one cache
// directory (a backend's worker and builders, other backends): an entry
// appears whole or not at all.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kerneleval::cpu {

struct HostCompilerOptions {
  std::string compiler = "g++";  // a name on PATH or an absolute path
  std::string prelude_dir;       // holds kerneleval_cpu_prelude.h
  std::string cuda_include_dir;  // the toolkit's include/ (cuda_fp16.h, vector_types.h)
  std::string cache_dir;         // shared objects, the precompiled prelude, work dirs
  double timeout_seconds = 60;   // [s] wall clock per compile
  bool precompiled_prelude = true;
  std::string optimization = "-O2";
  // The interleaved build (correctness runs): -fsanitize=thread for its
  // instrumentation only, so that every store is a store point where the
  // block's other threads run (the prelude's "Store points"). Compiled, then
  // linked without the flag: ThreadSanitizer's runtime is never linked.
  bool interleave_stores = false;
  // Contract a multiply and an add into one fused multiply-add, as NVRTC
  // and ptxas do by default (--fmad=true): -mfma -ffp-contract=fast where the
  // host has FMA (Create turns it off where not). Without it a source could
  // test whether `a * b - __fmul_rn(a, b)` is 0, its rounding error on a
  // GPU, and write the right answer only in the host build (sweep 9, s9a6).
  // A program compiled with --fmad=false turns it off in its own code
  // (FuseNoMultiplyAdd, source_rewrite.h).
  bool contract_multiply_add = true;
  size_t max_log_bytes = 16 << 10;  // [bytes] of compiler messages kept
  size_t max_cache_entries = 512;   // shared objects kept, oldest removed first
  // [bytes] Shared objects kept in all; the oldest go first.
  uint64_t max_cache_bytes = uint64_t{1} << 30;
  // [bytes] Largest file a compile of a submission may write (object,
  // library; RLIMIT_FSIZE): a 1 MiB source can declare a 900 MB initialised
  // array, and the cache keeps what it builds. Kernels' libraries are tens
  // of KiB.
  uint64_t max_library_bytes = uint64_t{64} << 20;
  // [bytes] The same for the precompiled prelude (about 90 MB with g++ 12).
  uint64_t max_prelude_bytes = uint64_t{1} << 30;
};

// Whether NVRTC fuses multiplies and adds under `options` (a program's
// canonical compile options, CheckUserOptions'): unless --fmad=false.
template <class Options>
bool NvrtcFusesMultiplyAdd(const Options& options) {
  for (const auto& option : options) {
    if (option == "--fmad=false") return false;
  }
  return true;
}

struct HostCompileResult {
  bool success = false;
  std::string library_path;  // the shared object, when success
  std::string log;           // the compiler's messages (errors), user paths only
  double seconds = 0;        // [s] wall time; 0 on a cache hit
  bool cache_hit = false;
};

class HostCompiler {
 public:
  // Checks the compiler, the prelude and the headers, and creates the cache
  // directory.
  static absl::StatusOr<HostCompiler> Create(HostCompilerOptions options);

  // Compiles (or finds in the cache) `translation_unit`. A compile error, or
  // a compile that runs out of time or memory, is an OK status with success
  // == false; a non-OK status means the compiler could not run (no sandbox,
  // no compiler, no disk).
  absl::StatusOr<HostCompileResult> Compile(std::string_view translation_unit);

  // The paths the sandboxed compiler may read.
  [[nodiscard]] std::vector<std::string> ReadablePaths() const;
  [[nodiscard]] const HostCompilerOptions& options() const { return options_; }

 private:
  explicit HostCompiler(HostCompilerOptions options) : options_(std::move(options)) {}

  struct Outcome {
    int exit_status = -1;  // -1: killed (timeout)
    std::string log;
  };
  // Runs the compiler with `args` in `work_dir` under the sandbox.
  absl::StatusOr<Outcome> RunSandboxed(const std::vector<std::string>& args,
                                       const std::string& work_dir,
                                       const std::vector<std::string>& extra_readable,
                                       uint64_t max_file_bytes);
  // Moves the staged entry directory (lib.so, key) to `entry_dir`. True when
  // `entry_dir` then holds this key's library (this one, or the same
  // program published by another process first); false on a hash collision.
  static bool PublishEntry(const std::string& staged, const std::string& entry_dir,
                           const std::string& key);
  std::vector<std::string> CommonFlags() const;
  void PreparePrecompiledPrelude();
  void TrimCache();

  HostCompilerOptions options_;
  std::string fingerprint_;  // prelude contents, compiler, flags
  std::string pch_dir_;      // empty: no precompiled prelude
  bool pch_tried_ = false;
  uint64_t work_counter_ = 0;
};

}  // namespace kerneleval::cpu
