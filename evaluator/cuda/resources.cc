#include "evaluator/cuda/resources.h"

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace kerneleval::cuda {
namespace {

std::atomic<bool> context_lost{false};

}  // namespace

void MarkContextLost() noexcept { context_lost.store(true); }
bool ContextLost() noexcept { return context_lost.load(); }

// ------------------------------------------------------------- PrimaryContext

absl::StatusOr<PrimaryContext> PrimaryContext::Retain(const DriverApi& api, CUdevice device) {
  CUcontext context = nullptr;
  KE_CU_RETURN_IF_ERROR(api.cuDevicePrimaryCtxRetain(&context, device));
  PrimaryContext owner(&api, device, context);
  if (absl::Status status = owner.MakeCurrent(); !status.ok()) return status;
  return owner;
}

PrimaryContext::PrimaryContext(PrimaryContext&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)),
      device_(other.device_),
      context_(std::exchange(other.context_, nullptr)) {}

PrimaryContext& PrimaryContext::operator=(PrimaryContext&& other) noexcept {
  if (this != &other) {
    Release();
    api_ = std::exchange(other.api_, nullptr);
    device_ = other.device_;
    context_ = std::exchange(other.context_, nullptr);
  }
  return *this;
}

PrimaryContext::~PrimaryContext() { Release(); }

void PrimaryContext::Release() noexcept {
  if (context_ != nullptr && api_ != nullptr && !ContextLost()) {
    KE_CU_LOG_IF_ERROR(api_->cuDevicePrimaryCtxRelease(device_));
  }
  context_ = nullptr;
}

absl::Status PrimaryContext::MakeCurrent() const {
  KE_CU_RETURN_IF_ERROR(api_->cuCtxSetCurrent(context_));
  return absl::OkStatus();
}

// --------------------------------------------------------------------- Module

absl::StatusOr<Module> Module::Load(const DriverApi& api, absl::string_view image) {
  // The driver reads PTX as a NUL-terminated string and CUBIN/fatbin by their
  // own headers; a NUL-terminated copy serves both.
  std::string owned(image);
  std::vector<char> error_log(size_t{16} * 1024, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  // cuModuleLoadDataEx takes every option value as a void*, sizes included.
  void* values[] = {
      error_log.data(),
      // NOLINTNEXTLINE(performance-no-int-to-ptr): the driver API passes a size as a void*
      reinterpret_cast<void*>(static_cast<uintptr_t>(error_log.size()))};
  CUmodule module = nullptr;
  const CUresult result = api.cuModuleLoadDataEx(&module, owned.c_str(), 2, options, values);
  if (result != CUDA_SUCCESS) {
    absl::Status status =
        CuError(result, "cuModuleLoadDataEx(&module, image, ...)", __FILE__, __LINE__);
    error_log.back() = '\0';
    if (error_log[0] != '\0') {
      status = absl::Status(status.code(),
                            absl::StrCat(status.message(), "\nJIT log:\n", error_log.data()));
      status.SetPayload(kCuResultPayloadUrl, absl::Cord(absl::StrCat(static_cast<int>(result))));
    }
    return status;
  }
  return Module(&api, module);
}

Module::Module(Module&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)), module_(std::exchange(other.module_, nullptr)) {}

Module& Module::operator=(Module&& other) noexcept {
  if (this != &other) {
    Unload();
    api_ = std::exchange(other.api_, nullptr);
    module_ = std::exchange(other.module_, nullptr);
  }
  return *this;
}

Module::~Module() { Unload(); }

void Module::Unload() noexcept {
  if (module_ != nullptr && api_ != nullptr && !ContextLost()) {
    KE_CU_LOG_IF_ERROR(api_->cuModuleUnload(module_));
  }
  module_ = nullptr;
}

absl::StatusOr<KernelFunction> Module::GetFunction(const std::string& symbol) const {
  KernelFunction function;
  function.symbol = symbol;
  const CUresult result = api_->cuModuleGetFunction(&function.handle, module_, symbol.c_str());
  if (result == CUDA_ERROR_NOT_FOUND) {
    return absl::NotFoundError(absl::StrCat("kernel symbol ", symbol, " not found in the module"));
  }
  KE_CU_RETURN_IF_ERROR(result);
  KE_CU_RETURN_IF_ERROR(api_->cuFuncGetAttribute(
      &function.max_threads_per_block, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function.handle));
  KE_CU_RETURN_IF_ERROR(api_->cuFuncGetAttribute(
      &function.static_shared_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function.handle));
  KE_CU_RETURN_IF_ERROR(api_->cuFuncGetAttribute(&function.max_dynamic_shared_bytes,
                                                 CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                 function.handle));
  KE_CU_RETURN_IF_ERROR(
      api_->cuFuncGetAttribute(&function.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, function.handle));
  KE_CU_RETURN_IF_ERROR(api_->cuFuncGetAttribute(
      &function.local_bytes, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, function.handle));
  return function;
}

absl::StatusOr<Module::Global> Module::GetGlobal(const std::string& symbol) const {
  Global global;
  const CUresult result =
      api_->cuModuleGetGlobal(&global.ptr, &global.bytes, module_, symbol.c_str());
  if (result == CUDA_ERROR_NOT_FOUND) {
    return absl::NotFoundError(absl::StrCat("global ", symbol, " not found in the module"));
  }
  KE_CU_RETURN_IF_ERROR(result);
  return global;
}

// --------------------------------------------------------------- DeviceBuffer

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(const DriverApi& api, size_t bytes) {
  if (bytes == 0) return DeviceBuffer();  // a null pointer: nothing to read or write
  CUdeviceptr ptr = 0;
  KE_CU_RETURN_IF_ERROR(api.cuMemAlloc(&ptr, bytes));
  return DeviceBuffer(&api, ptr, bytes);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)),
      ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (const Failure failure = Release(); failure.result != CUDA_SUCCESS) {
      LogCuError(failure.result, failure.call, __FILE__, failure.line);
    }
    api_ = std::exchange(other.api_, nullptr);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (const Failure failure = Release(); failure.result != CUDA_SUCCESS) {
    LogCuError(failure.result, failure.call, __FILE__, failure.line);
  }
}

absl::Status DeviceBuffer::ScrubAndFree() {
  const Failure failure = Release();
  if (failure.result == CUDA_SUCCESS) return absl::OkStatus();
  return CuError(failure.result, failure.call, __FILE__, failure.line);
}

DeviceBuffer::Failure DeviceBuffer::Release() noexcept {
  Failure failure;
  if (ptr_ == 0 || api_ == nullptr || ContextLost()) {
    Abandon();
    return failure;
  }
  // First wait for everything queued anywhere in the context: the memset
  // runs on the legacy stream, which does not wait for a non-blocking stream
  // where a kernel may still be writing (a plan abandoned after a failed
  // launch). The "synchronous" memset is still asynchronous to the host for
  // device memory; the second synchronise makes the zeros land before the
  // free.
  if (CUresult s = api_->cuCtxSynchronize(); s != CUDA_SUCCESS) {
    failure = {s, "cuCtxSynchronize()", __LINE__};
  } else if (CUresult r = api_->cuMemsetD8(ptr_, 0, bytes_); r != CUDA_SUCCESS) {
    failure = {r, "cuMemsetD8(ptr, 0, bytes)", __LINE__};
  } else if (CUresult s2 = api_->cuCtxSynchronize(); s2 != CUDA_SUCCESS) {
    failure = {s2, "cuCtxSynchronize()", __LINE__};
  }
  if (CUresult r = api_->cuMemFree(ptr_); r != CUDA_SUCCESS && failure.result == CUDA_SUCCESS) {
    failure = {r, "cuMemFree(ptr)", __LINE__};
  }
  ptr_ = 0;
  bytes_ = 0;
  return failure;
}

// ----------------------------------------------------------- PinnedHostBuffer

absl::StatusOr<PinnedHostBuffer> PinnedHostBuffer::Allocate(const DriverApi& api, size_t bytes) {
  PinnedHostBuffer buffer;
  KE_CU_RETURN_IF_ERROR(api.cuMemHostAlloc(&buffer.data_, bytes,
                                           CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
  buffer.api_ = &api;
  buffer.bytes_ = bytes;
  KE_CU_RETURN_IF_ERROR(api.cuMemHostGetDevicePointer(&buffer.device_ptr_, buffer.data_, 0));
  return buffer;
}

PinnedHostBuffer::PinnedHostBuffer(PinnedHostBuffer&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      device_ptr_(std::exchange(other.device_ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

PinnedHostBuffer& PinnedHostBuffer::operator=(PinnedHostBuffer&& other) noexcept {
  if (this != &other) {
    Free();
    api_ = std::exchange(other.api_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    device_ptr_ = std::exchange(other.device_ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

PinnedHostBuffer::~PinnedHostBuffer() { Free(); }

void PinnedHostBuffer::Free() noexcept {
  if (data_ != nullptr && api_ != nullptr && !ContextLost()) {
    KE_CU_LOG_IF_ERROR(api_->cuMemFreeHost(data_));
  }
  data_ = nullptr;
  device_ptr_ = 0;
  bytes_ = 0;
}

// --------------------------------------------------------------------- Stream

absl::StatusOr<Stream> Stream::Create(const DriverApi& api) {
  CUstream stream = nullptr;
  KE_CU_RETURN_IF_ERROR(api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  return Stream(&api, stream);
}

Stream::Stream(Stream&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)), stream_(std::exchange(other.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    Destroy();
    api_ = std::exchange(other.api_, nullptr);
    stream_ = std::exchange(other.stream_, nullptr);
  }
  return *this;
}

Stream::~Stream() { Destroy(); }

void Stream::Destroy() noexcept {
  if (stream_ != nullptr && api_ != nullptr && !ContextLost()) {
    KE_CU_LOG_IF_ERROR(api_->cuStreamDestroy(stream_));
  }
  stream_ = nullptr;
}

// ---------------------------------------------------------------------- Event

absl::StatusOr<Event> Event::Create(const DriverApi& api) {
  CUevent event = nullptr;
  KE_CU_RETURN_IF_ERROR(api.cuEventCreate(&event, CU_EVENT_DEFAULT));
  return Event(&api, event);
}

Event::Event(Event&& other) noexcept
    : api_(std::exchange(other.api_, nullptr)), event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    Destroy();
    api_ = std::exchange(other.api_, nullptr);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

Event::~Event() { Destroy(); }

void Event::Destroy() noexcept {
  if (event_ != nullptr && api_ != nullptr && !ContextLost()) {
    KE_CU_LOG_IF_ERROR(api_->cuEventDestroy(event_));
  }
  event_ = nullptr;
}

absl::Status Event::Record(CUstream stream) const {
  KE_CU_RETURN_IF_ERROR(api_->cuEventRecord(event_, stream));
  return absl::OkStatus();
}

absl::StatusOr<float> Event::ElapsedMilliseconds(const DriverApi& api, const Event& start,
                                                 const Event& stop) {
  float ms = 0;
  KE_CU_RETURN_IF_ERROR(api.cuEventElapsedTime(&ms, start.get(), stop.get()));
  return ms;
}

}  // namespace kerneleval::cuda
