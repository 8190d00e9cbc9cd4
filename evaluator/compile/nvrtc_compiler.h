// One NVRTC compile in this process: used inside the sandboxed compile worker
// (compile_worker_mode.cc), never on untrusted input outside it.
#pragma once

#include <nvrtc.h>

#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "evaluator/compile/toolkit.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::compile {

// NVRTC error -> absl::Status carrying the file, line, call text and NVRTC's
// error name.
absl::Status NvrtcError(nvrtcResult result, const char* call, const char* file, int line);

#define KERNELEVAL_NVRTC_RETURN_IF_ERROR(call)                                           \
  do {                                                                                   \
    if (const nvrtcResult kerneleval_nvrtc_result = (call);                              \
        kerneleval_nvrtc_result != NVRTC_SUCCESS) {                                      \
      return ::kerneleval::compile::NvrtcError(kerneleval_nvrtc_result, #call, __FILE__, \
                                               __LINE__);                                \
    }                                                                                    \
  } while (0)

// Owns an nvrtcProgram. Move-only; the destructor never throws.
class NvrtcProgram {
 public:
  static absl::StatusOr<NvrtcProgram> Create(const std::string& source, const std::string& name);
  NvrtcProgram(NvrtcProgram&& other) noexcept;
  NvrtcProgram& operator=(NvrtcProgram&& other) noexcept;
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;
  ~NvrtcProgram();

  [[nodiscard]] nvrtcProgram get() const { return program_; }
  // nvrtcCompileProgram with `args`: NVRTC_SUCCESS, or a compile NVRTC
  // refused (NVRTC_ERROR_COMPILATION, NVRTC_ERROR_INVALID_OPTION: the log
  // says why); an error for any other result.
  [[nodiscard]] absl::StatusOr<nvrtcResult> Compile(const std::vector<std::string>& args) const;
  // The program log (empty if none).
  [[nodiscard]] absl::StatusOr<std::string> Log() const;
  [[nodiscard]] absl::StatusOr<std::string> Ptx() const;
  [[nodiscard]] absl::StatusOr<std::string> Cubin() const;

 private:
  explicit NvrtcProgram(nvrtcProgram program) : program_(program) {}
  nvrtcProgram program_ = nullptr;
};
static_assert(std::is_nothrow_move_constructible_v<NvrtcProgram>);
static_assert(std::is_nothrow_move_assignable_v<NvrtcProgram>);

struct NvrtcSettings {
  ToolkitPaths toolkit;
  // Directory for NVRTC's automatic precompiled headers (--pch); empty: none.
  std::string pch_dir;
};

// The NVRTC arguments for already-checked user options (CheckUserOptions):
// the user's, then --std=c++20 where they name no --std (NVRTC's own
// default is C++17), -arch, --ptxas-options=-v (sm_XX only), the include
// directories (toolkit, CCCL, kerneleval), --pre-include of the prelude
// and, with a PCH directory, --pch --pch-dir=...
std::vector<std::string> NvrtcArguments(const std::vector<std::string>& user_options,
                                        const std::string& arch, const NvrtcSettings& settings);

// Compiles `source` as "kernel.cu". A compile error is a result (success =
// false, log and diagnostics); errors are for NVRTC failing to run at all.
// The result carries PTX and (for sm_XX) CUBIN; kernels, log, options, arch,
// toolkit_version are filled; compile_seconds is NVRTC's wall time.
// `name_expressions` (checked: CheckNameExpressions) are instantiated
// (nvrtcAddNameExpression); the kernel each one lowers to carries it in
// KernelInfo.name_expression.
absl::StatusOr<v1::CompileResult> CompileWithNvrtc(
    const std::string& source, const std::vector<std::string>& user_options,
    const std::string& arch, const NvrtcSettings& settings,
    const std::vector<std::string>& name_expressions = {});

}  // namespace kerneleval::compile
