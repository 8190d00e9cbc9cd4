// A CUDA driver for machines without a GPU, for tests only: a shared library
// that exports cuGetProcAddress_v2 and implements, on the host, every entry
// point kerneleval's driver table resolves (evaluator/cuda/driver.h). With
// KERNELEVAL_CUDA_DRIVER naming it, the real CudaWorker and CudaBackend code
// runs unchanged: memory, streams, events, modules, launches, limits, sticky
// errors and hangs behave the way the driver documents them.
//
// What it cannot do is run GPU code. A "module image" it accepts is either
//   - the worker's own auxiliary PTX (recognised by its entry names: the hold,
//     fill, stash, copy, flush-read and FMA kernels are implemented natively
//     here), or
//   - a shared object built by the CPU backend's HostCompiler from CUDA C++
//     (an x86-64 ELF; see prelude/kerneleval_cpu_abi.h), whose kernels run on
//     the CPU backend's device runtime, linked into this library; or
//   - PTX text "// kerneleval fake CUDA host module: PATH" naming such a file
//     (how a test reaches the worker's PTX JIT fallback).
// A CUBIN (an ELF for the CUDA machine) gives CUDA_ERROR_NO_BINARY_FOR_GPU and
// PTX of other programs CUDA_ERROR_INVALID_PTX, each with a JIT log saying why.
//
// Semantics kept on purpose (the worker depends on them):
//   - device memory is host memory; a CUdeviceptr is its address;
//   - a created stream is a host thread executing its queue in order;
//     CU_STREAM_NON_BLOCKING streams do not wait for the legacy stream's
//     synchronous calls (cuMemcpyHtoD, cuMemsetD8, ...) nor those for them;
//   - events are recorded by the stream thread when it reaches them;
//     cuEventElapsedTime is the steady clock between the two [ms];
//   - a fault in kernel code (SIGSEGV, SIGBUS, SIGILL, SIGFPE on a stream or
//     kernel thread) or a trap/assert makes the context's error sticky: every
//     later call returns it, as on a GPU after an illegal address; the
//     faulting thread is parked for the life of the process;
//   - a kernel that never ends keeps its stream busy forever (the caller's
//     timeout is what ends it), and so does a kernel that deadlocks at a
//     barrier (on a GPU it would hang too).
// Not modelled: L2, clocks (the hold kernel reports 1 cycle per ns at the
// 1 GHz the device claims; KERNELEVAL_FAKE_CUDA_THROTTLE_EVERY=N halves every
// Nth report; KERNELEVAL_FAKE_CUDA_HOLD_CLOCK_MHZ=N makes every hold report N
// MHz (locked clocks); KERNELEVAL_FAKE_CUDA_LATE_HOLD_EVERY=N makes every Nth hold say
// it timed out; KERNELEVAL_FAKE_CUDA_PUBLISH_HOLD_REPORT=1 puts the address of
// each hold's report in the environment, for a test kernel to overwrite),
// occupancy, timing of anything but the host.
// KERNELEVAL_FAKE_CUDA_DEVICE_NAME: the name cuDeviceGetName reports.
// KERNELEVAL_FAKE_CUDA_COMPUTE_CAPABILITY=X.Y: the compute capability it
// reports (default 9.0); module images are host modules whatever it says.
// KERNELEVAL_FAKE_CUDA_LAUNCH_STACK_BYTES=B: every launch grows
// CU_LIMIT_STACK_SIZE to at least B, as the driver does for a kernel whose
// frame needs more, and never shrinks it.
// KERNELEVAL_FAKE_CUDA_LAUNCH_LATENCY_US=N: every launch but the hold's takes
// N us on the host before its work is queued.
// KERNELEVAL_FAKE_CUDA_PERSISTING_RESET_UNSUPPORTED=1: cuCtxResetPersistingL2Cache
// answers CUDA_ERROR_NOT_SUPPORTED.
// KERNELEVAL_FAKE_CUDA_PERSISTING_LIMIT_ERROR=CODE: cuCtxSetLimit of the
// persisting-L2 size answers that CUresult.
// KERNELEVAL_FAKE_CUDA_STICKY_ALLOC_BYTES=B: the first cuMemAlloc of B bytes
// fails with a sticky CUDA_ERROR_ECC_UNCORRECTABLE.
// KERNELEVAL_FAKE_CUDA_MEMSET_D32_ERROR=CODE: every cuMemsetD32Async (the
// worker's L2 flush) fails with that CUresult (214, ECC: sticky); with
// KERNELEVAL_FAKE_CUDA_MEMSET_D32_ERROR_FIRST=N only the first N.
// KERNELEVAL_FAKE_CUDA_DEVICES sets the device count (default 1, at most 8);
// KERNELEVAL_FAKE_CUDA_DRIVER_VERSION the version cuDriverGetVersion reports
// (default: the toolkit's CUDA_VERSION).
// KERNELEVAL_FAKE_CUDA_STATS_DIR=DIR: each process counts what it holds
// (memory, modules, streams, events, contexts) in DIR/<pid>, which tests
// read to check that the worker gives back what it takes (fake_cuda_stats.h).
#include <cuda.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "evaluator/cpu/device_runtime.h"
#include "evaluator/cpu/prelude/kerneleval_cpu_abi.h"
#include "evaluator/cuda/keyed_mix.h"
#include "evaluator/data/element_generator.h"
#include "evaluator/data/leftovers.h"
#include "tests/support/fake_cuda/fake_cuda_stats.h"

namespace {

using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------------- device

constexpr char kDeviceName[] = "kerneleval fake CUDA device (host CPU)";
constexpr int kSmCount = 4;
constexpr int kClockKhz = 1'000'000;            // 1 GHz: the hold reports 1 cycle per ns
constexpr int kL2Bytes = 1 << 20;               // small: the worker memsets 2x L2 per sample
constexpr int kMaxPersistingL2Bytes = 1 << 18;  // non-zero: the worker sets the limit, resets
constexpr uint64_t kTotalMemoryBytes = uint64_t{16} << 30;
constexpr int kDefaultMaxDynamicShared = 48 * 1024;
constexpr int kMaxSharedOptIn = 227 * 1024;

int DeviceCount() {
  static const int count = [] {
    const char* text = std::getenv("KERNELEVAL_FAKE_CUDA_DEVICES");
    return std::clamp(text != nullptr ? std::atoi(text) : 1, 0, 8);
  }();
  return count;
}

bool IsDevice(int ordinal) { return ordinal >= 0 && ordinal < DeviceCount(); }

// KERNELEVAL_FAKE_CUDA_COMPUTE_CAPABILITY=X.Y: the compute capability the
// device reports (default 9.0), for the worker's choice of CUBIN or PTX.
std::pair<int, int> ComputeCapability() {
  static const std::pair<int, int> capability = [] {
    const char* text = std::getenv("KERNELEVAL_FAKE_CUDA_COMPUTE_CAPABILITY");
    int major = 9;
    int minor = 0;
    if (text != nullptr && std::sscanf(text, "%d.%d", &major, &minor) != 2) {
      major = 9;
      minor = 0;
    }
    return std::pair{major, minor};
  }();
  return capability;
}

int Attribute(CUdevice_attribute attribute) {
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      return ComputeCapability().first;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      return ComputeCapability().second;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      return kSmCount;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
      return kL2Bytes;
    case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE:
      return kMaxPersistingL2Bytes;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
      return kClockKhz;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
      return 2'619'000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
      return 5120;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      return 32;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      return 1;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
      return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      return kDefaultMaxDynamicShared;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      return kMaxSharedOptIn;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
      return 228 * 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
      return 2048;
    default:
      return 0;
  }
}

// -------------------------------------------------------------------- stats

using kerneleval::fake_cuda::DriverStat;
using kerneleval::fake_cuda::DriverStats;

// The counters of fake_cuda_stats.h, in a shared mapping of DIR/<pid>; null
// (nothing counted) unless KERNELEVAL_FAKE_CUDA_STATS_DIR is set.
int64_t* stats_counters = nullptr;

// [bytes per thread] CU_LIMIT_STACK_SIZE of a new context.
constexpr size_t kInitialStackBytes = 1024;

void RecordStackLimit(size_t bytes);

void OpenStats() {
  const char* dir = std::getenv("KERNELEVAL_FAKE_CUDA_STATS_DIR");
  if (dir == nullptr || *dir == '\0') return;
  const std::string path = kerneleval::fake_cuda::DriverStatsPath(dir, ::getpid());
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (::ftruncate(fd, sizeof(DriverStats)) == 0) {
    void* mapped = ::mmap(nullptr, sizeof(DriverStats), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapped != MAP_FAILED) stats_counters = static_cast<int64_t*>(mapped);
  }
  ::close(fd);
  RecordStackLimit(kInitialStackBytes);
}

void Count(DriverStat stat, int64_t delta = 1) {
  if (stats_counters == nullptr) return;
  std::atomic_ref<int64_t>(stats_counters[stat]).fetch_add(delta, std::memory_order_relaxed);
}

// A gauge: the stack limit now, and the most it has been.
void RecordStackLimit(size_t bytes) {
  if (stats_counters == nullptr) return;
  std::atomic_ref<int64_t>(stats_counters[DriverStat::kStackLimitBytes])
      .store(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  std::atomic_ref<int64_t> peak(stats_counters[DriverStat::kStackLimitPeakBytes]);
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (seen < static_cast<int64_t>(bytes) &&
         !peak.compare_exchange_weak(seen, static_cast<int64_t>(bytes))) {
  }
}

// ------------------------------------------------------------ sticky errors

// The context's sticky error (CUDA_SUCCESS: none). One context per process is
// all the worker uses.
std::atomic<int> sticky_error{CUDA_SUCCESS};
// Threads that called the API: a fault there is the caller's bug, not a
// kernel's, and crashes the process as it would with the real driver.
thread_local bool api_thread = false;
// Threads executing queued device work (stream threads, inside an op).
thread_local bool in_device_work = false;
// Host-module kernels running now (their blocks may run on the CPU backend's
// pool threads, which are neither of the above).
std::atomic<int> kernels_running{0};

CUresult Sticky() { return static_cast<CUresult>(sticky_error.load()); }

void SetSticky(CUresult result) {
  int expected = CUDA_SUCCESS;
  sticky_error.compare_exchange_strong(expected, static_cast<int>(result));
}

void WriteStderr(const char* text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

[[noreturn]] void ParkForever() {
  for (;;) ::pause();
}

void OnFaultSignal(int signal, siginfo_t*, void*) {
  if (api_thread || (!in_device_work && kernels_running.load() == 0)) {
    // Not kernel code: restore the default action; returning re-executes the
    // faulting instruction, which ends the process with this signal.
    ::signal(signal, SIG_DFL);
    return;
  }
  SetSticky(signal == SIGILL   ? CUDA_ERROR_ILLEGAL_INSTRUCTION
            : signal == SIGFPE ? CUDA_ERROR_LAUNCH_FAILED
                               : CUDA_ERROR_ILLEGAL_ADDRESS);
  WriteStderr("kerneleval fake cuda: a fault in kernel code; the context's error is sticky\n");
  ParkForever();
}

// The CPU backend's runtime calls this for a trap, an assert, a deadlock or
// exhausted fiber stacks; it must not return.
void OnKernelFatal(const char* message) {
  const std::string text = message != nullptr ? message : "";
  if (text.find("deadlock") == std::string::npos) {
    // A deadlock hangs a GPU: the stream simply never finishes.
    SetSticky(text.find("ssert") != std::string::npos ? CUDA_ERROR_ASSERT
                                                      : CUDA_ERROR_LAUNCH_FAILED);
  }
  WriteStderr("kerneleval fake cuda: kernel ended: ");
  WriteStderr(text.c_str());
  WriteStderr("\n");
  ParkForever();
}

const kerneleval_cpu_runtime* DeviceRuntime() {
  static const kerneleval_cpu_runtime* const runtime = [] {
    kerneleval::cpu::DeviceRuntimeOptions options;
    options.threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    // Shared memory keeps what the last block left, as an SM's: the worker's
    // ke_clear_shared (ClearDynamicSharedMemory here) is what a test sees.
    options.poison_shared_per_block = false;
    return kerneleval::cpu::InstallDeviceRuntime(options, OnKernelFatal);
  }();
  return runtime;
}

// ----------------------------------------------------------------- streams

struct FakeStream {
  explicit FakeStream(unsigned flags_in) : flags(flags_in) {
    thread = std::thread([this] { Loop(); });
    thread.detach();  // a kernel that never ends keeps it; the process exit ends it
  }

  void Enqueue(std::function<void()> op) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      queue.push_back(std::move(op));
    }
    changed.notify_all();
  }
  bool Idle() {
    std::lock_guard<std::mutex> lock(mutex);
    return queue.empty() && !busy;
  }
  // Until the queue is empty, or the context's error is sticky.
  CUresult Wait() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!(queue.empty() && !busy)) {
      if (Sticky() != CUDA_SUCCESS) return Sticky();
      changed.wait_for(lock, std::chrono::milliseconds(2));
    }
    return Sticky();
  }

  void Loop() {
    for (;;) {
      std::function<void()> op;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return !queue.empty() || destroyed; });
        if (queue.empty()) return;  // destroyed and drained
        op = std::move(queue.front());
        queue.pop_front();
        busy = true;
      }
      // After a sticky error nothing more executes (the driver drops work).
      if (Sticky() == CUDA_SUCCESS) {
        in_device_work = true;
        op();
        in_device_work = false;
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        busy = false;
      }
      changed.notify_all();
    }
  }

  const unsigned flags;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> queue;
  bool busy = false;
  bool destroyed = false;
  std::thread thread;
};

std::mutex streams_mutex;
std::vector<FakeStream*> live_streams;  // blocking ones are waited for by legacy calls

std::vector<FakeStream*> Streams() {
  std::lock_guard<std::mutex> lock(streams_mutex);
  return live_streams;
}

// The legacy stream: synchronous calls wait for every blocking stream first.
CUresult BeforeLegacyCall() {
  for (FakeStream* stream : Streams()) {
    if ((stream->flags & CU_STREAM_NON_BLOCKING) != 0) continue;
    if (CUresult r = stream->Wait(); r != CUDA_SUCCESS) return r;
  }
  return Sticky();
}

// Runs `op` on `stream` (0 or CU_STREAM_LEGACY: now, on the calling thread).
CUresult Submit(CUstream stream, std::function<void()> op) {
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
    if (CUresult r = BeforeLegacyCall(); r != CUDA_SUCCESS) return r;
    in_device_work = true;
    op();
    in_device_work = false;
    return Sticky();
  }
  reinterpret_cast<FakeStream*>(stream)->Enqueue(std::move(op));
  return CUDA_SUCCESS;
}

// ------------------------------------------------------------------ events

struct FakeEvent {
  unsigned flags = 0;
  std::atomic<int> state{0};  // 0 never recorded, 1 pending, 2 reached
  std::atomic<uint64_t> generation{0};
  Clock::time_point when{};
};

// ----------------------------------------------------------------- memory

std::mutex memory_mutex;
std::map<uintptr_t, size_t> device_allocations;  // address -> bytes
std::map<uintptr_t, size_t> host_allocations;
// The writable segments of loaded modules (their globals live there):
// device memory until the module is unloaded.
std::map<uintptr_t, size_t> module_globals;
uint64_t allocated_bytes = 0;

void* AllocatePages(size_t bytes) {
  void* p = ::mmap(nullptr, std::max<size_t>(bytes, 1), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// The allocation that holds [ptr, ptr + bytes), in either map.
bool IsMapped(uintptr_t ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(memory_mutex);
  for (const auto* allocations : {&device_allocations, &host_allocations, &module_globals}) {
    auto it = allocations->upper_bound(ptr);
    if (it == allocations->begin()) continue;
    --it;
    if (ptr >= it->first && ptr + bytes <= it->first + it->second) return true;
  }
  return false;
}

// ----------------------------------------------------------------- modules

enum class KernelKind {
  kHost,
  kHold,
  kFill,
  kFillLeftovers,
  kCopy16,
  kReadFlush,
  kFma,
  kStashXor,
  kClearShared,
  kGenerate
};

struct FakeFunction {
  KernelKind kind = KernelKind::kHost;
  std::string name;
  const char* (*launcher)(const kerneleval_cpu_launch*) = nullptr;
  std::vector<uint32_t> param_sizes;
  int max_dynamic_shared = kDefaultMaxDynamicShared;
};

struct HostKernel {
  std::string name;  // as the plan wrote it
  const char* (*launcher)(const kerneleval_cpu_launch*) = nullptr;
  std::vector<uint32_t> param_sizes;
};

struct FakeModule {
  bool aux = false;
  void* library = nullptr;
  std::vector<HostKernel> kernels;
  std::map<std::string, std::unique_ptr<FakeFunction>> functions;
  // Data objects of the shared object's .symtab (hidden and local ones too,
  // as a CUBIN's globals are): name -> {address once loaded, bytes}.
  std::map<std::string, std::pair<uintptr_t, size_t>> objects;
  std::vector<uintptr_t> segments;  // its module_globals entries
};

// The STT_OBJECT symbols of an ELF image's .symtab, by name: {value, size}.
std::map<std::string, std::pair<uint64_t, uint64_t>> ElfObjects(const uint8_t* image, size_t size) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> objects;
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(image);
  if (header->e_shoff == 0 ||
      header->e_shoff + size_t{header->e_shnum} * sizeof(Elf64_Shdr) > size) {
    return objects;
  }
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(image + header->e_shoff);
  for (unsigned i = 0; i < header->e_shnum; ++i) {
    if (sections[i].sh_type != SHT_SYMTAB || sections[i].sh_link >= header->e_shnum) continue;
    const Elf64_Shdr& names = sections[sections[i].sh_link];
    if (sections[i].sh_offset + sections[i].sh_size > size ||
        names.sh_offset + names.sh_size > size) {
      continue;
    }
    const auto* symbols = reinterpret_cast<const Elf64_Sym*>(image + sections[i].sh_offset);
    for (size_t k = 0; k < sections[i].sh_size / sizeof(Elf64_Sym); ++k) {
      if (ELF64_ST_TYPE(symbols[k].st_info) != STT_OBJECT || symbols[k].st_name >= names.sh_size) {
        continue;
      }
      const char* name =
          reinterpret_cast<const char*>(image + names.sh_offset + symbols[k].st_name);
      objects[name] = {symbols[k].st_value, symbols[k].st_size};
    }
  }
  return objects;
}

// PTX text that names a host module file instead of holding code.
constexpr char kHostModuleMarker[] = "// kerneleval fake CUDA host module: ";

// Host kernels share one runtime (one pool, one set of per-thread state):
// one grid at a time.
std::mutex grid_mutex;

void SetJitLog(unsigned count, const CUjit_option* options, void* const* values,
               const std::string& text) {
  char* buffer = nullptr;
  size_t size = 0;
  for (unsigned i = 0; i < count && options != nullptr && values != nullptr; ++i) {
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER) buffer = static_cast<char*>(values[i]);
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
      size = static_cast<size_t>(reinterpret_cast<uintptr_t>(values[i]));
    }
  }
  if (buffer != nullptr && size > 0) {
    std::snprintf(buffer, size, "%s", text.c_str());
  }
}

// Bytes of an ELF image (the driver gets no size with the image either).
size_t ElfSize(const Elf64_Ehdr* header) {
  size_t end = header->e_shoff + size_t{header->e_shnum} * header->e_shentsize;
  const auto* base = reinterpret_cast<const uint8_t*>(header);
  for (unsigned i = 0; i < header->e_phnum; ++i) {
    const auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + header->e_phoff +
                                                         size_t{i} * header->e_phentsize);
    end = std::max<size_t>(end, ph->p_offset + ph->p_filesz);
  }
  return std::max<size_t>(end, header->e_ehsize);
}

CUresult LoadHostModule(const void* image, FakeModule* module, std::string* why) {
  const auto* header = static_cast<const Elf64_Ehdr*>(image);
  const size_t size = ElfSize(header);
  const int fd = ::memfd_create("kerneleval-fake-cuda-module", MFD_CLOEXEC);
  if (fd < 0) {
    *why = "memfd_create failed";
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  size_t written = 0;
  while (written < size) {
    const ssize_t n = ::write(fd, static_cast<const char*>(image) + written, size - written);
    if (n <= 0) {
      ::close(fd);
      *why = "could not write the image";
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    written += static_cast<size_t>(n);
  }
  // The descriptor stays open for the life of the process, like the library:
  // glibc recognises a loaded object by its path, and a reused descriptor
  // number would hand back the previous module instead of loading this one.
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) ::close(fd);
  if (library == nullptr) {
    const char* error = ::dlerror();
    *why = std::string("dlopen: ") + (error != nullptr ? error : "failed");
    return CUDA_ERROR_INVALID_IMAGE;
  }
  auto init = reinterpret_cast<uint32_t (*)(const kerneleval_cpu_runtime*)>(
      ::dlsym(library, "kerneleval_cpu_init"));
  const auto* count = static_cast<const uint32_t*>(::dlsym(library, "kerneleval_cpu_kernel_count"));
  if (init == nullptr || count == nullptr || init(DeviceRuntime()) != KERNELEVAL_CPU_ABI_VERSION) {
    *why = "not a shared object built by the CPU backend's HostCompiler (ABI mismatch)";
    return CUDA_ERROR_INVALID_IMAGE;
  }
  for (uint32_t i = 0; i < *count; ++i) {
    const std::string index = std::to_string(i);
    auto launcher = reinterpret_cast<const char* (*)(const kerneleval_cpu_launch*)>(
        ::dlsym(library, ("kerneleval_cpu_launch_" + index).c_str()));
    auto describe = reinterpret_cast<void (*)(kerneleval_cpu_kernel_info*)>(
        ::dlsym(library, ("kerneleval_cpu_kernel_info_" + index).c_str()));
    if (launcher == nullptr || describe == nullptr) {
      *why = "kernel " + index + " has no launcher or description";
      return CUDA_ERROR_INVALID_IMAGE;
    }
    kerneleval_cpu_kernel_info info{};
    describe(&info);
    if (info.param_count > KERNELEVAL_CPU_MAX_PARAMS) {
      *why = "kernel " + index + " has too many parameters";
      return CUDA_ERROR_INVALID_IMAGE;
    }
    HostKernel kernel;
    kernel.name = info.name != nullptr ? info.name : "";
    kernel.launcher = launcher;
    kernel.param_sizes.assign(info.param_sizes, info.param_sizes + info.param_count);
    module->kernels.push_back(std::move(kernel));
  }
  module->library = library;
  link_map* map = nullptr;
  if (::dlinfo(library, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr) {
    const auto* base = static_cast<const uint8_t*>(image);
    for (const auto& [name, object] : ElfObjects(base, size)) {
      module->objects[name] = {map->l_addr + object.first, object.second};
    }
    std::lock_guard<std::mutex> lock(memory_mutex);
    for (unsigned i = 0; i < header->e_phnum; ++i) {
      const auto* ph = reinterpret_cast<const Elf64_Phdr*>(base + header->e_phoff +
                                                           size_t{i} * header->e_phentsize);
      if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) == 0 || ph->p_memsz == 0) continue;
      const uintptr_t start = map->l_addr + ph->p_vaddr;
      module_globals[start] = ph->p_memsz;
      module->segments.push_back(start);
    }
  }
  return CUDA_SUCCESS;
}

// "vector_add" for "_Z10vector_addPKfS0_Pfi", "void f<float>" for a template
// instance (the caller also accepts a match after the last space); the symbol
// itself when it is not mangled (extern "C").
std::string NameBeforeParameters(const char* symbol) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(symbol, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return symbol;
  std::string text = demangled;
  std::free(demangled);
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<') ++depth;
    if (text[i] == '>') --depth;
    if (text[i] == '(' && depth == 0) return text.substr(0, i);
  }
  return text;
}

bool NameMatches(const std::string& found, const std::string& wanted) {
  if (found == wanted) return true;
  return found.size() > wanted.size() &&
         found.compare(found.size() - wanted.size(), wanted.size(), wanted) == 0 &&
         found[found.size() - wanted.size() - 1] == ' ';
}

// ------------------------------------------------------------ aux kernels

// The unsigned number in environment variable `name` (0 when unset): the
// test driver's knobs below.
uint64_t EnvNumber(const char* name) {
  const char* text = std::getenv(name);
  return text != nullptr ? std::strtoull(text, nullptr, 10) : 0;
}

// KERNELEVAL_FAKE_CUDA_THROTTLE_EVERY=N: every Nth hold reports half the
// claimed clock, as a GPU throttling during that sample would (0: never).
uint64_t ThrottleEvery() {
  static const uint64_t every = EnvNumber("KERNELEVAL_FAKE_CUDA_THROTTLE_EVERY");
  return every;
}
// KERNELEVAL_FAKE_CUDA_HOLD_CLOCK_MHZ=N: every hold reports N MHz, not the
// claimed clock, as a GPU whose clocks are locked (or capped) below their
// maximum would (0: the claimed clock).
uint64_t HoldClockMhz() {
  static const uint64_t mhz = EnvNumber("KERNELEVAL_FAKE_CUDA_HOLD_CLOCK_MHZ");
  return mhz;
}
// KERNELEVAL_FAKE_CUDA_LATE_HOLD_EVERY=N: every Nth hold reports that it
// timed out before the host released it (without waiting that long).
uint64_t LateHoldEvery() {
  static const uint64_t every = EnvNumber("KERNELEVAL_FAKE_CUDA_LATE_HOLD_EVERY");
  return every;
}
// KERNELEVAL_FAKE_CUDA_PUBLISH_HOLD_REPORT=1: every hold also says where its
// report is, in the environment variable KERNELEVAL_FAKE_CUDA_HOLD_REPORT
// (hex), so that a test kernel can overwrite it.
bool PublishHoldReport() {
  static const bool publish = [] {
    const char* text = std::getenv("KERNELEVAL_FAKE_CUDA_PUBLISH_HOLD_REPORT");
    return text != nullptr && std::strcmp(text, "1") == 0;
  }();
  return publish;
}
std::atomic<uint64_t> holds_run{0};

// KERNELEVAL_FAKE_CUDA_AUX_DELAY_US=N: the worker's stash and generate kernels take N µs
// more, as a GPU kernel takes its time: work queued on a stream is then
// visibly unfinished when the host moves on without waiting for it.
void AuxKernelDelay() {
  static const uint64_t delay_us = EnvNumber("KERNELEVAL_FAKE_CUDA_AUX_DELAY_US");
  if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
}

// KERNELEVAL_FAKE_CUDA_LAUNCH_LATENCY_US=N: every launch but the stream
// hold's spends N us in the host's launch call before its work is queued,
// as a driver's launch path does (a few us on a GPU): a start event recorded
// on an idle stream then completes N us before the kernel starts.
void HostLaunchLatency() {
  static const uint64_t latency_us = EnvNumber("KERNELEVAL_FAKE_CUDA_LAUNCH_LATENCY_US");
  if (latency_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(latency_us));
}

void RunHold(const std::vector<std::vector<uint8_t>>& params) {
  const volatile int* release = nullptr;
  uint64_t min_ns = 0, timeout_ns = 0;
  volatile uint64_t* out = nullptr;
  uint64_t key0 = 0, key1 = 0;
  std::memcpy(&release, params[0].data(), 8);
  std::memcpy(&min_ns, params[1].data(), 8);
  std::memcpy(&timeout_ns, params[2].data(), 8);
  std::memcpy(&out, params[3].data(), 8);
  std::memcpy(&key0, params[4].data(), 8);
  std::memcpy(&key1, params[5].data(), 8);
  const Clock::time_point start = Clock::now();
  uint64_t ns = 0;
  int timed_out = 0;
  for (;;) {
    ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
    if (ns >= min_ns && *release != 0) break;
    if (ns >= timeout_ns) {
      timed_out = 1;
      break;
    }
  }
  const uint64_t hold = holds_run.fetch_add(1) + 1;
  const bool throttled = ThrottleEvery() > 0 && hold % ThrottleEvery() == 0;
  // Cycles at the claimed clock (1 GHz: one per ns) or the one set, or at
  // half of it.
  const uint64_t cycles =
      HoldClockMhz() > 0 ? ns * HoldClockMhz() / 1000 : ns * (kClockKhz / 1'000'000);
  out[0] = throttled ? cycles / 2 : cycles;
  out[1] = ns;
  const bool late = LateHoldEvery() > 0 && hold % LateHoldEvery() == 0;
  out[2] = static_cast<uint64_t>(timed_out != 0 || late);
  out[3] = kerneleval::cuda::HoldReportSeal(out[0], out[1], out[2], key0, key1);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (PublishHoldReport()) {
    // Where the report is, for a test kernel to overwrite it as a program
    // that found it in device memory would.
    char text[32];
    std::snprintf(text, sizeof(text), "%016llx",
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(out)));
    ::setenv("KERNELEVAL_FAKE_CUDA_HOLD_REPORT", text, 1);
  }
}

void RunFill(const std::vector<std::vector<uint8_t>>& params) {
  uint8_t* dst = nullptr;
  uint64_t bytes = 0, pattern = 0;
  std::memcpy(&dst, params[0].data(), 8);
  std::memcpy(&bytes, params[1].data(), 8);
  std::memcpy(&pattern, params[2].data(), 8);
  const uint64_t words = bytes / 8;
  for (uint64_t i = 0; i < words; ++i) std::memcpy(dst + 8 * i, &pattern, 8);
  for (uint64_t b = 0; b < bytes % 8; ++b) {
    dst[8 * words + b] = static_cast<uint8_t>(pattern >> (8 * b));
  }
}

// ke_fill_leftovers: the same per-element function as the device kernel.
void RunFillLeftovers(const std::vector<std::vector<uint8_t>>& params) {
  uint8_t* dst = nullptr;
  uint64_t elements = 0, element_bytes = 0, draw = 0;
  std::memcpy(&dst, params[0].data(), 8);
  std::memcpy(&elements, params[1].data(), 8);
  std::memcpy(&element_bytes, params[2].data(), 8);
  std::memcpy(&draw, params[3].data(), 8);
  const bool wide = element_bytes == 8;
  for (uint64_t i = 0; i < elements; ++i) {
    const uint64_t bits = kerneleval::data::LeftoverElementBits(draw, i, wide);
    std::memcpy(dst + i * (wide ? 8 : 4), &bits, wide ? 8 : 4);  // little-endian: the low bytes
  }
}

void RunCopy16(const std::vector<std::vector<uint8_t>>& params) {
  const uint8_t* src = nullptr;
  uint8_t* dst = nullptr;
  uint64_t n16 = 0;
  std::memcpy(&src, params[0].data(), 8);
  std::memcpy(&dst, params[1].data(), 8);
  std::memcpy(&n16, params[2].data(), 8);
  std::memcpy(dst, src, n16 * 16);
}

void RunStashXor(const std::vector<std::vector<uint8_t>>& params) {
  const uint64_t* src = nullptr;
  uint64_t* dst = nullptr;
  uint64_t words = 0, key0 = 0, key1 = 0;
  std::memcpy(&src, params[0].data(), 8);
  std::memcpy(&dst, params[1].data(), 8);
  std::memcpy(&words, params[2].data(), 8);
  std::memcpy(&key0, params[3].data(), 8);
  std::memcpy(&key1, params[4].data(), 8);
  AuxKernelDelay();
  for (uint64_t i = 0; i < words; ++i) dst[i] = src[i] ^ kerneleval::cuda::StashPad(i, key0, key1);
}

// ke_generate_input: the same inline generator the GPU runs
// (element_generator.h), element by element.
void RunGenerate(const std::vector<std::vector<uint8_t>>& params) {
  void* out = nullptr;
  uint64_t elements = 0, seed = 0, name_hash = 0;
  kerneleval::data::ElementSampler sampler;
  std::memcpy(&out, params[0].data(), 8);
  std::memcpy(&elements, params[1].data(), 8);
  std::memcpy(&seed, params[2].data(), 8);
  std::memcpy(&name_hash, params[3].data(), 8);
  std::memcpy(&sampler, params[4].data(), sizeof(sampler));
  AuxKernelDelay();
  for (uint64_t i = 0; i < elements; ++i) {
    kerneleval::data::GenerateElement(sampler, seed, name_hash, i, out);
  }
}

void RunReadFlush(const std::vector<std::vector<uint8_t>>& params) {
  const uint32_t* src = nullptr;
  uint64_t n16 = 0;
  uint64_t* sink = nullptr;
  std::memcpy(&src, params[0].data(), 8);
  std::memcpy(&n16, params[1].data(), 8);
  std::memcpy(&sink, params[2].data(), 8);
  uint64_t never = 0;
  std::memcpy(&never, params[3].data(), 8);
  uint32_t acc = 0;
  for (uint64_t i = 0; i < 4 * n16; ++i) acc ^= src[i];
  if (acc == never) *sink = acc;
}

// Only one thread per block does the arithmetic: the host would take
// seconds for the whole grid, and a FLOP/s figure of this device means
// nothing anyway (calibration is exercised, not measured).
void RunFma(const std::vector<std::vector<uint8_t>>& params, uint64_t blocks) {
  float* out = nullptr;
  int iterations = 0;
  float seed = 0;
  std::memcpy(&out, params[0].data(), 8);
  std::memcpy(&iterations, params[1].data(), 4);
  std::memcpy(&seed, params[2].data(), 4);
  // The arithmetic of ke_fma_throughput, for thread 0 of every block.
  for (uint64_t t = 0; t < blocks; ++t) {
    float a[8];
    for (int k = 0; k < 8; ++k) a[k] = seed + static_cast<float>(k);
    for (int i = 0; i < iterations; ++i) {
      for (float& value : a) value = std::fma(value, 0.999999f, 1e-7f);
    }
    float sum = 0;
    for (float value : a) sum += value;
    if (sum == 1234.5f) out[t * 1024] = sum;
  }
}

// ------------------------------------------------------ entry points (C ABI)

#define FAKE_API_ENTRY() api_thread = true

CUresult FakeInit(unsigned int flags) {
  FAKE_API_ENTRY();
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_sigaction = OnFaultSignal;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    for (int signal : {SIGSEGV, SIGBUS, SIGILL, SIGFPE}) ::sigaction(signal, &action, nullptr);
    OpenStats();
    return true;
  }();
  (void)installed;
  return DeviceCount() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

// KERNELEVAL_FAKE_CUDA_DRIVER_VERSION: an older driver (e.g. 12080).
int ClaimedDriverVersion() {
  const char* claimed = std::getenv("KERNELEVAL_FAKE_CUDA_DRIVER_VERSION");
  return claimed != nullptr && claimed[0] != '\0' ? std::atoi(claimed) : CUDA_VERSION;
}

CUresult FakeDriverGetVersion(int* version) {
  FAKE_API_ENTRY();
  if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *version = ClaimedDriverVersion();
  return CUDA_SUCCESS;
}

CUresult FakeDeviceGetCount(int* count) {
  FAKE_API_ENTRY();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = DeviceCount();
  return CUDA_SUCCESS;
}

CUresult FakeDeviceGet(CUdevice* device, int ordinal) {
  FAKE_API_ENTRY();
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!IsDevice(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult FakeDeviceGetName(char* name, int length, CUdevice device) {
  FAKE_API_ENTRY();
  if (name == nullptr || length <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!IsDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  // KERNELEVAL_FAKE_CUDA_DEVICE_NAME: another name (e.g. a GPU of the peak
  // table, so that the engine knows a roofline for this device).
  const char* claimed = std::getenv("KERNELEVAL_FAKE_CUDA_DEVICE_NAME");
  std::snprintf(name, static_cast<size_t>(length), "%s",
                claimed != nullptr && *claimed != '\0' ? claimed : kDeviceName);
  return CUDA_SUCCESS;
}

CUresult FakeDeviceGetAttribute(int* value, CUdevice_attribute attribute, CUdevice device) {
  FAKE_API_ENTRY();
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!IsDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  *value = Attribute(attribute);
  return CUDA_SUCCESS;
}

CUresult FakeDeviceTotalMem(size_t* bytes, CUdevice device) {
  FAKE_API_ENTRY();
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!IsDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = kTotalMemoryBytes;
  return CUDA_SUCCESS;
}

int context_token = 0;  // what a CUcontext points at

CUresult FakeDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  FAKE_API_ENTRY();
  if (context == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!IsDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  *context = reinterpret_cast<CUcontext>(&context_token);
  Count(DriverStat::kRetainedContexts);
  return CUDA_SUCCESS;
}

CUresult FakeDevicePrimaryCtxRelease(CUdevice device) {
  FAKE_API_ENTRY();
  if (!IsDevice(device)) return CUDA_ERROR_INVALID_DEVICE;
  Count(DriverStat::kRetainedContexts, -1);
  return CUDA_SUCCESS;
}

CUresult FakeCtxSetCurrent(CUcontext context) {
  FAKE_API_ENTRY();
  if (context != nullptr && context != reinterpret_cast<CUcontext>(&context_token)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  return CUDA_SUCCESS;
}

CUresult FakeCtxSynchronize() {
  FAKE_API_ENTRY();
  for (FakeStream* stream : Streams()) {
    if (CUresult r = stream->Wait(); r != CUDA_SUCCESS) return r;
  }
  return Sticky();
}

std::mutex limits_mutex;
std::map<int, size_t> limits = {{CU_LIMIT_PRINTF_FIFO_SIZE, size_t{1} << 20},
                                {CU_LIMIT_MALLOC_HEAP_SIZE, size_t{8} << 20},
                                {CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0},
                                {CU_LIMIT_STACK_SIZE, kInitialStackBytes}};

CUresult FakeCtxSetLimit(CUlimit limit, size_t value) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(limits_mutex);
  if (!limits.contains(limit)) return CUDA_ERROR_UNSUPPORTED_LIMIT;
  // KERNELEVAL_FAKE_CUDA_PERSISTING_LIMIT_ERROR=CODE: the persisting-L2
  // limit is refused with that CUresult (gVisor's nvproxy answers driver
  // controls it does not know with a generic error).
  static const int persisting_error = [] {
    const char* text = std::getenv("KERNELEVAL_FAKE_CUDA_PERSISTING_LIMIT_ERROR");
    return text != nullptr ? std::atoi(text) : 0;
  }();
  if (limit == CU_LIMIT_PERSISTING_L2_CACHE_SIZE && persisting_error != CUDA_SUCCESS) {
    return static_cast<CUresult>(persisting_error);
  }
  if (limit == CU_LIMIT_PERSISTING_L2_CACHE_SIZE && value > kMaxPersistingL2Bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  limits[limit] = value;
  if (limit == CU_LIMIT_STACK_SIZE) RecordStackLimit(value);
  return CUDA_SUCCESS;
}

// KERNELEVAL_FAKE_CUDA_LAUNCH_STACK_BYTES: what a launch grows the stack to.
void GrowStackForLaunch() {
  static const size_t launch_stack_bytes = [] {
    const char* value = std::getenv("KERNELEVAL_FAKE_CUDA_LAUNCH_STACK_BYTES");
    return value == nullptr ? size_t{0} : static_cast<size_t>(std::strtoull(value, nullptr, 10));
  }();
  if (launch_stack_bytes == 0) return;
  std::lock_guard<std::mutex> lock(limits_mutex);
  size_t& stack = limits[CU_LIMIT_STACK_SIZE];
  if (stack >= launch_stack_bytes) return;
  stack = launch_stack_bytes;
  RecordStackLimit(stack);
}

CUresult FakeCtxGetLimit(size_t* value, CUlimit limit) {
  FAKE_API_ENTRY();
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(limits_mutex);
  auto it = limits.find(limit);
  if (it == limits.end()) return CUDA_ERROR_UNSUPPORTED_LIMIT;
  *value = it->second;
  return CUDA_SUCCESS;
}

// KERNELEVAL_FAKE_CUDA_PERSISTING_RESET_UNSUPPORTED=1: the reset answers
// CUDA_ERROR_NOT_SUPPORTED, which cuda.h allows (a partition that accepts a
// persisting limit of 0 but refuses the reset).
CUresult FakeCtxResetPersistingL2Cache() {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  static const bool unsupported = [] {
    const char* text = std::getenv("KERNELEVAL_FAKE_CUDA_PERSISTING_RESET_UNSUPPORTED");
    return text != nullptr && std::strcmp(text, "1") == 0;
  }();
  return unsupported ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS;
}

CUresult FakeModuleLoadDataEx(CUmodule* module, const void* image, unsigned int count,
                              CUjit_option* options, void** values) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto loaded = std::make_unique<FakeModule>();
  const auto* header = static_cast<const Elf64_Ehdr*>(image);
  if (std::memcmp(header->e_ident, ELFMAG, SELFMAG) == 0) {
    if (header->e_machine != EM_X86_64 && header->e_machine != EM_AARCH64) {
      SetJitLog(count, options, values,
                "the fake CUDA driver runs host modules only (a shared object built by the CPU "
                "backend), not CUBINs");
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    }
    std::string why;
    if (CUresult r = LoadHostModule(image, loaded.get(), &why); r != CUDA_SUCCESS) {
      SetJitLog(count, options, values, "fake CUDA driver: " + why);
      return r;
    }
  } else if (std::strncmp(static_cast<const char*>(image), kHostModuleMarker,
                          std::strlen(kHostModuleMarker)) == 0) {
    // "PTX" naming a host module file: how a test reaches the PTX JIT
    // fallback (proto3 strings, like a program's PTX, must be UTF-8 text).
    // Read and loaded as a copy, not dlopen()ed by its path: a path loaded
    // before would hand back the same library, and its __device__ globals
    // with it, which a freshly loaded GPU module never has.
    const std::string path(static_cast<const char*>(image) + std::strlen(kHostModuleMarker));
    std::string bytes;
    if (FILE* file = std::fopen(path.c_str(), "rb")) {
      char buffer[1 << 16];
      for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;)
        bytes.append(buffer, n);
      std::fclose(file);
    }
    std::string why = "cannot read " + path;
    if (bytes.size() < sizeof(Elf64_Ehdr)) {
      SetJitLog(count, options, values, "fake CUDA driver: " + why);
      return CUDA_ERROR_INVALID_PTX;
    }
    if (CUresult r = LoadHostModule(bytes.data(), loaded.get(), &why); r != CUDA_SUCCESS) {
      SetJitLog(count, options, values, "fake CUDA driver: " + why);
      return r;
    }
  } else {
    const char* text = static_cast<const char*>(image);
    if (std::strstr(text, ".entry ke_hold_stream") == nullptr) {
      SetJitLog(count, options, values, "the fake CUDA driver cannot JIT-compile PTX");
      return CUDA_ERROR_INVALID_PTX;
    }
    loaded->aux = true;
  }
  *module = reinterpret_cast<CUmodule>(loaded.release());
  Count(DriverStat::kLiveModules);
  Count(DriverStat::kModuleLoadsTotal);
  return CUDA_SUCCESS;
}

CUresult FakeModuleLoadData(CUmodule* module, const void* image) {
  return FakeModuleLoadDataEx(module, image, 0, nullptr, nullptr);
}

CUresult FakeModuleUnload(CUmodule module) {
  FAKE_API_ENTRY();
  if (module == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  // The library stays loaded: a kernel abandoned on a stream may still run
  // its code (the real driver would refuse or crash; we keep it simple).
  // Its globals stop being device memory.
  auto* fake = reinterpret_cast<FakeModule*>(module);
  {
    std::lock_guard<std::mutex> lock(memory_mutex);
    for (uintptr_t address : fake->segments) module_globals.erase(address);
  }
  delete fake;
  Count(DriverStat::kLiveModules, -1);
  return Sticky();
}

CUresult FakeModuleGetGlobal(CUdeviceptr* ptr, size_t* bytes, CUmodule module_handle,
                             const char* name) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (module_handle == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* module = reinterpret_cast<FakeModule*>(module_handle);
  auto found = module->objects.find(name);
  if (found == module->objects.end() || found->second.second == 0) return CUDA_ERROR_NOT_FOUND;
  const auto [address, size] = found->second;
  if (ptr != nullptr) *ptr = address;
  if (bytes != nullptr) *bytes = size;
  return CUDA_SUCCESS;
}

CUresult FakeModuleGetFunction(CUfunction* function, CUmodule module_handle, const char* name) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (function == nullptr || module_handle == nullptr || name == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* module = reinterpret_cast<FakeModule*>(module_handle);
  auto& slot = module->functions[name];
  if (!slot) {
    auto made = std::make_unique<FakeFunction>();
    made->name = name;
    if (module->aux) {
      const std::string symbol = name;
      if (symbol == "ke_hold_stream") {
        made->kind = KernelKind::kHold;
        made->param_sizes = {8, 8, 8, 8, 8, 8};
      } else if (symbol == "ke_fill_pattern") {
        made->kind = KernelKind::kFill;
        made->param_sizes = {8, 8, 8};
      } else if (symbol == "ke_fill_leftovers") {
        made->kind = KernelKind::kFillLeftovers;
        made->param_sizes = {8, 8, 8, 8};
      } else if (symbol == "ke_copy16") {
        made->kind = KernelKind::kCopy16;
        made->param_sizes = {8, 8, 8};
      } else if (symbol == "ke_read_flush") {
        made->kind = KernelKind::kReadFlush;
        made->param_sizes = {8, 8, 8, 8};
      } else if (symbol == "ke_stash_xor") {
        made->kind = KernelKind::kStashXor;
        made->param_sizes = {8, 8, 8, 8, 8};
      } else if (symbol == "ke_clear_shared") {
        made->kind = KernelKind::kClearShared;
        made->param_sizes = {8, 8, 8, 8};
      } else if (symbol == "ke_generate_input") {
        made->kind = KernelKind::kGenerate;
        made->param_sizes = {8, 8, 8, 8, sizeof(kerneleval::data::ElementSampler)};
      } else if (symbol == "ke_fma_throughput") {
        made->kind = KernelKind::kFma;
        made->param_sizes = {8, 4, 4};
      } else {
        module->functions.erase(name);
        return CUDA_ERROR_NOT_FOUND;
      }
    } else {
      const std::string wanted = NameBeforeParameters(name);
      const HostKernel* found = nullptr;
      for (const HostKernel& kernel : module->kernels) {
        if (NameMatches(wanted, kernel.name)) found = &kernel;
      }
      if (found == nullptr) {
        module->functions.erase(name);
        return CUDA_ERROR_NOT_FOUND;
      }
      made->launcher = found->launcher;
      made->param_sizes = found->param_sizes;
    }
    slot = std::move(made);
  }
  *function = reinterpret_cast<CUfunction>(slot.get());
  return CUDA_SUCCESS;
}

CUresult FakeFuncGetAttribute(int* value, CUfunction_attribute attribute, CUfunction function) {
  FAKE_API_ENTRY();
  if (value == nullptr || function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto* f = reinterpret_cast<const FakeFunction*>(function);
  switch (attribute) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = 1024;
      break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = f->max_dynamic_shared;
      break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS:
      *value = 32;
      break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
      *value = 90;
      break;
    default:
      *value = 0;  // static shared, local, constant memory: unknown on the host
  }
  return CUDA_SUCCESS;
}

CUresult FakeFuncSetAttribute(CUfunction function, CUfunction_attribute attribute, int value) {
  FAKE_API_ENTRY();
  if (function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* f = reinterpret_cast<FakeFunction*>(function);
  if (attribute != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) return CUDA_SUCCESS;
  if (value < 0 || value > kMaxSharedOptIn) return CUDA_ERROR_INVALID_VALUE;
  f->max_dynamic_shared = value;
  return CUDA_SUCCESS;
}

CUresult FakeMemAlloc(CUdeviceptr* ptr, size_t bytes) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (ptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  // KERNELEVAL_FAKE_CUDA_STICKY_ALLOC_BYTES=B: the first allocation of B
  // bytes meets an uncorrectable ECC error, sticky as on a GPU (the fault
  // shows at a call that launches nothing).
  static const size_t sticky_alloc_bytes = [] {
    const char* value = std::getenv("KERNELEVAL_FAKE_CUDA_STICKY_ALLOC_BYTES");
    return value == nullptr ? size_t{0} : static_cast<size_t>(std::strtoull(value, nullptr, 10));
  }();
  if (sticky_alloc_bytes != 0 && bytes == sticky_alloc_bytes) {
    SetSticky(CUDA_ERROR_ECC_UNCORRECTABLE);
    return CUDA_ERROR_ECC_UNCORRECTABLE;
  }
  std::lock_guard<std::mutex> lock(memory_mutex);
  if (allocated_bytes + bytes > kTotalMemoryBytes) return CUDA_ERROR_OUT_OF_MEMORY;
  void* memory = AllocatePages(bytes);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  // Fresh device memory is not zeroed on a GPU either.
  std::memset(memory, 0xCD, std::min<size_t>(bytes, size_t{1} << 20));
  device_allocations[reinterpret_cast<uintptr_t>(memory)] = bytes;
  allocated_bytes += bytes;
  Count(DriverStat::kLiveDeviceAllocations);
  Count(DriverStat::kLiveDeviceBytes, static_cast<int64_t>(bytes));
  *ptr = reinterpret_cast<CUdeviceptr>(memory);
  return CUDA_SUCCESS;
}

CUresult FakeMemFree(CUdeviceptr ptr) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  std::lock_guard<std::mutex> lock(memory_mutex);
  auto it = device_allocations.find(static_cast<uintptr_t>(ptr));
  if (it == device_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  ::munmap(reinterpret_cast<void*>(it->first), std::max<size_t>(it->second, 1));
  allocated_bytes -= it->second;
  Count(DriverStat::kLiveDeviceAllocations, -1);
  Count(DriverStat::kLiveDeviceBytes, -static_cast<int64_t>(it->second));
  device_allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult FakeMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (free_bytes == nullptr || total_bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(memory_mutex);
  *free_bytes = kTotalMemoryBytes - allocated_bytes;
  *total_bytes = kTotalMemoryBytes;
  return CUDA_SUCCESS;
}

CUresult FakeMemcpyHtoD(CUdeviceptr dst, const void* src, size_t bytes) {
  FAKE_API_ENTRY();
  if (!IsMapped(dst, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return Submit(nullptr, [=] { std::memcpy(reinterpret_cast<void*>(dst), src, bytes); });
}

CUresult FakeMemcpyDtoH(void* dst, CUdeviceptr src, size_t bytes) {
  FAKE_API_ENTRY();
  if (!IsMapped(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return Submit(nullptr, [=] { std::memcpy(dst, reinterpret_cast<const void*>(src), bytes); });
}

CUresult FakeMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  FAKE_API_ENTRY();
  if (!IsMapped(dst, bytes) || !IsMapped(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  return Submit(stream, [=] {
    std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
  });
}

CUresult FakeMemsetD8(CUdeviceptr dst, unsigned char value, size_t count) {
  FAKE_API_ENTRY();
  if (!IsMapped(dst, count)) return CUDA_ERROR_INVALID_VALUE;
  return Submit(nullptr, [=] { std::memset(reinterpret_cast<void*>(dst), value, count); });
}

CUresult FakeMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream stream) {
  FAKE_API_ENTRY();
  if (!IsMapped(dst, count)) return CUDA_ERROR_INVALID_VALUE;
  return Submit(stream, [=] { std::memset(reinterpret_cast<void*>(dst), value, count); });
}

CUresult FakeMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count, CUstream stream) {
  FAKE_API_ENTRY();
  // KERNELEVAL_FAKE_CUDA_MEMSET_D32_ERROR=CODE: every call fails with that
  // CUresult (the worker's L2 flush is its only caller); an uncorrectable ECC
  // error is sticky, as on a GPU.
  static const int injected = [] {
    const char* value = std::getenv("KERNELEVAL_FAKE_CUDA_MEMSET_D32_ERROR");
    return value == nullptr ? 0 : std::atoi(value);
  }();
  // KERNELEVAL_FAKE_CUDA_MEMSET_D32_ERROR_FIRST=N: only the first N calls
  // of this process fail so (a device refusing now and then).
  static const long long failing_calls = [] {
    const char* value = std::getenv("KERNELEVAL_FAKE_CUDA_MEMSET_D32_ERROR_FIRST");
    return value == nullptr ? -1LL : std::atoll(value);
  }();
  static std::atomic<long long> calls{0};
  if (injected != CUDA_SUCCESS && (failing_calls < 0 || calls.fetch_add(1) < failing_calls)) {
    if (injected == CUDA_ERROR_ECC_UNCORRECTABLE) SetSticky(CUDA_ERROR_ECC_UNCORRECTABLE);
    return static_cast<CUresult>(injected);
  }
  if (dst % 4 != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!IsMapped(dst, count * 4)) return CUDA_ERROR_INVALID_VALUE;
  return Submit(stream, [=] {
    auto* words = reinterpret_cast<uint32_t*>(dst);
    std::fill(words, words + count, value);
  });
}

CUresult FakeMemHostAlloc(void** ptr, size_t bytes, unsigned int) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (ptr == nullptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* memory = AllocatePages(bytes);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(memory_mutex);
  host_allocations[reinterpret_cast<uintptr_t>(memory)] = bytes;
  Count(DriverStat::kLiveHostAllocations);
  *ptr = memory;
  return CUDA_SUCCESS;
}

CUresult FakeMemFreeHost(void* ptr) {
  FAKE_API_ENTRY();
  std::lock_guard<std::mutex> lock(memory_mutex);
  auto it = host_allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == host_allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  ::munmap(ptr, it->second);
  host_allocations.erase(it);
  Count(DriverStat::kLiveHostAllocations, -1);
  return Sticky();
}

CUresult FakeMemHostGetDevicePointer(CUdeviceptr* device_ptr, void* host_ptr, unsigned int flags) {
  FAKE_API_ENTRY();
  if (device_ptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!IsMapped(reinterpret_cast<uintptr_t>(host_ptr), 1)) return CUDA_ERROR_INVALID_VALUE;
  *device_ptr = reinterpret_cast<CUdeviceptr>(host_ptr);
  return CUDA_SUCCESS;
}

CUresult FakeStreamCreate(CUstream* stream, unsigned int flags) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (stream == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* created = new FakeStream(flags);
  std::lock_guard<std::mutex> lock(streams_mutex);
  live_streams.push_back(created);
  Count(DriverStat::kLiveStreams);
  *stream = reinterpret_cast<CUstream>(created);
  return CUDA_SUCCESS;
}

CUresult FakeStreamDestroy(CUstream stream_handle) {
  FAKE_API_ENTRY();
  if (stream_handle == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto* stream = reinterpret_cast<FakeStream*>(stream_handle);
  {
    std::lock_guard<std::mutex> lock(streams_mutex);
    std::erase(live_streams, stream);
  }
  Count(DriverStat::kLiveStreams, -1);
  {
    // Queued work still runs (as documented for cuStreamDestroy); the thread
    // then ends. The object is never freed: its detached thread may be held
    // forever by a kernel that does not end.
    std::lock_guard<std::mutex> lock(stream->mutex);
    stream->destroyed = true;
  }
  stream->changed.notify_all();
  return CUDA_SUCCESS;
}

CUresult FakeStreamSynchronize(CUstream stream) {
  FAKE_API_ENTRY();
  if (stream == nullptr || stream == CU_STREAM_LEGACY) return FakeCtxSynchronize();
  return reinterpret_cast<FakeStream*>(stream)->Wait();
}

CUresult FakeStreamQuery(CUstream stream) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (stream == nullptr || stream == CU_STREAM_LEGACY) {
    for (FakeStream* s : Streams()) {
      if ((s->flags & CU_STREAM_NON_BLOCKING) == 0 && !s->Idle()) return CUDA_ERROR_NOT_READY;
    }
    return CUDA_SUCCESS;
  }
  return reinterpret_cast<FakeStream*>(stream)->Idle() ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult FakeEventCreate(CUevent* event, unsigned int flags) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (event == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto* created = new FakeEvent();
  created->flags = flags;
  Count(DriverStat::kLiveEvents);
  *event = reinterpret_cast<CUevent>(created);
  return CUDA_SUCCESS;
}

CUresult FakeEventDestroy(CUevent event) {
  FAKE_API_ENTRY();
  if (event == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  // Not freed: a queued record may still reach it (the driver defers the
  // release the same way).
  reinterpret_cast<FakeEvent*>(event)->generation.fetch_add(1);
  Count(DriverStat::kLiveEvents, -1);
  return CUDA_SUCCESS;
}

CUresult FakeEventRecord(CUevent event_handle, CUstream stream) {
  FAKE_API_ENTRY();
  if (event_handle == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto* event = reinterpret_cast<FakeEvent*>(event_handle);
  const uint64_t generation = event->generation.fetch_add(1) + 1;
  event->state.store(1);
  return Submit(stream, [event, generation] {
    if (event->generation.load() != generation) return;  // recorded again since
    event->when = Clock::now();
    event->state.store(2);
  });
}

CUresult FakeEventQuery(CUevent event_handle) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (event_handle == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return reinterpret_cast<FakeEvent*>(event_handle)->state.load() == 1 ? CUDA_ERROR_NOT_READY
                                                                       : CUDA_SUCCESS;
}

CUresult FakeEventSynchronize(CUevent event_handle) {
  FAKE_API_ENTRY();
  if (event_handle == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto* event = reinterpret_cast<FakeEvent*>(event_handle);
  while (event->state.load() == 1) {
    if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return Sticky();
}

CUresult FakeEventElapsedTime(float* milliseconds, CUevent start_handle, CUevent stop_handle) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (milliseconds == nullptr || start_handle == nullptr || stop_handle == nullptr) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  const auto* start = reinterpret_cast<const FakeEvent*>(start_handle);
  const auto* stop = reinterpret_cast<const FakeEvent*>(stop_handle);
  if (((start->flags | stop->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (start->state.load() == 0 || stop->state.load() == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (start->state.load() != 2 || stop->state.load() != 2) return CUDA_ERROR_NOT_READY;
  *milliseconds = std::chrono::duration<float, std::milli>(stop->when - start->when).count();
  return CUDA_SUCCESS;
}

CUresult FakeLaunchKernel(CUfunction function_handle, unsigned int grid_x, unsigned int grid_y,
                          unsigned int grid_z, unsigned int block_x, unsigned int block_y,
                          unsigned int block_z, unsigned int shared_bytes, CUstream stream,
                          void** params, void** extra) {
  FAKE_API_ENTRY();
  if (CUresult r = Sticky(); r != CUDA_SUCCESS) return r;
  if (function_handle == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (extra != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  const auto* function = reinterpret_cast<const FakeFunction*>(function_handle);
  const uint64_t block_threads = uint64_t{block_x} * block_y * block_z;
  if (grid_x == 0 || grid_y == 0 || grid_z == 0 || block_threads == 0 || block_threads > 1024 ||
      block_z > 64 || grid_y > 65535 || grid_z > 65535 || grid_x > 2147483647u) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (static_cast<int>(shared_bytes) > function->max_dynamic_shared) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // The arguments are copied now: kernelParams need not outlive the call.
  std::vector<std::vector<uint8_t>> copies;
  for (size_t i = 0; i < function->param_sizes.size(); ++i) {
    if (params == nullptr || params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const auto* bytes = static_cast<const uint8_t*>(params[i]);
    copies.emplace_back(bytes, bytes + function->param_sizes[i]);
  }
  const uint64_t grid_blocks = uint64_t{grid_x} * grid_y * grid_z;
  Count(DriverStat::kLaunchesTotal);
  GrowStackForLaunch();
  if (function->kind != KernelKind::kHold) HostLaunchLatency();
  switch (function->kind) {
    case KernelKind::kHold:
      return Submit(stream, [copies] { RunHold(copies); });
    case KernelKind::kFill:
      return Submit(stream, [copies] { RunFill(copies); });
    case KernelKind::kFillLeftovers:
      return Submit(stream, [copies] { RunFillLeftovers(copies); });
    case KernelKind::kCopy16:
      return Submit(stream, [copies] { RunCopy16(copies); });
    case KernelKind::kReadFlush:
      return Submit(stream, [copies] { RunReadFlush(copies); });
    case KernelKind::kStashXor:
      return Submit(stream, [copies] { RunStashXor(copies); });
    case KernelKind::kGenerate:
      return Submit(stream, [copies] { RunGenerate(copies); });
    case KernelKind::kFma:
      return Submit(stream, [copies, grid_blocks] { RunFma(copies, grid_blocks); });
    case KernelKind::kClearShared:
      // Host kernels keep dynamic shared memory in one arena per OS thread
      // of the runtime, not cleared between grids (like an SM's).
      return Submit(stream, [copies] {
        uint64_t seed = 0;
        std::memcpy(&seed, copies[3].data(), 8);
        std::lock_guard<std::mutex> lock(grid_mutex);
        kerneleval::cpu::ClearDynamicSharedMemory(seed);
      });
    case KernelKind::kHost:
      break;
  }
  auto launcher = function->launcher;
  const kerneleval_cpu_dim3 grid{grid_x, grid_y, grid_z}, block{block_x, block_y, block_z};
  return Submit(stream, [launcher, copies, grid, block, shared_bytes] {
    std::vector<kerneleval_cpu_arg> args(copies.size());
    for (size_t i = 0; i < copies.size(); ++i) {
      args[i].kind = KERNELEVAL_CPU_ARG_RAW;
      args[i].pointer = const_cast<uint8_t*>(copies[i].data());
    }
    kerneleval_cpu_launch launch{grid, block, shared_bytes, static_cast<uint32_t>(args.size()),
                                 args.data()};
    std::lock_guard<std::mutex> lock(grid_mutex);
    kernels_running.fetch_add(1);
    const char* error = launcher(&launch);
    kernels_running.fetch_sub(1);
    if (error != nullptr) {
      WriteStderr("kerneleval fake cuda: launch failed: ");
      WriteStderr(error);
      WriteStderr("\n");
      SetSticky(CUDA_ERROR_LAUNCH_FAILED);
    }
  });
}

// All blocks are resident at once on a GPU; the host runs them as usual.
CUresult FakeLaunchCooperativeKernel(CUfunction function, unsigned int grid_x, unsigned int grid_y,
                                     unsigned int grid_z, unsigned int block_x,
                                     unsigned int block_y, unsigned int block_z,
                                     unsigned int shared_bytes, CUstream stream, void** params) {
  return FakeLaunchKernel(function, grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes,
                          stream, params, nullptr);
}

struct Entry {
  const char* name;
  void* function;
};

#define FAKE_ENTRY(name, fn) \
  { name, reinterpret_cast<void*>(&fn) }
const Entry kEntries[] = {
    FAKE_ENTRY("cuInit", FakeInit),
    FAKE_ENTRY("cuDriverGetVersion", FakeDriverGetVersion),
    FAKE_ENTRY("cuDeviceGetCount", FakeDeviceGetCount),
    FAKE_ENTRY("cuDeviceGet", FakeDeviceGet),
    FAKE_ENTRY("cuDeviceGetName", FakeDeviceGetName),
    FAKE_ENTRY("cuDeviceGetAttribute", FakeDeviceGetAttribute),
    FAKE_ENTRY("cuDeviceTotalMem", FakeDeviceTotalMem),
    FAKE_ENTRY("cuDevicePrimaryCtxRetain", FakeDevicePrimaryCtxRetain),
    FAKE_ENTRY("cuDevicePrimaryCtxRelease", FakeDevicePrimaryCtxRelease),
    FAKE_ENTRY("cuCtxSetCurrent", FakeCtxSetCurrent),
    FAKE_ENTRY("cuCtxSynchronize", FakeCtxSynchronize),
    FAKE_ENTRY("cuCtxSetLimit", FakeCtxSetLimit),
    FAKE_ENTRY("cuCtxGetLimit", FakeCtxGetLimit),
    FAKE_ENTRY("cuCtxResetPersistingL2Cache", FakeCtxResetPersistingL2Cache),
    FAKE_ENTRY("cuModuleLoadData", FakeModuleLoadData),
    FAKE_ENTRY("cuModuleLoadDataEx", FakeModuleLoadDataEx),
    FAKE_ENTRY("cuModuleUnload", FakeModuleUnload),
    FAKE_ENTRY("cuModuleGetFunction", FakeModuleGetFunction),
    FAKE_ENTRY("cuModuleGetGlobal", FakeModuleGetGlobal),
    FAKE_ENTRY("cuFuncGetAttribute", FakeFuncGetAttribute),
    FAKE_ENTRY("cuFuncSetAttribute", FakeFuncSetAttribute),
    FAKE_ENTRY("cuMemAlloc", FakeMemAlloc),
    FAKE_ENTRY("cuMemFree", FakeMemFree),
    FAKE_ENTRY("cuMemGetInfo", FakeMemGetInfo),
    FAKE_ENTRY("cuMemcpyHtoD", FakeMemcpyHtoD),
    FAKE_ENTRY("cuMemcpyDtoH", FakeMemcpyDtoH),
    FAKE_ENTRY("cuMemcpyDtoDAsync", FakeMemcpyDtoDAsync),
    FAKE_ENTRY("cuMemsetD8", FakeMemsetD8),
    FAKE_ENTRY("cuMemsetD8Async", FakeMemsetD8Async),
    FAKE_ENTRY("cuMemsetD32Async", FakeMemsetD32Async),
    FAKE_ENTRY("cuMemHostAlloc", FakeMemHostAlloc),
    FAKE_ENTRY("cuMemFreeHost", FakeMemFreeHost),
    FAKE_ENTRY("cuMemHostGetDevicePointer", FakeMemHostGetDevicePointer),
    FAKE_ENTRY("cuStreamCreate", FakeStreamCreate),
    FAKE_ENTRY("cuStreamDestroy", FakeStreamDestroy),
    FAKE_ENTRY("cuStreamSynchronize", FakeStreamSynchronize),
    FAKE_ENTRY("cuStreamQuery", FakeStreamQuery),
    FAKE_ENTRY("cuEventCreate", FakeEventCreate),
    FAKE_ENTRY("cuEventDestroy", FakeEventDestroy),
    FAKE_ENTRY("cuEventRecord", FakeEventRecord),
    FAKE_ENTRY("cuEventQuery", FakeEventQuery),
    FAKE_ENTRY("cuEventSynchronize", FakeEventSynchronize),
    FAKE_ENTRY("cuEventElapsedTime", FakeEventElapsedTime),
    FAKE_ENTRY("cuLaunchKernel", FakeLaunchKernel),
    FAKE_ENTRY("cuLaunchCooperativeKernel", FakeLaunchCooperativeKernel),
};
#undef FAKE_ENTRY

}  // namespace

// The one exported symbol, as the real driver's (CUDA 12.0+ signature).
extern "C" __attribute__((visibility("default"))) CUresult cuGetProcAddress_v2(
    const char* symbol, void** function, int cuda_version, cuuint64_t,
    CUdriverProcAddressQueryResult* status) {
  if (symbol == nullptr || function == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // As cuda.h documents it: "If the specified CUDA version is greater than
  // the driver version, the API will return CUDA_ERROR_INVALID_VALUE."
  if (cuda_version > ClaimedDriverVersion()) {
    *function = nullptr;
    if (status != nullptr) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return CUDA_ERROR_INVALID_VALUE;
  }
  for (const Entry& entry : kEntries) {
    if (std::strcmp(entry.name, symbol) == 0) {
      *function = entry.function;
      if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  }
  *function = nullptr;
  if (status != nullptr) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}
