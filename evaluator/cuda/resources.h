// Move-only owners of driver handles: primary context, module, device buffer,
// pinned host buffer, stream, event. Each holds the DriverApi it came from;
// destructors never throw (failures are logged with KE_CU_LOG_IF_ERROR).
// Moved-from objects own nothing. Kernel functions (CUfunction) belong to
// their module and have no destroy call, so KernelFunction is a plain view.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "evaluator/cuda/driver.h"

namespace kerneleval::cuda {

// The process's context is lost: a sticky error, or a kernel still running
// past its deadline (only process exit stops it). Every device call would
// then fail, or wait forever (cuCtxSynchronize behind a kernel that never
// ends), and the process exits after its reply, which returns everything to
// the driver (it clears memory before another process gets it). From then on
// the handles below are dropped without a device call. One flag per process:
// a worker process holds one context.
void MarkContextLost() noexcept;
[[nodiscard]] bool ContextLost() noexcept;

// The device's primary context (the one the runtime API would use), retained
// for the owner's lifetime and made current on the calling thread.
class PrimaryContext {
 public:
  static absl::StatusOr<PrimaryContext> Retain(const DriverApi& api, CUdevice device);

  PrimaryContext(PrimaryContext&& other) noexcept;
  PrimaryContext& operator=(PrimaryContext&& other) noexcept;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  ~PrimaryContext();

  absl::Status MakeCurrent() const;
  [[nodiscard]] CUcontext get() const { return context_; }
  [[nodiscard]] CUdevice device() const { return device_; }

 private:
  PrimaryContext(const DriverApi* api, CUdevice device, CUcontext context)
      : api_(api), device_(device), context_(context) {}
  void Release() noexcept;

  const DriverApi* api_ = nullptr;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
};

// A non-owning kernel handle (owned by its Module) with the attributes the
// launch checks need.
struct KernelFunction {
  CUfunction handle = nullptr;
  std::string symbol;
  int max_threads_per_block = 0;  // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK (registers, bounds)
  int static_shared_bytes = 0;    // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
  int max_dynamic_shared_bytes =
      0;                // current opt-in, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  int registers = 0;    // CU_FUNC_ATTRIBUTE_NUM_REGS
  int local_bytes = 0;  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (per thread)
};

// A loaded CUBIN or PTX image (cuModuleLoadData[Ex]); unloaded on destruction.
class Module {
 public:
  // `image`: a CUBIN, fatbin or NUL-free PTX text (a copy is NUL-terminated).
  // On failure the JIT's error log, if any, is in the status message.
  static absl::StatusOr<Module> Load(const DriverApi& api, absl::string_view image);

  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module();

  // NOT_FOUND when the module has no such symbol.
  absl::StatusOr<KernelFunction> GetFunction(const std::string& symbol) const;
  // A module-scope variable in global memory: where it lives and its bytes.
  // NOT_FOUND when the module has no such symbol.
  struct Global {
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
  };
  absl::StatusOr<Global> GetGlobal(const std::string& symbol) const;
  [[nodiscard]] CUmodule get() const { return module_; }

 private:
  Module(const DriverApi* api, CUmodule module) : api_(api), module_(module) {}
  void Unload() noexcept;

  const DriverApi* api_ = nullptr;
  CUmodule module_ = nullptr;
};

// Device memory from cuMemAlloc (256-byte aligned). Freed memory is first
// overwritten with zeros and the device synchronised, so that no later
// allocation in this process (another program's buffers) can read what it held.
class DeviceBuffer {
 public:
  static absl::StatusOr<DeviceBuffer> Allocate(const DriverApi& api, size_t bytes);

  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  // Zero-fills and frees now; reports what the destructor would only log.
  absl::Status ScrubAndFree();
  // Drops the handle without touching the device (what every handle does
  // once ContextLost()).
  void Abandon() noexcept {
    api_ = nullptr;
    ptr_ = 0;
    bytes_ = 0;
  }

  [[nodiscard]] CUdeviceptr ptr() const { return ptr_; }
  [[nodiscard]] size_t bytes() const { return bytes_; }
  [[nodiscard]] bool empty() const { return ptr_ == 0; }

 private:
  DeviceBuffer(const DriverApi* api, CUdeviceptr ptr, size_t bytes)
      : api_(api), ptr_(ptr), bytes_(bytes) {}
  struct Failure {
    CUresult result = CUDA_SUCCESS;
    const char* call = "";
    int line = 0;
  };
  // Scrub, synchronise, free; the first failure (the free is tried anyway).
  Failure Release() noexcept;

  const DriverApi* api_ = nullptr;
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

// Page-locked host memory mapped into the device's address space
// (cuMemHostAlloc DEVICEMAP | PORTABLE): the host and a running kernel see
// each other's writes, which the stream-holding kernel relies on.
class PinnedHostBuffer {
 public:
  static absl::StatusOr<PinnedHostBuffer> Allocate(const DriverApi& api, size_t bytes);

  PinnedHostBuffer() = default;
  PinnedHostBuffer(PinnedHostBuffer&& other) noexcept;
  PinnedHostBuffer& operator=(PinnedHostBuffer&& other) noexcept;
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;
  ~PinnedHostBuffer();

  [[nodiscard]] void* data() const { return data_; }
  [[nodiscard]] CUdeviceptr device_ptr() const { return device_ptr_; }
  [[nodiscard]] size_t bytes() const { return bytes_; }

 private:
  void Free() noexcept;

  const DriverApi* api_ = nullptr;
  void* data_ = nullptr;
  CUdeviceptr device_ptr_ = 0;
  size_t bytes_ = 0;
};

// A non-blocking stream (no implicit synchronisation with the legacy stream).
class Stream {
 public:
  static absl::StatusOr<Stream> Create(const DriverApi& api);

  Stream() = default;
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  [[nodiscard]] CUstream get() const { return stream_; }

 private:
  Stream(const DriverApi* api, CUstream stream) : api_(api), stream_(stream) {}
  void Destroy() noexcept;

  const DriverApi* api_ = nullptr;
  CUstream stream_ = nullptr;
};

// A timing event (CU_EVENT_DEFAULT: timestamps on, spin on synchronise).
class Event {
 public:
  static absl::StatusOr<Event> Create(const DriverApi& api);

  Event() = default;
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event();

  absl::Status Record(CUstream stream) const;
  [[nodiscard]] CUevent get() const { return event_; }

  // [ms] between two completed events (resolution about 0.5 µs).
  static absl::StatusOr<float> ElapsedMilliseconds(const DriverApi& api, const Event& start,
                                                   const Event& stop);

 private:
  Event(const DriverApi* api, CUevent event) : api_(api), event_(event) {}
  void Destroy() noexcept;

  const DriverApi* api_ = nullptr;
  CUevent event_ = nullptr;
};

}  // namespace kerneleval::cuda
