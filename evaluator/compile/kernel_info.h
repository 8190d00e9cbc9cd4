// Resource usage and parameters of each __global__ function, from what NVRTC
// produced: the PTX (.entry list, parameter layout, .maxntid), the ptxas -v
// lines of the log (registers, stack frame, spills, static shared memory) and
// the CUBIN's ELF sections (.nv.info attributes, .nv.constant0 and
// .nv.shared sizes), plus the submitted source for parameter names.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::compile {

// ------------------------------------------------------------ ptxas -v lines
struct PtxasUsage {
  uint32_t registers = 0;
  uint32_t stack_frame_bytes = 0;
  uint32_t spill_store_bytes = 0;
  uint32_t spill_load_bytes = 0;
  uint32_t shared_bytes = 0;     // "N bytes smem" (static, as declared)
  uint32_t constant0_bytes = 0;  // "N bytes cmem[0]" (CUDA 13 no longer prints it)
};
// By mangled entry name. "Used ..." lines follow "Compiling entry function
// 'X'"; the stack/spill line follows "Function properties for X".
std::map<std::string, PtxasUsage> ParsePtxasInfo(std::string_view log);

// ---------------------------------------------------------------- CUBIN ELF
struct CubinParam {
  uint32_t ordinal = 0;
  uint32_t offset_bytes = 0;
  uint32_t size_bytes = 0;
};
struct CubinKernel {
  std::optional<uint32_t> registers;    // EIATTR_REGCOUNT (0x2f)
  std::optional<uint32_t> frame_bytes;  // EIATTR_FRAME_SIZE (0x11)
  uint32_t max_threads = 0;             // EIATTR_MAX_THREADS (0x05), x*y*z; 0 if none
  uint32_t shared_section_bytes = 0;    // .nv.shared.<kernel> (sm_80+: + 1 KiB reserved)
  uint32_t constant0_bytes = 0;         // .nv.constant0.<kernel> (bank 0: driver + params)
  std::vector<CubinParam> params;       // EIATTR_KPARAM_INFO (0x17), by ordinal
};
// By mangled name. DataLoss for a malformed ELF (never reads out of bounds).
absl::StatusOr<std::map<std::string, CubinKernel>> ParseCubin(std::string_view cubin);

// ---------------------------------------------------------------------- PTX
struct PtxParam {
  std::string ptx_type;  // ".u64", ".f32", ".b8[24]"
  uint32_t size_bytes = 0;
  uint32_t align_bytes = 0;
  uint32_t offset_bytes = 0;
  bool is_pointer = false;  // ".ptr" annotation, when present
};
struct PtxEntry {
  std::string name;  // mangled
  std::vector<PtxParam> params;
  uint32_t max_threads = 0;  // .maxntid / .reqntid x*y*z; 0 if none
};
std::vector<PtxEntry> ParsePtxEntries(std::string_view ptx);
// Whether the PTX declares a device heap allocation it calls
// (".extern .func (.param .b64 func_retval0) malloc", or the aligned and
// cudaMalloc variants).
bool PtxCallsDeviceMalloc(std::string_view ptx);
// The functions and variables the PTX declares `.extern` (defined elsewhere)
// other than CUDA's own (vprintf, malloc, free, __assertfail and the aligned
// malloc's syscall), in the order declared; `.extern .shared` (dynamic shared
// memory) is no outside definition. NVRTC leaves them unresolved in PTX for
// a virtual architecture (compute_XX: ptxas, which refuses them, does not
// run), and the CPU backend's host build bound them to the C library: a
// kernel declaring `extern "C" __device__ void* mmap(...)` passed there and
// could not load on a GPU (sweep 41, t01/c02).
std::vector<std::string> PtxUnresolvedExterns(std::string_view ptx);
// The module-scope variables the PTX defines in the global state space
// (".global [.attribute(...)] [.align N] .type name[...] [= ...];"), in the
// order declared; `.extern` declarations (defined elsewhere) and the
// compiler's own `$str` strings are left out.
// Constant, shared and local memory are not global: a kernel cannot write
// the first, and the others do not outlive a block or thread.
std::vector<std::string> PtxDeviceGlobals(std::string_view ptx);
// Whether `name` is one of the constants kerneleval's prelude defines
// (include/kerneleval/prelude.cuh: INFINITY, NAN, FLT_MAX, ...): NVRTC gives
// them storage in every module, so they are device globals of every program
// but none of its author's.
bool IsPreludeGlobal(std::string_view name);

// ------------------------------------------------------------------- names
// abi::__cxa_demangle; the input unchanged when it is not a mangled name
// (extern "C" kernels).
std::string Demangle(const std::string& mangled);
// "ns::k<float>(float const*, int)" -> {"float const*", "int"}; empty for a
// name without a parameter list.
std::vector<std::string> DemangledParameterTypes(std::string_view demangled);

struct SourceParam {
  std::string type;  // as written, e.g. "const float* __restrict__"
  std::string name;  // may be empty
};
// The parameter lists the source declares for `__global__ ... name(...)`
// (several for overloads and templates). Best effort: comments and string
// literals are skipped, macros are not expanded.
std::vector<std::vector<SourceParam>> SourceKernelParameters(std::string_view source,
                                                             std::string_view name);

// --------------------------------------------------------------- together
// One KernelInfo per PTX entry, in PTX order. Figures from ptxas when it
// printed them, else from the CUBIN; parameters' sizes/offsets from the CUBIN
// (else the PTX), types from the demangled name (else the source), names from
// the source when its declaration matches.
std::vector<v1::KernelInfo> ExtractKernels(std::string_view ptx, std::string_view cubin,
                                           std::string_view raw_log, std::string_view source);

}  // namespace kerneleval::compile
