// What NVRTC's preprocessor makes of a submission, for the CPU backend's host
// build (evaluator/cpu/source_rewrite.h), which must see the same: a source
// can tell the two builds apart at compile time (`#ifdef __CUDACC_VER_MAJOR__`,
// `#if __has_include(<unistd.h>)`, `__cplusplus`) and give the GPU wrong code
// while the CPU backend, the only one run without a GPU, runs right code.
// Runs inside the sandboxed compile worker, like every NVRTC compile.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "evaluator/compile/nvrtc_compiler.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::compile {

// The names NVRTC 13 predefines before a source's first line (its own and
// its built-in headers', found in libnvrtc's text; nv/target's _NV_* and the
// per-compile ones such as __LINE__ left out), whose expansions the probe
// reads. The prelude's #define names are probed besides.
const std::vector<absl::string_view>& NvrtcPredefinedMacroNames();

// The text NVRTC prints for the marker of `branch` (the index in
// source::FindConditionalBranches) in the branch probe of one compile.
std::string BranchMarker(absl::string_view nonce, size_t branch);

// Probes `source` compiled with `user_options` (checked, canonical) for
// `arch`:
// - predefined_macros: every name of NvrtcPredefinedMacroNames() and of the
//   prelude's #defines that NVRTC defines for these options (the -D options
//   left out), with its expansion as `#` stringifies it (a function-like
//   macro: its own name). Cached per options in this process.
// - branches_taken: the conditional branches NVRTC's preprocessor entered,
//   from a front-end-only compile of the source with a `#pragma message` of
//   an unguessable marker at the start of every branch.
// A probe NVRTC refuses, or a source with a #line directive (the markers'
// own #line would undo it), sets `error` (the CPU backend then refuses the
// program); errors are for NVRTC failing to run.
absl::StatusOr<v1::HostBuildProbe> ProbeHostBuild(const std::string& source,
                                                  const std::vector<std::string>& user_options,
                                                  const std::string& arch,
                                                  const NvrtcSettings& settings);

}  // namespace kerneleval::compile
