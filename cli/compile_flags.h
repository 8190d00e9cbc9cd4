// The compile flags `kerneleval compile` and `kerneleval evaluate` both take
// (--arch, -O/--option). A refused one is the invocation's bad input (exit
// 2), never a kernel that failed to compile (exit 1): checked here as the
// compile service would before anything runs, and told apart from a failed
// compile when NVRTC itself refuses a value.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "evaluator/compile/options.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::cli {

// InvalidArgument naming the flag ("--arch: ...", "--option: ...").
inline absl::Status CheckCompileFlags(const std::string& arch,
                                      const std::vector<std::string>& options) {
  if (!arch.empty()) {
    if (absl::Status s = compile::CheckArch(arch); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--arch: ", s.message()));
    }
  }
  if (absl::StatusOr<std::vector<std::string>> checked = compile::CheckUserOptions(options);
      !checked.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--option: ", checked.status().message()));
  }
  return absl::OkStatus();
}

// NVRTC refused an option's value (e.g. --arch sm_999): the compile never
// started. At the start of the log only: a submission's own "#error nvrtc:
// error: ..." comes after NVRTC's "kernel.cu(1): " and stays a failed
// compile.
inline bool NvrtcRefusedAnOption(const v1::CompileResult& result) {
  return !result.success() && result.kernels().empty() &&
         absl::StartsWith(result.log(), "nvrtc: error: invalid value for");
}

}  // namespace kerneleval::cli
