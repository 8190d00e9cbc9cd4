#include "evaluator/cuda/driver.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kerneleval::cuda {
namespace {

struct CuResultEntry {
  int value;
  const char* name;
  const char* description;
};

constexpr CuResultEntry kCuResults[] = {
#include "evaluator/cuda/cu_result_table.inc"
};

const CuResultEntry* FindCuResult(CUresult result) {
  for (const auto& entry : kCuResults) {
    if (entry.value == static_cast<int>(result)) return &entry;
  }
  return nullptr;
}

// "evaluator/cuda/x.cc" from an absolute __FILE__, for readable messages.
absl::string_view ShortFile(const char* file) {
  absl::string_view path(file);
  size_t first = absl::string_view::npos;
  for (absl::string_view root : {"/evaluator/", "/tests/", "/cli/", "/server/", "/bench/"}) {
    first = std::min(first, path.find(root));
  }
  return first == absl::string_view::npos ? path : path.substr(first + 1);
}

absl::StatusCode CodeFor(CUresult result) {
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
      return absl::StatusCode::kResourceExhausted;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
      return absl::StatusCode::kInvalidArgument;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_INVALID_DEVICE:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

std::string CuErrorText(CUresult result, absl::string_view call, const char* file, int line) {
  return absl::StrCat(CuResultName(result), " (", static_cast<int>(result), ") in ", call, " at ",
                      ShortFile(file), ":", line, ": ", CuResultDescription(result));
}

// cuGetProcAddress_v2, CUDA 12.0+: (symbol, &pfn, cudaVersion, flags, &status).
using GetProcAddressFn = PFN_cuGetProcAddress_v12000;

absl::Status NoDriver(const std::string& library, absl::string_view why) {
  return absl::FailedPreconditionError(
      absl::StrCat("no CUDA driver (", library, " not found: ", why, ")"));
}

absl::StatusOr<const DriverApi*> Load(const std::string& library) {
  ::dlerror();
  void* handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    return NoDriver(library, error != nullptr ? error : "dlopen failed");
  }
  // From here on the library stays loaded on success; on failure we close it
  // (nothing of it was initialised, so unloading is safe).
  auto close_on_error = [&](absl::Status status) {
    ::dlclose(handle);
    return status;
  };
  auto get_proc = reinterpret_cast<GetProcAddressFn>(::dlsym(handle, "cuGetProcAddress_v2"));
  if (get_proc == nullptr) {
    return close_on_error(absl::FailedPreconditionError(absl::StrCat(
        "no CUDA driver (", library,
        " has no cuGetProcAddress_v2: not a CUDA driver, or one older than CUDA 12.0)")));
  }

  auto api = std::make_unique<DriverApi>();
  api->library_path = library;
  // The driver's version first: cuGetProcAddress refuses (INVALID_VALUE) a
  // version above the driver's own, so the table below is resolved at
  // min(ABI version, driver version), and an older driver is told apart
  // here, before any entry point of a newer ABI is asked for.
  {
    void* fn = nullptr;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const CUresult result =
        get_proc("cuDriverGetVersion", &fn, 2020, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (result == CUDA_ERROR_STUB_LIBRARY) {
      return close_on_error(NoDriver(library, "it is the CUDA toolkit's stub library"));
    }
    if (result != CUDA_SUCCESS || fn == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) {
      return close_on_error(absl::FailedPreconditionError(
          absl::StrCat("CUDA driver ", library, " lacks cuDriverGetVersion: ",
                       result != CUDA_SUCCESS ? CuResultName(result) : "symbol not found")));
    }
    auto get_version = reinterpret_cast<PFN_cuDriverGetVersion_v2020>(fn);
    if (CUresult got = get_version(&api->driver_version); got != CUDA_SUCCESS) {
      if (got == CUDA_ERROR_STUB_LIBRARY) {
        return close_on_error(NoDriver(library, "it is the CUDA toolkit's stub library"));
      }
      return close_on_error(CuError(got, "cuDriverGetVersion", __FILE__, __LINE__));
    }
  }
  // What NVRTC of this toolkit builds (submissions' CUBINs and PTX) needs a
  // driver of the same CUDA version or newer, minor included for PTX: a
  // CUDA 12 driver, or a 13.0 one under a 13.1 build, would refuse the
  // first module with CUDA_ERROR_UNSUPPORTED_PTX_VERSION. Said plainly here
  // instead. (The worker's own kernels are embedded as PTX ISA 6.3,
  // evaluator/cuda/CMakeLists.txt: they would load on an older driver.)
  // KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER=1 tries anyway (what fails then fails
  // at its first module).
  const char* allow_older = std::getenv("KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER");
  const bool older_allowed = allow_older != nullptr && std::string_view(allow_older) == "1";
  if (api->driver_version < CUDA_VERSION && !older_allowed) {
    return close_on_error(absl::FailedPreconditionError(absl::StrCat(
        "the CUDA driver (", library, ") supports CUDA ", api->driver_version / 1000, ".",
        api->driver_version % 1000 / 10, ", older than the CUDA ", CUDA_VERSION / 1000, ".",
        CUDA_VERSION % 1000 / 10, " toolkit kerneleval was built with: install a driver for CUDA ",
        CUDA_VERSION / 1000, ".", CUDA_VERSION % 1000 / 10,
        " or newer (R580 or later for CUDA 13.0), or set KERNELEVAL_CUDA_ALLOW_OLDER_DRIVER=1 to "
        "try anyway")));
  }

  // Each entry point at the ABI version of the pointer type it is stored in,
  // or at the driver's own version when that is older (allowed above): the
  // driver then hands back its latest version, whose signature
  // driver.h's table guarantees to be the same (cuEventElapsedTime:
  // PFN_cuEventElapsedTime_v2000 and _v12080 in <cudaTypedefs.h>).
#define KERNELEVAL_CUDA_RESOLVE(name, abi_version)                                                \
  {                                                                                               \
    void* fn = nullptr;                                                                           \
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                  \
    const int asked = std::min(abi_version, api->driver_version);                                 \
    const CUresult result = get_proc(#name, &fn, asked, CU_GET_PROC_ADDRESS_DEFAULT, &found);     \
    if (result == CUDA_ERROR_STUB_LIBRARY) {                                                      \
      return close_on_error(NoDriver(library, "it is the CUDA toolkit's stub library"));          \
    }                                                                                             \
    if (result != CUDA_SUCCESS || fn == nullptr || found != CU_GET_PROC_ADDRESS_SUCCESS) {        \
      return close_on_error(absl::FailedPreconditionError(absl::StrCat(                           \
          "CUDA driver ", library, " lacks ", #name, " (ABI ", abi_version, ", asked at ", asked, \
          "): ", result != CUDA_SUCCESS ? CuResultName(result) : "symbol not found")));           \
    }                                                                                             \
    api->name = reinterpret_cast<PFN_##name##_v##abi_version>(fn);                                \
  }
  KERNELEVAL_CUDA_DRIVER_FUNCTIONS(KERNELEVAL_CUDA_RESOLVE)
#undef KERNELEVAL_CUDA_RESOLVE

  // Past cuInit the driver may have started threads: never unload it again.
  const CUresult init = api->cuInit(0);
  if (init == CUDA_ERROR_STUB_LIBRARY) {
    return NoDriver(library, "it is the CUDA toolkit's stub library");
  }
  if (init == CUDA_ERROR_NO_DEVICE) {
    return absl::FailedPreconditionError("no CUDA device");
  }
  if (init != CUDA_SUCCESS) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA device (cuInit failed: ", CuResultName(init), " (",
                     static_cast<int>(init), "): ", CuResultDescription(init), ")"));
  }
  if (CUresult result = api->cuDeviceGetCount(&api->device_count);
      result != CUDA_SUCCESS || api->device_count <= 0) {
    return absl::FailedPreconditionError("no CUDA device");
  }
  return api.release();  // lives for the process, like the library
}

}  // namespace

absl::StatusOr<const DriverApi*> LoadDriverFrom(const std::string& library) {
  return Load(library);
}

std::string DriverLibrary() {
  const char* chosen = std::getenv(kDriverLibraryEnv);
  return chosen != nullptr && chosen[0] != '\0' ? std::string(chosen) : std::string(kDriverLibrary);
}

absl::StatusOr<const DriverApi*> LoadDriver() {
  static const absl::StatusOr<const DriverApi*>* const loaded =
      new absl::StatusOr<const DriverApi*>(Load(DriverLibrary()));
  return *loaded;
}

absl::string_view CuResultName(CUresult result) {
  const CuResultEntry* entry = FindCuResult(result);
  return entry != nullptr ? entry->name : "CUDA_ERROR_UNKNOWN_CODE";
}

absl::string_view CuResultDescription(CUresult result) {
  const CuResultEntry* entry = FindCuResult(result);
  return entry != nullptr ? entry->description : "";
}

size_t CuResultTableSize() { return std::size(kCuResults); }

bool IsStickyError(CUresult result) {
  switch (result) {
    // Documented as leaving the process's CUDA state unusable.
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_UNKNOWN:
      return true;
    default:
      return FindCuResult(result) == nullptr;  // unknown: assume the worst
  }
}

absl::Status CuError(CUresult result, absl::string_view call, const char* file, int line) {
  absl::Status status(CodeFor(result), CuErrorText(result, call, file, line));
  status.SetPayload(kCuResultPayloadUrl, absl::Cord(absl::StrCat(static_cast<int>(result))));
  return status;
}

std::optional<CUresult> CuResultOf(const absl::Status& status) {
  absl::optional<absl::Cord> payload = status.GetPayload(kCuResultPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  int value = 0;
  if (!absl::SimpleAtoi(std::string(*payload), &value)) return std::nullopt;
  return static_cast<CUresult>(value);
}

bool IsStickyError(const absl::Status& status) {
  const std::optional<CUresult> result = CuResultOf(status);
  return result.has_value() && IsStickyError(*result);
}

void LogCuError(CUresult result, const char* call, const char* file, int line) noexcept {
  // No allocation: this runs in destructors, possibly after a sticky error.
  const CuResultEntry* entry = FindCuResult(result);
  std::fprintf(stderr, "kerneleval cuda: %s (%d) in %s at %.*s:%d (ignored during cleanup)\n",
               entry != nullptr ? entry->name : "CUDA_ERROR_UNKNOWN_CODE", static_cast<int>(result),
               call, static_cast<int>(ShortFile(file).size()), ShortFile(file).data(), line);
}

}  // namespace kerneleval::cuda
