// Where NVRTC's headers and libraries are: found from the CUDA toolkit the
// build used (CMake's CUDAToolkit), overridable at run time by
// KERNELEVAL_CUDA_HOME; never a hard-coded /usr/local/cuda.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kerneleval::compile {

struct ToolkitPaths {
  std::string include_dir;       // cuda_fp16.h, cuda_runtime.h, ...
  std::string cccl_include_dir;  // cub/, thrust/, cuda/std/ (CUDA 13: <include>/cccl); may be empty
  std::string library_dir;       // the libnvrtc.so in use (its builtins are dlopen'ed from there)
  std::string kerneleval_include_dir;  // prelude and C-header shims (evaluator/compile/include)
  std::string prelude;                 // <kerneleval_include_dir>/kerneleval/prelude.cuh
};

// Include dir: $KERNELEVAL_CUDA_HOME/include, else the build's
// CUDAToolkit_INCLUDE_DIRS. kerneleval headers: $KERNELEVAL_INCLUDE_DIR, else
// the source tree's evaluator/compile/include, else
// <executable>/../share/kerneleval/include. FailedPrecondition when a
// directory is missing.
absl::StatusOr<ToolkitPaths> FindToolkit();

// NVRTC's version, e.g. "13.0".
std::string NvrtcVersionString();

}  // namespace kerneleval::compile
