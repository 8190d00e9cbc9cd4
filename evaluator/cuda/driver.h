// The CUDA driver API, loaded at run time. Nothing in kerneleval links
// libcuda or cudart: a binary linked against the driver (or its stub) fails to
// start on a machine without one, and the engine must run there (CPU backend,
// CI). LoadDriver() dlopen()s libcuda.so.1 and resolves every entry point the
// evaluator uses through cuGetProcAddress (v2, CUDA 12+), each at the ABI
// version of the function-pointer type we call it through, so a newer driver
// that changed a function's signature still hands us the one we compiled for.
//
// <cuda.h> is included for its types and enum values only.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kerneleval::cuda {

// X(name, abi_version): `name` is the driver's base symbol ("cuMemAlloc", as
// cuGetProcAddress wants it), `abi_version` the CUDA version whose signature
// PFN_<name>_v<abi_version> from <cudaTypedefs.h> describes. Where cuda.h
// binds a name to a newer version (cuEventElapsedTime_v2, CUDA 12.8: it no
// longer reports other pending work's errors), we ask for that one. Each is
// asked for at min(abi_version, the driver's version): cuGetProcAddress
// refuses a version above the driver's with CUDA_ERROR_INVALID_VALUE, and a
// driver older than the toolkit (KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER=1) then
// hands back its own, which has the same signature (cudaTypedefs.h:
// PFN_cuEventElapsedTime_v2000 and _v12080 agree). So an abi_version above
// 12000 (the oldest driver with cuGetProcAddress_v2) is only for entries
// whose older versions share its signature.
#define KERNELEVAL_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit, 2000)                           \
  X(cuDriverGetVersion, 2020)               \
  X(cuDeviceGetCount, 2000)                 \
  X(cuDeviceGet, 2000)                      \
  X(cuDeviceGetName, 2000)                  \
  X(cuDeviceGetAttribute, 2000)             \
  X(cuDeviceTotalMem, 3020)                 \
  X(cuDevicePrimaryCtxRetain, 7000)         \
  X(cuDevicePrimaryCtxRelease, 11000)       \
  X(cuCtxSetCurrent, 4000)                  \
  X(cuCtxSynchronize, 2000)                 \
  X(cuCtxSetLimit, 3010)                    \
  X(cuCtxGetLimit, 3010)                    \
  X(cuCtxResetPersistingL2Cache, 11000)     \
  X(cuModuleLoadData, 2000)                 \
  X(cuModuleLoadDataEx, 2010)               \
  X(cuModuleUnload, 2000)                   \
  X(cuModuleGetFunction, 2000)              \
  X(cuModuleGetGlobal, 3020)                \
  X(cuFuncGetAttribute, 2020)               \
  X(cuFuncSetAttribute, 9000)               \
  X(cuMemAlloc, 3020)                       \
  X(cuMemFree, 3020)                        \
  X(cuMemGetInfo, 3020)                     \
  X(cuMemcpyHtoD, 3020)                     \
  X(cuMemcpyDtoH, 3020)                     \
  X(cuMemcpyDtoDAsync, 3020)                \
  X(cuMemsetD8, 3020)                       \
  X(cuMemsetD8Async, 3020)                  \
  X(cuMemsetD32Async, 3020)                 \
  X(cuMemHostAlloc, 2020)                   \
  X(cuMemFreeHost, 2000)                    \
  X(cuMemHostGetDevicePointer, 3020)        \
  X(cuStreamCreate, 2000)                   \
  X(cuStreamDestroy, 4000)                  \
  X(cuStreamSynchronize, 2000)              \
  X(cuStreamQuery, 2000)                    \
  X(cuEventCreate, 2000)                    \
  X(cuEventDestroy, 4000)                   \
  X(cuEventRecord, 2000)                    \
  X(cuEventQuery, 2000)                     \
  X(cuEventSynchronize, 2000)               \
  X(cuEventElapsedTime, 12080)              \
  X(cuLaunchKernel, 4000)                   \
  X(cuLaunchCooperativeKernel, 9000)

// One function pointer per entry point, named as the driver names it (cuda.h's
// `#define cuMemAlloc cuMemAlloc_v2` renames the member consistently, which is
// harmless). Filled once by LoadDriver(), then read-only.
struct DriverApi {
#define KERNELEVAL_CUDA_DECLARE_MEMBER(name, abi_version) \
  PFN_##name##_v##abi_version name = nullptr;
  KERNELEVAL_CUDA_DRIVER_FUNCTIONS(KERNELEVAL_CUDA_DECLARE_MEMBER)
#undef KERNELEVAL_CUDA_DECLARE_MEMBER

  int driver_version = 0;    // e.g. 13000 for CUDA 13.0
  int device_count = 0;      // after cuInit
  std::string library_path;  // what was dlopen()ed
};

inline constexpr char kDriverLibrary[] = "libcuda.so.1";
// Names another driver library (a path or soname) to load instead: a driver
// installed outside the loader's path, or the test driver that runs kernels
// compiled for the host (tests/support/fake_cuda). Read once, by LoadDriver().
inline constexpr char kDriverLibraryEnv[] = "KERNELEVAL_CUDA_DRIVER";
// kDriverLibrary, or what kDriverLibraryEnv names when it is set and not empty.
std::string DriverLibrary();

// The process-wide driver (DriverLibrary()), loaded and initialised (cuInit)
// on first use; the result, success or failure, is cached. Errors (FAILED_PRECONDITION):
//   "no CUDA driver (libcuda.so.1 not found: ...)"  no library, or the stub
//   "no CUDA device"                                driver but no usable GPU
// The library is never dlclose()d: the driver keeps threads and handlers.
absl::StatusOr<const DriverApi*> LoadDriver();

// Loads `library` (a path or soname) and initialises it, uncached. For tests
// and tools; the returned table stays valid for the life of the process.
absl::StatusOr<const DriverApi*> LoadDriverFrom(const std::string& library);

// --------------------------------------------------------------------- errors

// "CUDA_ERROR_ILLEGAL_ADDRESS"; "CUDA_ERROR_UNKNOWN_CODE" for a value this
// table does not know. Our own table: the driver's cuGetErrorName is not
// available when the driver is missing or a stub.
absl::string_view CuResultName(CUresult result);
// One sentence from cuda.h's documentation of the value; "" when unknown.
absl::string_view CuResultDescription(CUresult result);
// Every code the table knows, for tests and tools.
size_t CuResultTableSize();

// Errors after which the context is unusable ("sticky": illegal address,
// misaligned address, launch failure, assert, trap, ...). The process must
// exit and a fresh worker take over. Unknown codes count as sticky.
bool IsStickyError(CUresult result);

// An absl::Status for a failed driver call, e.g.
//   "CUDA_ERROR_OUT_OF_MEMORY (2) in cuMemAlloc(&ptr, bytes) at evaluator/cuda/resources.cc:41:
//    The API call failed because it was unable to allocate enough memory ..."
// Code: RESOURCE_EXHAUSTED for out of memory, INVALID_ARGUMENT for bad
// values, FAILED_PRECONDITION for no driver/device, INTERNAL otherwise. The
// CUresult travels as a payload (CuResultOf).
absl::Status CuError(CUresult result, absl::string_view call, const char* file, int line);
// The payload type URL under which CuError stores the CUresult (decimal).
inline constexpr char kCuResultPayloadUrl[] = "type.kerneleval/cuda.CUresult";
// The CUresult a CuError status carries; nullopt for other statuses.
std::optional<CUresult> CuResultOf(const absl::Status& status);
// A CuError status whose CUresult is sticky (false for other statuses).
bool IsStickyError(const absl::Status& status);
// For destructors: writes the same text to stderr, never throws.
void LogCuError(CUresult result, const char* call, const char* file, int line) noexcept;

}  // namespace kerneleval::cuda

// Returns a CuError status from the enclosing function when `expr` (a CUresult
// expression, e.g. api.cuMemAlloc(&ptr, n)) fails.
#define KE_CU_RETURN_IF_ERROR(expr)                                                 \
  do {                                                                              \
    const CUresult ke_cu_result_ = (expr);                                          \
    if (ke_cu_result_ != CUDA_SUCCESS) {                                            \
      return ::kerneleval::cuda::CuError(ke_cu_result_, #expr, __FILE__, __LINE__); \
    }                                                                               \
  } while (0)

// No-throw variant for destructors and cleanup paths: logs and carries on.
#define KE_CU_LOG_IF_ERROR(expr)                                                \
  do {                                                                          \
    const CUresult ke_cu_result_ = (expr);                                      \
    if (ke_cu_result_ != CUDA_SUCCESS) {                                        \
      ::kerneleval::cuda::LogCuError(ke_cu_result_, #expr, __FILE__, __LINE__); \
    }                                                                           \
  } while (0)
