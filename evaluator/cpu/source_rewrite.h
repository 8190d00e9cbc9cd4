// From a submission's CUDA C++ to the host translation unit the CPU backend
// compiles: a scan for what the host cannot run, the one source rewrite the
// prelude cannot do with macros (`extern __shared__`), and the generated
// launchers. Every rewrite keeps the line structure, so the host compiler's
// diagnostics point at the user's lines.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "evaluator/common/source_text.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::cpu {

// The file name diagnostics of the user's code carry: NVRTC's, so that
// __FILE__ and __builtin_FILE() do not tell the builds apart.
inline constexpr char kSubmissionFileName[] = "kernel.cu";
// The file name of the generated launchers in diagnostics.
inline constexpr char kLaunchersFileName[] = "kerneleval-launchers";

using ::kerneleval::source::MaskCommentsAndLiterals;

// The first construct the CPU backend cannot execute, as a sentence for the
// user ("the CPU backend does not support inline PTX assembly (asm), line 12"),
// or nullopt. Looks at code only, never at comments or strings.
std::optional<std::string> FindUnsupportedFeature(std::string_view source);

// Rewrites each `extern __shared__ T name[];` (any order of the specifiers)
// into a pointer to this OS thread's dynamic shared memory. In code, a local
// pointer set each time the declaration runs:
//          T* const name = (decltype(name))<dynamic shared base>;
// at namespace scope, a thread-local pointer the prelude sets as each block
// starts (KERNELEVAL_CPU_DYNAMIC_SHARED: a setter's pointer in a section the
// prelude walks, nothing run at load), kept with its own data:
//   static thread_local T* name KERNELEVAL_CPU_TDATA(extern_shared_name) = nullptr;
//   KERNELEVAL_CPU_DYNAMIC_SHARED(name);
// Never a thread-local variable initialised as the code runs: its guard is
// zero-initialised thread-local data, which each block starts with filled.
// Same number of lines; other text unchanged.
std::string RewriteExternShared(std::string_view source);

// Replaces each #include of a CUB header by one of kerneleval_cpu_cub.h, the
// prelude's emulation of CUB's block and warp collectives (FindUnsupported-
// Feature refuses the headers it does not cover). Same lines.
std::string RewriteCubIncludes(std::string_view source);

// Whether `name` may be spliced into the generated launcher code: a
// (qualified) identifier with optional template arguments; no comments,
// strings, braces, semicolons, preprocessor or line breaks.
bool IsValidKernelName(std::string_view name);

// A submission define ("-DNAME=VALUE", "-DNAME", "NAME=VALUE" or "NAME") as a
// "#define NAME VALUE" line; an error for anything else (an option, a line
// break, a malformed name).
absl::StatusOr<std::string> DefineLine(std::string_view define);

// The whole translation unit:
//   #include "kerneleval_cpu_prelude.h"
//   <defines>
//   #line 1 "kernel.cu"
//   <RewriteCubIncludes(RewriteExternShared(source))>
//   #line 1 "kerneleval-launchers"
//   kerneleval_cpu_init, the kernel name table and kerneleval_cpu_launch_<i>
//   for kernel_names[i].
// Kernel names must pass IsValidKernelName and defines DefineLine.
// `cuda_arch` (e.g. 900, CudaArchValue) is defined as __CUDA_ARCH__ for the
// submission's own code, as NVRTC defines it for device code (a kernel's
// `#if __CUDA_ARCH__ >= 800` branch is the GPU's); every #include of the
// submission is compiled without it (WrapIncludes): libcu++ and the toolkit
// headers would take their device paths, PTX. 0: not defined.
// With `probe` (NVRTC's view of the source, from the compile stage) the
// submission's own code sees NVRTC's predefined macros instead (literal
// values always NVRTC's: __cplusplus, __CUDA_ARCH__, __CUDACC_VER_MAJOR__;
// others where the host build has none), `cuda_arch` is not used, and every
// conditional preprocessor branch must be taken or skipped as NVRTC did: a
// difference is an #error that names the line (a source telling the builds
// apart, `#if __has_include(<unistd.h>)`, could give the GPU other code than
// the CPU backend runs).
absl::StatusOr<std::string> BuildTranslationUnit(std::string_view source,
                                                 const std::vector<std::string>& defines,
                                                 const std::vector<std::string>& kernel_names,
                                                 int cuda_arch = 0,
                                                 const v1::HostBuildProbe* probe = nullptr);

// What NVRTC's --fmad=false does, for the host build: `unit` (one of
// BuildTranslationUnit's) with `#pragma GCC optimize("fp-contract=off")`
// right after its prelude #include (before it, the precompiled prelude would
// not be used), so that none of the submission's functions fuses a multiply
// and an add. InvalidArgument for a unit that does not start with that line.
absl::Status FuseNoMultiplyAdd(std::string* unit);

// __CUDA_ARCH__ for a target: "sm_90" and "sm_90a" 900, "sm_100f" 1000,
// "compute_80" 800; 0 for anything else.
int CudaArchValue(std::string_view arch);

// Each #include line of `source` between `#pragma push_macro("__CUDA_ARCH__")`
// + `#undef` and `#pragma pop_macro`, then `#line` back to the next line of
// `file_name`: the includes see no __CUDA_ARCH__, line numbers are kept.
std::string WrapIncludes(std::string_view source, std::string_view file_name);

}  // namespace kerneleval::cpu
