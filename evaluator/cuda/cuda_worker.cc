#include "evaluator/cuda/cuda_worker.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "evaluator/cuda/aux_kernels.h"
#include "evaluator/cuda/keyed_mix.h"
#include "evaluator/cuda/launch.h"
#include "evaluator/data/compare.h"
#include "evaluator/data/dtype.h"
#include "evaluator/data/poison.h"
#include "evaluator/data/prng.h"
#include "evaluator/engine/backend.h"
#include "evaluator/plan/binding.h"
#include "evaluator/timing/sampling.h"

namespace kerneleval::cuda {
namespace {

// Threads generating inputs on the host (their bytes do not depend on it).
unsigned InputThreads() { return std::clamp(std::thread::hardware_concurrency(), 1u, 8u); }

constexpr char kFaultPayloadUrl[] = "type.kerneleval/cuda.fault";

// Byte offsets in the pinned control block.
constexpr size_t kReleaseOffset = 0;      // int, host writes, hold kernel reads
constexpr size_t kHoldReportOffset = 64;  // 4 x uint64: cycles, ns, timed out, seal
constexpr size_t kControlBytes = 4096;

// Timed runs whose outputs are checked per input set besides the last: each
// drawn at random (Time), fewer where their kept copies do not fit.
constexpr int kMaxDrawnRunsPerSet = 4;
// [bytes] The most of timed outputs one TimingResult sends back when the
// request asks for them (TimingRequest.return_outputs): half of what a
// message can hold (process::kMaxMessageBytes), the rest is small.
constexpr uint64_t kMaxReturnedOutputBytes = uint64_t{1} << 30;

// More launches than this queued behind the hold kernel risk filling the
// launch queue while the host is blocked in cuLaunchKernel (the hold would
// then time out): such plans are timed without the hold.
constexpr int kMaxHeldLaunches = 256;
// Every plan the binder accepts is timed behind the hold (a plan past it
// would have its first launch's latency in the sample).
static_assert(kMaxHeldLaunches >= plan::PlanLimits{}.max_launches,
              "plans the binder accepts must fit behind the stream hold");

// Default deadline of a request without one [s].
constexpr double kDefaultTimeoutSeconds = 60;

uint64_t RoundUp(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

absl::Time DeadlineAfter(double seconds, double fallback_seconds) {
  return absl::Now() + absl::Seconds(seconds > 0 ? seconds : fallback_seconds);
}

double MedianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

absl::Status MakeFault(absl::string_view stage, absl::string_view message) {
  absl::Status status(absl::StatusCode::kAborted, message);
  status.SetPayload(kFaultPayloadUrl, absl::Cord(stage));
  return status;
}

std::optional<std::string> FaultStage(const absl::Status& status) {
  absl::optional<absl::Cord> stage = status.GetPayload(kFaultPayloadUrl);
  if (!stage.has_value()) return std::nullopt;
  return std::string(*stage);
}

bool IsProgramFault(const absl::Status& status) {
  return FaultStage(status).has_value() || CuResultOf(status).has_value();
}

uint64_t PoisonWord(v1::DType dtype, uint64_t integer_draw) {
  const size_t size = data::DTypeSize(dtype);
  if (size == 0 || size >= 8) return data::PoisonBits(dtype, integer_draw);
  const uint64_t mask = (uint64_t{1} << (8 * size)) - 1;
  const uint64_t bits = data::PoisonBits(dtype, integer_draw) & mask;
  uint64_t word = 0;
  for (size_t k = 0; k < 8 / size; ++k) word |= bits << (8 * size * k);
  return word;
}

// ------------------------------------------------------------------ internals

struct CudaWorker::LoadedProgram {
  std::string label;
  std::unique_ptr<Module> module;
  std::map<std::string, KernelFunction> functions;  // by symbol, loaded on first use
  // The module's global variables (CompileResult.device_globals), merged
  // into spans. While timed, each of the program's runs starts from their
  // values as loaded, kept in globals_image under pads (RestoreGlobals),
  // and between its runs they are zeros (HideGlobals).
  struct GlobalSpan {
    CUdeviceptr ptr = 0;
    uint64_t bytes = 0;
    uint64_t stash_offset = 0;  // into globals_image and globals_staging, a multiple of 8
  };
  std::vector<GlobalSpan> globals;
  DeviceBuffer globals_image;    // whole 8-byte words, padded under globals_keys
  DeviceBuffer globals_staging;  // the image without its pads, copied into the spans
  uint64_t globals_keys[2] = {0, 0};
};

struct CudaWorker::Buffer {
  const internal::BufferSpec* spec = nullptr;  // points into the request
  DeviceBuffer memory;                         // [guard | payload, padded to 256 | guard]
  CUdeviceptr ptr = 0;                         // the payload: what the kernel gets
  uint64_t bytes = 0;                          // payload bytes
  // Inputs: the generated bytes, to check after the run (shared by every
  // program timed on the same input set).
  std::shared_ptr<const std::string> input;
  // Timing only, inputs: how ke_generate_input generates this buffer, and
  // the seed of the round it holds (data::TimedInputSeed) once `timed_round`
  // (until then, `input`).
  data::ElementSampler sampler;
  uint64_t name_hash = 0;
  uint64_t round_seed = 0;
  bool timed_round = false;
  // Timing only, outputs: the latest run's outputs under pads (StashOutputs)
  // and the keys of those pads; and per draw, a copy of the stash of the run
  // it chose for the check (KeepStash), with its keys.
  DeviceBuffer stash;
  uint64_t stash_keys[2] = {0, 0};
  struct Kept {
    DeviceBuffer copy;
    uint64_t keys[2] = {0, 0};
  };
  std::vector<Kept> kept;  // one per draw
};

struct CudaWorker::BufferSet {
  std::vector<Buffer> buffers;

  std::optional<CUdeviceptr> Address(absl::string_view name) const {
    for (const Buffer& buffer : buffers) {
      if (buffer.spec->name() == name) return buffer.ptr;
    }
    return std::nullopt;
  }
  // Overwrite and free every buffer; the first error.
  absl::Status ScrubAndFree() {
    absl::Status first;
    for (Buffer& buffer : buffers) {
      std::vector<DeviceBuffer*> memories = {&buffer.memory, &buffer.stash};
      for (Buffer::Kept& kept : buffer.kept) memories.push_back(&kept.copy);
      for (DeviceBuffer* memory : memories) {
        if (memory->empty()) continue;
        if (absl::Status status = memory->ScrubAndFree(); !status.ok() && first.ok()) {
          first = status;
        }
      }
    }
    buffers.clear();
    return first;
  }
};

struct CudaWorker::Sample {
  double microseconds = 0;  // [µs] start to stop event: the whole plan
  double clock_mhz = 0;     // [MHz] SM clock during the hold; 0 = not measured
  bool hold_timed_out = false;
  // The hold's report did not carry its seal: the program wrote over it.
  bool report_overwritten = false;
};

// [bytes] Correctness inputs the worker keeps between Run calls.
constexpr uint64_t kKeptCorrectnessInputBytes = uint64_t{256} << 20;

CudaWorker::CudaWorker(const DriverApi& api, CudaWorkerOptions options)
    : api_(api),
      options_(options),
      correctness_inputs_(InputThreads(), kKeptCorrectnessInputBytes) {}

CudaWorker::~CudaWorker() = default;

absl::StatusOr<std::unique_ptr<CudaWorker>> CudaWorker::Create(const CudaWorkerOptions& options) {
  absl::StatusOr<const DriverApi*> api = LoadDriver();
  if (!api.ok()) return api.status();
  std::unique_ptr<CudaWorker> worker(new CudaWorker(**api, options));
  if (absl::Status status = worker->Initialise(); !status.ok()) return status;
  return worker;
}

absl::Status CudaWorker::Initialise() {
  absl::StatusOr<DeviceProperties> properties = QueryDevice(api_, options_.device);
  if (!properties.ok()) return properties.status();
  properties_ = *std::move(properties);
  if (!properties_.can_map_host_memory) {
    return absl::FailedPreconditionError(
        absl::StrCat("CUDA device ", options_.device, " cannot map host memory"));
  }
  CUdevice device = 0;
  KE_CU_RETURN_IF_ERROR(api_.cuDeviceGet(&device, options_.device));
  absl::StatusOr<PrimaryContext> context = PrimaryContext::Retain(api_, device);
  if (!context.ok()) return context.status();
  context_ = std::make_unique<PrimaryContext>(*std::move(context));

  // Limits on what a kernel can make the device do on our behalf. Set before
  // any launch: the driver fixes them when the first kernel runs.
  KE_CU_RETURN_IF_ERROR(api_.cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, options_.printf_fifo_bytes));
  KE_CU_RETURN_IF_ERROR(api_.cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, options_.malloc_heap_bytes));
  KE_CU_RETURN_IF_ERROR(api_.cuCtxGetLimit(&initial_stack_bytes_, CU_LIMIT_STACK_SIZE));
  if (properties_.max_persisting_l2_bytes > 0) {
    // No L2 set-aside: a persisting carve-out once made a kernel look 4x
    // faster than the memory system allows. Some partitions (MIG, vGPU)
    // report the attribute but refuse the limit: then there is no carve-out
    // to fear. Lines already persisting go back to normal, once: with no
    // set-aside, and no host code in a submission to set an access-policy
    // window, none persist later, so no sample resets them (a reset that
    // failed there, NOT_SUPPORTED as cuda.h allows, was charged to the
    // program being timed).
    //
    // Any other refusal that leaves the context usable is tolerated too,
    // said on stderr and in timing notes: the set-aside starts at 0 in a new
    // context and a submission has no host code to change it, while a
    // worker that refuses to start leaves the device unusable (gVisor's
    // nvproxy answers driver controls it does not know with a generic error,
    // and these two are on none of its lists).
    const char* refused_call = "cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0)";
    CUresult refused = api_.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0);
    if (refused == CUDA_SUCCESS) {
      refused_call = "cuCtxResetPersistingL2Cache()";
      refused = api_.cuCtxResetPersistingL2Cache();
    }
    if (refused != CUDA_SUCCESS) {
      // The context decides, not the error's name: CUDA_ERROR_UNKNOWN, which
      // IsStickyError counts as sticky, is what a proxied driver may answer.
      if (const CUresult synced = api_.cuCtxSynchronize(); synced != CUDA_SUCCESS) {
        if (IsStickyError(synced)) MarkContextLost();
        return CuError(
            refused,
            absl::StrCat(refused_call, " (then cuCtxSynchronize: ", CuResultName(synced), ")"),
            __FILE__, __LINE__);
      }
      properties_.max_persisting_l2_bytes = 0;
      if (refused != CUDA_ERROR_UNSUPPORTED_LIMIT && refused != CUDA_ERROR_NOT_SUPPORTED) {
        persisting_l2_refusal_ = absl::StrCat(refused_call, ": ", CuResultName(refused));
        std::fprintf(stderr, "kerneleval-worker cuda: the device refused %s; timing goes on\n",
                     persisting_l2_refusal_.c_str());
      }
    }
  }

  absl::StatusOr<Stream> stream = Stream::Create(api_);
  if (!stream.ok()) return stream.status();
  stream_ = *std::move(stream);
  absl::StatusOr<Event> start = Event::Create(api_);
  if (!start.ok()) return start.status();
  start_ = *std::move(start);
  absl::StatusOr<Event> stop = Event::Create(api_);
  if (!stop.ok()) return stop.status();
  stop_ = *std::move(stop);

  absl::StatusOr<Module> aux = Module::Load(api_, AuxKernelsPtx());
  if (!aux.ok()) return aux.status();
  aux_module_ = std::make_unique<Module>(*std::move(aux));
  for (auto [symbol, function] :
       {std::pair{"ke_hold_stream", &hold_kernel_}, std::pair{"ke_fill_pattern", &fill_kernel_},
        std::pair{"ke_fill_leftovers", &leftovers_kernel_}, std::pair{"ke_copy16", &copy_kernel_},
        std::pair{"ke_read_flush", &read_flush_kernel_},
        std::pair{"ke_fma_throughput", &fma_kernel_}, std::pair{"ke_stash_xor", &stash_kernel_},
        std::pair{"ke_clear_shared", &clear_shared_kernel_},
        std::pair{"ke_generate_input", &generate_kernel_}}) {
    absl::StatusOr<KernelFunction> loaded = aux_module_->GetFunction(symbol);
    if (!loaded.ok()) return loaded.status();
    *function = *std::move(loaded);
  }
  // Where ke_read_flush and ke_clear_shared would write what they read (they
  // never do: the condition is a host-passed value no data equals); the
  // trial launch below passes it too.
  absl::StatusOr<DeviceBuffer> sink = DeviceBuffer::Allocate(api_, 256);
  if (!sink.ok()) return sink.status();
  flush_sink_ = *std::move(sink);

  // ke_clear_shared: the opt-in maximum of dynamic shared memory per block
  // and the largest shared-memory carveout, tried once here. Should a device
  // refuse (no cooperative launch, or an MPS share with fewer SMs), programs
  // run without it (said on stderr and in timing notes) rather than not at
  // all.
  {
    const uint32_t bytes = std::max<uint32_t>(properties_.limits.max_shared_per_block_optin,
                                              properties_.limits.max_shared_per_block) /
                           16 * 16;
    CUresult set = api_.cuFuncSetAttribute(clear_shared_kernel_.handle,
                                           CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                           static_cast<int>(bytes));
    if (set == CUDA_SUCCESS) {
      set = api_.cuFuncSetAttribute(clear_shared_kernel_.handle,
                                    CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                    CU_SHAREDMEM_CARVEOUT_MAX_SHARED);
    }
    clear_shared_bytes_ = bytes;
    if (set == CUDA_SUCCESS) set = CuResultOf(ClearSharedMemory()).value_or(CUDA_SUCCESS);
    if (set == CUDA_SUCCESS) set = api_.cuStreamSynchronize(stream_.get());
    if (set != CUDA_SUCCESS) {
      clear_shared_bytes_ = 0;
      std::fprintf(stderr,
                   "kerneleval-worker cuda: shared memory is not cleared between programs: %s\n",
                   std::string(CuResultName(set)).c_str());
    }
  }

  absl::StatusOr<PinnedHostBuffer> control = PinnedHostBuffer::Allocate(api_, kControlBytes);
  if (!control.ok()) return control.status();
  control_ = *std::move(control);
  std::memset(control_.data(), 0, kControlBytes);

  // Twice the L2, so a memset over it leaves nothing of the previous sample's
  // data in the cache whatever the replacement policy.
  // Whole 16-byte words: ke_read_flush reads it back in uint4s.
  const uint64_t flush_bytes = RoundUp(std::max<uint64_t>(2 * properties_.l2_bytes, 1 << 20), 16);
  absl::StatusOr<DeviceBuffer> flush = DeviceBuffer::Allocate(api_, flush_bytes);
  if (!flush.ok()) return flush.status();
  l2_flush_ = *std::move(flush);

  device_info_ = ToDeviceInfo(properties_);
  if (options_.calibrate) {
    // Far more than the L2 holds (16x), so the copy streams from DRAM; at
    // least 64 MiB, at most 1 GiB.
    const uint64_t copy_bytes =
        std::clamp<uint64_t>(16 * properties_.l2_bytes, uint64_t{64} << 20, uint64_t{1} << 30);
    absl::StatusOr<double> bandwidth = MeasureBandwidth(copy_bytes);
    if (!bandwidth.ok()) return bandwidth.status();
    device_info_.set_measured_bandwidth_bytes_per_second(*bandwidth);
    absl::StatusOr<double> flops = MeasureFp32Throughput();
    if (!flops.ok()) return flops.status();
    device_info_.set_measured_fp32_flops_per_second(*flops);
  }
  return absl::OkStatus();
}

absl::Status CudaWorker::FaultFrom(const absl::Status& status) {
  if (FaultStage(status).has_value()) return status;
  if (IsStickyError(status)) MarkContextLost();
  return MakeFault("runtime", status.message());
}

absl::Status CudaWorker::OwnWorkFailed(const absl::Status& status, absl::string_view what) {
  if (status.ok() || FaultStage(status).has_value()) return status;
  if (IsStickyError(status)) MarkContextLost();
  return absl::UnavailableError(absl::StrCat(
      kWorkerOwnFailurePrefix, what, " failed (not the program's doing): ", status.message()));
}

absl::Status CudaWorker::LaunchGridStride(const KernelFunction& kernel, uint64_t items,
                                          void** args) {
  constexpr unsigned kThreads = 256;
  // Enough blocks to fill every SM a few times over; the kernels' grid-stride
  // loops cover the rest.
  const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>(
      (items + kThreads - 1) / kThreads, static_cast<uint64_t>(properties_.sm_count) * 8));
  KE_CU_RETURN_IF_ERROR(api_.cuLaunchKernel(kernel.handle, blocks, 1, 1, kThreads, 1, 1, 0,
                                            stream_.get(), args, nullptr));
  return absl::OkStatus();
}

absl::Status CudaWorker::Fill(CUdeviceptr ptr, uint64_t bytes, uint64_t pattern) {
  if (bytes == 0) return absl::OkStatus();
  void* args[] = {&ptr, &bytes, &pattern};
  return LaunchGridStride(fill_kernel_, std::max<uint64_t>(bytes / 8, 1), args);
}

absl::Status CudaWorker::PoisonOutput(const Buffer& buffer, uint64_t integer_draw) {
  const v1::DType dtype = buffer.spec->dtype();
  if (!data::TakesLeftovers(dtype)) {
    return Fill(buffer.ptr, buffer.bytes, PoisonWord(dtype, integer_draw));
  }
  uint64_t elements = buffer.spec->elements();
  if (elements == 0) return absl::OkStatus();
  CUdeviceptr dst = buffer.ptr;
  uint64_t element_bytes = data::DTypeSize(dtype);
  void* args[] = {&dst, &elements, &element_bytes, &integer_draw};
  return LaunchGridStride(leftovers_kernel_, elements, args);
}

absl::Status CudaWorker::WaitFor(CUevent event, absl::Time deadline) {
  // Spin (yielding) for the first ~millisecond, then sleep in growing steps up
  // to 1 ms: short kernels come back at once, long ones cost no CPU.
  absl::Duration pause = absl::Microseconds(20);
  for (int polls = 0;; ++polls) {
    const CUresult result =
        event != nullptr ? api_.cuEventQuery(event) : api_.cuStreamQuery(stream_.get());
    if (result == CUDA_SUCCESS) return absl::OkStatus();
    if (result != CUDA_ERROR_NOT_READY) {
      return FaultFrom(CuError(result,
                               event != nullptr ? "cuEventQuery(event)" : "cuStreamQuery(stream)",
                               __FILE__, __LINE__));
    }
    if (absl::Now() >= deadline) {
      MarkContextLost();  // the kernel keeps running: only process exit stops it
      return MakeFault("timeout", "the program was still running at the deadline");
    }
    if (polls < 2000) {
      std::this_thread::yield();
    } else {
      absl::SleepFor(pause);
      pause = std::min(pause * 2, absl::Milliseconds(1));
    }
  }
}

absl::StatusOr<CudaWorker::LoadedProgram> CudaWorker::LoadProgram(const internal::Program& program,
                                                                  std::vector<std::string>* notes) {
  LoadedProgram loaded;
  loaded.label = program.label();
  const v1::CompileResult& compiled = program.compiled();
  const std::string arch = ArchName(properties_.cc_major, properties_.cc_minor);
  // Any CUBIN the device can run (sm_80 SASS on an sm_86 device, sm_100f on
  // 10.3), not only one for its exact arch; the engine sends the PTX too,
  // for what no CUBIN covers (a submission's compute_XX, another major).
  const bool cubin_runs = !compiled.cubin().empty() &&
                          CubinRunsOn(compiled.arch(), properties_.cc_major, properties_.cc_minor);
  std::string why_jit;
  if (cubin_runs) {
    absl::StatusOr<Module> module = Module::Load(api_, compiled.cubin());
    if (module.ok()) {
      loaded.module = std::make_unique<Module>(*std::move(module));
      if (absl::Status s = FindGlobals(program, &loaded, notes); !s.ok()) return s;
      return loaded;
    }
    // The driver judges the image: one it has no code in for this device
    // (a family or minor it does not run, an unnamed arch) goes to the PTX;
    // any other failure is the program's.
    const std::optional<CUresult> result = CuResultOf(module.status());
    const bool no_code =
        result == CUDA_ERROR_NO_BINARY_FOR_GPU || result == CUDA_ERROR_INVALID_IMAGE;
    if (compiled.ptx().empty() || !no_code) return FaultFrom(module.status());
    // The first line: the JIT log after it is the driver's, not ours.
    const absl::string_view message = module.status().message();
    why_jit = absl::StrCat("the CUBIN did not load: ", message.substr(0, message.find('\n')));
  } else if (!compiled.cubin().empty()) {
    why_jit = absl::StrCat("the CUBIN is for ", compiled.arch(), ", the device is ", arch);
  } else {
    why_jit = "no CUBIN";
  }
  if (compiled.ptx().empty()) {
    return MakeFault("runtime", absl::StrCat("program '", program.label(), "' has no code for ",
                                             arch, " (", why_jit, ", no PTX)"));
  }
  absl::StatusOr<Module> module = Module::Load(api_, compiled.ptx());
  if (!module.ok()) {
    // Both reasons: why the PTX was tried (a refused CUBIN says why) and
    // why it failed; the payload (the CUresult) stays, for the fault's kind.
    absl::Status failed(
        module.status().code(),
        absl::StrCat("PTX JIT (", why_jit, ") failed: ", module.status().message()));
    module.status().ForEachPayload(
        [&](absl::string_view key, const absl::Cord& value) { failed.SetPayload(key, value); });
    return FaultFrom(failed);
  }
  notes->push_back(absl::StrCat(program.label(), ": PTX JIT (", why_jit, ")"));
  loaded.module = std::make_unique<Module>(*std::move(module));
  if (absl::Status s = FindGlobals(program, &loaded, notes); !s.ok()) return s;
  return loaded;
}

absl::Status CudaWorker::FindGlobals(const internal::Program& program, LoadedProgram* loaded,
                                     std::vector<std::string>* notes) {
  std::vector<LoadedProgram::GlobalSpan> found;
  std::vector<std::string> missing;
  for (const std::string& name : program.compiled().device_globals()) {
    absl::StatusOr<Module::Global> global = loaded->module->GetGlobal(name);
    if (!global.ok()) {
      // Only a broken context stops the program; a name the driver does not
      // know (or refuses) is left out, and said so.
      if (IsStickyError(global.status())) return FaultFrom(global.status());
      missing.push_back(name);
      continue;
    }
    if (global->bytes > 0) found.push_back({global->ptr, global->bytes, 0});
  }
  if (!missing.empty()) {
    notes->push_back(absl::StrCat(program.label(), ": device globals not in the loaded module (",
                                  absl::StrJoin(missing, ", "),
                                  "): not hidden from the programs timed with it"));
  }
  // Neighbours in one span, one copy: the variables of a section lie a few
  // alignment bytes apart (the prelude's twelve constants make one span).
  // A gap under 16 bytes between two of this module's variables is padding
  // of its own memory (allocations start 256-byte aligned).
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.ptr < b.ptr; });
  constexpr uint64_t kMergeGapBytes = 16;
  uint64_t stash_bytes = 0;  // where the next span's bytes go in the stash
  for (const LoadedProgram::GlobalSpan& span : found) {
    if (!loaded->globals.empty()) {
      LoadedProgram::GlobalSpan& last = loaded->globals.back();
      if (span.ptr <= last.ptr + last.bytes + kMergeGapBytes) {
        last.bytes = std::max(last.ptr + last.bytes, span.ptr + span.bytes) - last.ptr;
        stash_bytes = last.stash_offset + RoundUp(last.bytes, 8);
        continue;
      }
    }
    loaded->globals.push_back({span.ptr, span.bytes, stash_bytes});
    stash_bytes += RoundUp(span.bytes, 8);
  }
  return absl::OkStatus();
}

absl::Status CudaWorker::KeepLoadTimeGlobals(LoadedProgram& program) {
  if (program.globals.empty() || !program.globals_image.empty()) return absl::OkStatus();
  const LoadedProgram::GlobalSpan& last = program.globals.back();
  const uint64_t bytes = last.stash_offset + RoundUp(last.bytes, 8);
  absl::StatusOr<DeviceBuffer> image = DeviceBuffer::Allocate(api_, bytes);
  absl::StatusOr<DeviceBuffer> staging =
      image.ok() ? DeviceBuffer::Allocate(api_, bytes) : image.status();
  if (!staging.ok()) {
    return MakeFault("runtime", absl::StrCat("its device globals (", bytes,
                                             " bytes) cannot be kept to start every timed run "
                                             "from their values as loaded: ",
                                             staging.status().message()));
  }
  program.globals_image = *std::move(image);
  program.globals_staging = *std::move(staging);
  for (const LoadedProgram::GlobalSpan& span : program.globals) {
    KE_CU_RETURN_IF_ERROR(api_.cuMemcpyDtoDAsync(program.globals_image.ptr() + span.stash_offset,
                                                 span.ptr, span.bytes, stream_.get()));
  }
  // Under pads (in place): kernel code that finds the image in device
  // memory can neither read another program's values from it nor write
  // values of its choosing into its own.
  for (uint64_t& key : program.globals_keys) key = DrawKey();
  return XorGlobalsImage(program, program.globals_image.ptr());
}

absl::Status CudaWorker::XorGlobalsImage(const LoadedProgram& program, CUdeviceptr to) {
  CUdeviceptr image_ptr = program.globals_image.ptr();
  uint64_t words = program.globals_image.bytes() / 8;
  uint64_t keys[2] = {program.globals_keys[0], program.globals_keys[1]};
  void* args[] = {&image_ptr, &to, &words, &keys[0], &keys[1]};
  return LaunchGridStride(stash_kernel_, words, args);
}

absl::Status CudaWorker::HideGlobals(const LoadedProgram& program) {
  for (const LoadedProgram::GlobalSpan& span : program.globals) {
    KE_CU_RETURN_IF_ERROR(api_.cuMemsetD8Async(span.ptr, 0, span.bytes, stream_.get()));
  }
  return absl::OkStatus();
}

absl::Status CudaWorker::RestoreGlobals(const LoadedProgram& program) {
  if (program.globals.empty()) return absl::OkStatus();
  // Kept right after loading (Time), never later: a later image would hold
  // what the runs computed.
  if (program.globals_image.empty()) {
    return absl::FailedPreconditionError("device globals restored before their image was kept");
  }
  // The pads off into the staging buffer (the image keeps them), then each
  // span from there.
  const CUdeviceptr staging_ptr = program.globals_staging.ptr();
  if (absl::Status s = XorGlobalsImage(program, staging_ptr); !s.ok()) return s;
  for (const LoadedProgram::GlobalSpan& span : program.globals) {
    KE_CU_RETURN_IF_ERROR(api_.cuMemcpyDtoDAsync(span.ptr, staging_ptr + span.stash_offset,
                                                 span.bytes, stream_.get()));
  }
  return absl::OkStatus();
}

absl::Status CudaWorker::ClearSharedMemory() {
  if (clear_shared_bytes_ == 0) return absl::OkStatus();
  uint64_t n16 = clear_shared_bytes_ / 16;
  CUdeviceptr sink = flush_sink_.ptr();
  uint64_t never = ~uint64_t{0};  // n16 never is: nothing is read back
  // The fill is drawn per call (after every run), by this process.
  uint64_t seed = shared_fill_chooser_();
  void* args[] = {&n16, &sink, &never, &seed};
  // Cooperative: every block resident at once, and with the whole of an
  // SM's shared memory each, exactly one on every SM (a plain launch leaves
  // the spread to the block scheduler).
  KE_CU_RETURN_IF_ERROR(api_.cuLaunchCooperativeKernel(
      clear_shared_kernel_.handle, static_cast<unsigned>(properties_.sm_count), 1, 1, 512, 1, 1,
      clear_shared_bytes_, stream_.get(), args));
  return absl::OkStatus();
}

absl::Status CudaWorker::ZeroGlobals(const LoadedProgram& program) {
  if (absl::Status s = HideGlobals(program); !s.ok()) return s;
  KE_CU_RETURN_IF_ERROR(api_.cuStreamSynchronize(stream_.get()));
  return absl::OkStatus();
}

absl::StatusOr<CudaWorker::BufferSet> CudaWorker::AllocateBuffers(
    const internal::ResolvedPlan& plan, uint64_t seed, data::GeneratedInputs* inputs, int draws) {
  const bool timed = inputs == nullptr;
  BufferSet set;
  set.buffers.reserve(plan.buffers_size());
  const uint64_t guard = options_.guard_bytes;
  // The integer poison is drawn per run (poison.h).
  const uint64_t integer_draw = poison_chooser_();
  for (const internal::BufferSpec& spec : plan.buffers()) {
    const size_t element_bytes = data::DTypeSize(spec.dtype());
    if (element_bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat("buffer '", spec.name(), "' has no dtype"));
    }
    if (spec.elements() > (uint64_t{1} << 50) / element_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("buffer '", spec.name(), "' is too large"));
    }
    Buffer buffer;
    buffer.spec = &spec;
    buffer.bytes = spec.elements() * element_bytes;
    absl::StatusOr<DeviceBuffer> memory =
        DeviceBuffer::Allocate(api_, guard + RoundUp(buffer.bytes, 256) + guard);
    if (!memory.ok()) return memory.status();
    buffer.memory = *std::move(memory);
    buffer.ptr = buffer.memory.ptr() + guard;
    // Guard pattern over everything, then the payload of outputs/scratch
    // poisoned; inputs are uploaded below, after these fills completed.
    if (absl::Status s = Fill(buffer.memory.ptr(), buffer.memory.bytes(), kGuardWord); !s.ok()) {
      return s;
    }
    if (spec.role() != internal::BUFFER_ROLE_INPUT) {
      if (absl::Status s = PoisonOutput(buffer, integer_draw); !s.ok()) return s;
    }
    if (timed && spec.role() == internal::BUFFER_ROLE_INPUT) {
      buffer.sampler = data::MakeElementSampler(spec.distribution(), spec.dtype());
      buffer.name_hash = data::HashBufferName(spec.name());
    }
    if (timed && spec.role() == internal::BUFFER_ROLE_OUTPUT && buffer.bytes > 0) {
      absl::StatusOr<DeviceBuffer> stash = DeviceBuffer::Allocate(api_, RoundUp(buffer.bytes, 8));
      if (!stash.ok()) return stash.status();
      buffer.stash = *std::move(stash);
      for (int d = 0; d < draws; ++d) {
        absl::StatusOr<DeviceBuffer> kept = DeviceBuffer::Allocate(api_, RoundUp(buffer.bytes, 8));
        if (!kept.ok()) return kept.status();
        buffer.kept.push_back({.copy = *std::move(kept)});
      }
    }
    set.buffers.push_back(std::move(buffer));
  }
  // The fills run on our stream, the uploads on the legacy stream, which a
  // non-blocking stream does not wait for: finish the fills first.
  KE_CU_RETURN_IF_ERROR(api_.cuStreamSynchronize(stream_.get()));
  for (Buffer& buffer : set.buffers) {
    if (buffer.bytes == 0 || buffer.spec->role() != internal::BUFFER_ROLE_INPUT) continue;
    // A timing set's inputs are generated on the device before every run
    // (GenerateInputs): nothing to generate on the host or upload (a
    // Pareto value takes ~40 ns of a core: 2^25 of them, 1.3 s a set).
    if (timed) continue;
    buffer.input = inputs->Get(*buffer.spec, seed);
    if (buffer.input->size() != buffer.bytes) {
      return absl::InternalError(absl::StrCat("generated ", buffer.input->size(), " bytes for '",
                                              buffer.spec->name(), "', expected ", buffer.bytes));
    }
    KE_CU_RETURN_IF_ERROR(api_.cuMemcpyHtoD(buffer.ptr, buffer.input->data(), buffer.bytes));
  }
  // A pageable upload may return before its DMA lands; our stream does not
  // wait for the legacy stream: synchronise the context before any launch.
  KE_CU_RETURN_IF_ERROR(api_.cuCtxSynchronize());
  return set;
}

absl::Status CudaWorker::LaunchGenerate(CUdeviceptr out, const Buffer& buffer, uint64_t seed) {
  uint64_t elements = buffer.spec->elements();
  uint64_t name_hash = buffer.name_hash;
  data::ElementSampler sampler = buffer.sampler;
  void* args[] = {&out, &elements, &seed, &name_hash, &sampler};
  return LaunchGridStride(generate_kernel_, elements, args);
}

absl::Status CudaWorker::GenerateInputs(BufferSet& set, uint64_t set_seed, uint64_t round,
                                        int program) {
  for (Buffer& buffer : set.buffers) {
    if (buffer.spec->role() != internal::BUFFER_ROLE_INPUT || buffer.bytes == 0) continue;
    buffer.round_seed = data::TimedInputSeed(set_seed, round, static_cast<uint64_t>(program));
    buffer.timed_round = true;
    if (absl::Status s = LaunchGenerate(buffer.ptr, buffer, buffer.round_seed); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CudaWorker::RunUntimed(LoadedProgram& program, const internal::ResolvedPlan& plan,
                                    BufferSet& set, uint64_t set_seed, uint64_t round,
                                    int inputs_of_program, absl::Time deadline) {
  absl::Status prepared = GenerateInputs(set, set_seed, round, inputs_of_program);
  if (prepared.ok()) prepared = RestoreGlobals(program);
  if (prepared.ok()) prepared = PoisonWritable(set);
  if (!prepared.ok()) return OwnWorkFailed(prepared, "preparation of a run (inputs, poison)");
  absl::Status status = LaunchPlan(program, plan, set);
  if (status.ok()) status = WaitFor(nullptr, deadline);
  if (!status.ok()) return status;
  // As after every timed run.
  return OwnWorkFailed(ClearAfterRun(program, set), "clean-up after a run (stashes, poison)");
}

absl::Status CudaWorker::PoisonWritable(const BufferSet& set) {
  // The integer poison is drawn per run (poison.h).
  const uint64_t integer_draw = poison_chooser_();
  for (const Buffer& buffer : set.buffers) {
    if (buffer.spec->role() == internal::BUFFER_ROLE_INPUT) continue;
    if (absl::Status s = PoisonOutput(buffer, integer_draw); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CudaWorker::LaunchPlan(LoadedProgram& program, const internal::ResolvedPlan& plan,
                                    const BufferSet& buffers) {
  // Every launch is resolved and checked before the first is queued: a plan
  // refused at its third launch would otherwise leave the first two running,
  // and the clean-up would wait on them with no deadline if they hang.
  struct Ready {
    const KernelFunction* function;
    PackedArgs args;
    std::array<uint32_t, 3> grid, block;
    uint32_t dynamic_shared;
  };
  std::vector<Ready> ready;
  ready.reserve(static_cast<size_t>(plan.launches_size()));
  for (const internal::ResolvedLaunch& launch : plan.launches()) {
    auto found = program.functions.find(launch.symbol());
    if (found == program.functions.end()) {
      absl::StatusOr<KernelFunction> function = program.module->GetFunction(launch.symbol());
      if (!function.ok()) {
        if (function.status().code() == absl::StatusCode::kNotFound) {
          return MakeFault("runtime",
                           absl::StrCat("kernel '", launch.kernel(), "' (symbol ", launch.symbol(),
                                        ") is not in program '", program.label, "'"));
        }
        return FaultFrom(function.status());
      }
      found = program.functions.emplace(launch.symbol(), *std::move(function)).first;
    }
    KernelFunction& function = found->second;
    const KernelLimits limits{static_cast<uint32_t>(function.max_threads_per_block),
                              static_cast<uint32_t>(function.static_shared_bytes),
                              static_cast<uint32_t>(function.registers)};
    if (absl::Status s = CheckLaunchConfig(launch, properties_.limits, limits); !s.ok()) {
      return MakeFault("runtime", s.message());
    }
    const uint32_t dynamic_shared = launch.dynamic_shared_bytes();
    if (NeedsDynamicSharedOptIn(dynamic_shared,
                                static_cast<uint32_t>(function.max_dynamic_shared_bytes))) {
      KE_CU_RETURN_IF_ERROR(api_.cuFuncSetAttribute(function.handle,
                                                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                    static_cast<int>(dynamic_shared)));
      function.max_dynamic_shared_bytes = static_cast<int>(dynamic_shared);
    }
    absl::StatusOr<PackedArgs> args = PackKernelArgs(
        launch.args(), [&](absl::string_view name) { return buffers.Address(name); });
    if (!args.ok()) return args.status();  // the engine's plan is wrong: infrastructure
    ready.push_back(
        {&function, *std::move(args), Dim3(launch.grid()), Dim3(launch.block()), dynamic_shared});
  }
  for (size_t i = 0; i < ready.size(); ++i) {
    Ready& launch = ready[i];
    const CUresult result =
        api_.cuLaunchKernel(launch.function->handle, launch.grid[0], launch.grid[1], launch.grid[2],
                            launch.block[0], launch.block[1], launch.block[2],
                            launch.dynamic_shared, stream_.get(), launch.args.params(), nullptr);
    if (result != CUDA_SUCCESS) {
      return FaultFrom(CuError(
          result, absl::StrCat("cuLaunchKernel(", plan.launches(static_cast<int>(i)).kernel(), ")"),
          __FILE__, __LINE__));
    }
  }
  return absl::OkStatus();
}

absl::Status CudaWorker::StashOutputs(BufferSet& set) {
  for (Buffer& buffer : set.buffers) {
    if (buffer.stash.empty()) continue;
    for (uint64_t& key : buffer.stash_keys) key = DrawKey();
    CUdeviceptr src = buffer.ptr, dst = buffer.stash.ptr();
    uint64_t words = buffer.stash.bytes() / 8;
    void* args[] = {&src, &dst, &words, &buffer.stash_keys[0], &buffer.stash_keys[1]};
    if (absl::Status s = LaunchGridStride(stash_kernel_, words, args); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status CudaWorker::KeepStash(BufferSet& set, int draw, bool restore) {
  for (Buffer& buffer : set.buffers) {
    if (buffer.stash.empty()) continue;
    const auto d = static_cast<size_t>(draw);
    if (d >= buffer.kept.size()) return absl::InternalError("no kept copy for that draw");
    Buffer::Kept& kept = buffer.kept[d];
    DeviceBuffer& from = restore ? kept.copy : buffer.stash;
    DeviceBuffer& to = restore ? buffer.stash : kept.copy;
    KE_CU_RETURN_IF_ERROR(
        api_.cuMemcpyDtoDAsync(to.ptr(), from.ptr(), from.bytes(), stream_.get()));
    uint64_t* from_keys = restore ? kept.keys : buffer.stash_keys;
    uint64_t* to_keys = restore ? buffer.stash_keys : kept.keys;
    std::copy(from_keys, from_keys + 2, to_keys);
  }
  return absl::OkStatus();
}

absl::Status CudaWorker::GiveBackStack() {
  size_t stack_bytes = 0;
  KE_CU_RETURN_IF_ERROR(api_.cuCtxGetLimit(&stack_bytes, CU_LIMIT_STACK_SIZE));
  if (stack_bytes <= initial_stack_bytes_) return absl::OkStatus();
  KE_CU_RETURN_IF_ERROR(api_.cuCtxSetLimit(CU_LIMIT_STACK_SIZE, initial_stack_bytes_));
  return absl::OkStatus();
}

uint64_t CudaWorker::DrawKey() { return (uint64_t{key_source_()} << 32) | key_source_(); }

absl::StatusOr<internal::CaseResult> CudaWorker::Collect(const BufferSet& set,
                                                         bool stashed_outputs_only) {
  internal::CaseResult result;
  const uint64_t guard = options_.guard_bytes;
  std::string bytes, stashed;
  for (const Buffer& buffer : set.buffers) {
    const internal::BufferSpec& spec = *buffer.spec;
    if (stashed_outputs_only && buffer.stash.empty()) continue;
    absl::string_view payload;
    if (!stashed_outputs_only) {
      // Guards: every byte outside the payload must still hold the pattern.
      const uint64_t total = buffer.memory.bytes();
      bytes.resize(total);
      KE_CU_RETURN_IF_ERROR(api_.cuMemcpyDtoH(bytes.data(), buffer.memory.ptr(), total));
      uint64_t before = 0, after = 0;
      for (uint64_t i = 0; i < guard; ++i) {
        before += static_cast<uint8_t>(bytes[i]) != PatternByte(kGuardWord, i);
      }
      for (uint64_t i = guard + buffer.bytes; i < total; ++i) {
        after += static_cast<uint8_t>(bytes[i]) != PatternByte(kGuardWord, i);
      }
      if (before != 0 || after != 0) {
        return MakeFault("runtime",
                         absl::StrCat("out-of-bounds write: ", before, " bytes before and ", after,
                                      " bytes after buffer '", spec.name(), "' were overwritten"));
      }
      payload = absl::string_view(bytes.data() + guard, buffer.bytes);
    }
    if (!buffer.stash.empty()) {
      // Timing: the payload is poison by now; the outputs (of the last run,
      // or of the drawn one after KeepStash restored it) are in the stash,
      // under pads.
      stashed.resize(buffer.stash.bytes());
      KE_CU_RETURN_IF_ERROR(
          api_.cuMemcpyDtoH(stashed.data(), buffer.stash.ptr(), buffer.stash.bytes()));
      for (uint64_t i = 0; i < stashed.size() / 8; ++i) {
        uint64_t word;
        std::memcpy(&word, stashed.data() + 8 * i, 8);
        word ^= StashPad(i, buffer.stash_keys[0], buffer.stash_keys[1]);
        std::memcpy(stashed.data() + 8 * i, &word, 8);
      }
      payload = absl::string_view(stashed.data(), buffer.bytes);
    }
    if (spec.role() == internal::BUFFER_ROLE_INPUT) {
      // Empty buffers have no generated bytes. A timed round's inputs are
      // generated again, by the same kernel, where no program was given
      // them (input_check_), and read back.
      std::string expected = buffer.input ? *buffer.input : std::string();
      if (buffer.timed_round) {
        if (input_check_.bytes() < buffer.bytes) {
          return absl::InternalError("the input check buffer is smaller than an input");
        }
        if (absl::Status s = LaunchGenerate(input_check_.ptr(), buffer, buffer.round_seed);
            !s.ok()) {
          return s;
        }
        KE_CU_RETURN_IF_ERROR(api_.cuStreamSynchronize(stream_.get()));
        expected.resize(buffer.bytes);
        KE_CU_RETURN_IF_ERROR(api_.cuMemcpyDtoH(expected.data(), input_check_.ptr(), buffer.bytes));
      }
      if (payload != expected && result.modified_input().empty()) {
        result.set_modified_input(spec.name());
      }
    } else if (spec.role() == internal::BUFFER_ROLE_OUTPUT) {
      data::AppendOutput(spec, payload.data(), &result);
    }
  }
  return result;
}

// ------------------------------------------------------------------------ Run

absl::StatusOr<WorkerOutcome<internal::RunResult>> CudaWorker::Run(
    const internal::RunRequest& request) {
  WorkerOutcome<internal::RunResult> outcome;
  internal::RunResult& result = outcome.result;
  const absl::Time deadline = DeadlineAfter(request.timeout_seconds(), kDefaultTimeoutSeconds);
  auto fail = [&](const absl::Status& fault, absl::string_view case_label) {
    internal::RunFailure* failure = result.mutable_failure();
    failure->set_stage(FaultStage(fault).value_or("runtime"));
    failure->set_message(std::string(fault.message()));
    failure->set_program(request.program().label());
    failure->set_case_label(std::string(case_label));
    outcome.worker_exiting = ContextLost();
    return outcome;
  };

  absl::StatusOr<LoadedProgram> program = LoadProgram(request.program(), &outcome.notes);
  if (!program.ok()) {
    if (FaultStage(program.status())) return fail(program.status(), "");
    return program.status();
  }
  for (const internal::Case& test_case : request.cases()) {
    absl::StatusOr<BufferSet> buffers =
        AllocateBuffers(test_case.plan(), test_case.input_seed(), &correctness_inputs_);
    if (!buffers.ok()) return buffers.status();  // the problem's buffers: infrastructure
    absl::Status status = LaunchPlan(*program, test_case.plan(), *buffers);
    if (status.ok()) status = ClearSharedMemory();  // queued behind the plan
    if (status.ok()) status = WaitFor(nullptr, deadline);
    absl::StatusOr<internal::CaseResult> case_result =
        status.ok() ? Collect(*buffers) : absl::StatusOr<internal::CaseResult>(status);
    if (!case_result.ok()) {
      const absl::Status fault = FaultFrom(case_result.status());
      // Launches queued before a failed one may still run: the scrub below
      // waits for the whole context, so first wait for them within the
      // deadline (past it the context is lost and nothing is scrubbed).
      if (!ContextLost()) (void)WaitFor(nullptr, deadline);
      if (!ContextLost()) {
        (void)buffers->ScrubAndFree();
        (void)ZeroGlobals(*program);
      }
      if (!IsProgramFault(case_result.status())) {
        return case_result.status();  // not the program's doing
      }
      return fail(fault, test_case.label());
    }
    if (absl::Status freed = buffers->ScrubAndFree(); !freed.ok()) {
      // A scrub can only fail on a context the program broke (a late fault).
      return fail(FaultFrom(freed), test_case.label());
    }
    *result.add_cases() = *std::move(case_result);
  }
  // The module is unloaded next and its memory goes back to the driver's
  // pool: nothing the program computed stays there for a later module or
  // allocation to find (our own buffers are scrubbed the same way).
  if (absl::Status zeroed = ZeroGlobals(*program); !zeroed.ok()) {
    return fail(FaultFrom(zeroed), "");
  }
  return outcome;
}

// ----------------------------------------------------------------------- Time

absl::StatusOr<CudaWorker::Sample> CudaWorker::TimeOnce(LoadedProgram& program,
                                                        const internal::ResolvedPlan& plan,
                                                        const BufferSet& buffers, bool flush_l2,
                                                        absl::Time deadline) {
  // Fresh poison in every output before every sample: a kernel that skips
  // work when its output already looks computed gains nothing.
  if (absl::Status s = PoisonWritable(buffers); !s.ok()) {
    return OwnWorkFailed(s, "poisoning of the outputs");
  }
  if (flush_l2) {
    if (absl::Status flushed = FlushL2(); !flushed.ok()) return OwnWorkFailed(flushed, "L2 flush");
  }
  auto* control = static_cast<uint8_t*>(control_.data());
  volatile int* release = reinterpret_cast<volatile int*>(control + kReleaseOffset);
  volatile uint64_t* report = reinterpret_cast<volatile uint64_t*>(control + kHoldReportOffset);
  const bool hold = plan.launches_size() <= kMaxHeldLaunches;
  uint64_t hold_keys[2] = {0, 0};
  if (hold) {
    *release = 0;
    for (int i = 0; i < 4; ++i) report[i] = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    CUdeviceptr release_ptr = control_.device_ptr() + kReleaseOffset;
    CUdeviceptr report_ptr = control_.device_ptr() + kHoldReportOffset;
    uint64_t min_ns = options_.hold_min_ns, timeout_ns = options_.hold_timeout_ns;
    // Fresh keys for this sample's seal (keyed_mix.h).
    for (uint64_t& key : hold_keys) key = DrawKey();
    void* args[] = {&release_ptr, &min_ns, &timeout_ns, &report_ptr, &hold_keys[0], &hold_keys[1]};
    if (const CUresult held = api_.cuLaunchKernel(hold_kernel_.handle, 1, 1, 1, 1, 1, 1, 0,
                                                  stream_.get(), args, nullptr);
        held != CUDA_SUCCESS) {
      return OwnWorkFailed(CuError(held, "cuLaunchKernel(ke_hold_stream)", __FILE__, __LINE__),
                           "stream hold");
    }
  }
  absl::Status status = OwnWorkFailed(start_.Record(stream_.get()), "start event");
  if (status.ok()) status = LaunchPlan(program, plan, buffers);
  if (status.ok()) status = stop_.Record(stream_.get());
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *release = 1;  // always, also after a failed launch
  if (!status.ok()) return status;
  if (absl::Status s = WaitFor(stop_.get(), deadline); !s.ok()) return s;
  absl::StatusOr<float> ms = Event::ElapsedMilliseconds(api_, start_, stop_);
  if (!ms.ok()) return FaultFrom(ms.status());
  Sample sample;
  sample.microseconds = static_cast<double>(*ms) * 1000.0;
  if (hold) {
    const uint64_t cycles = report[0], ns = report[1], timed_out = report[2], seal = report[3];
    if (seal != HoldReportSeal(cycles, ns, timed_out, hold_keys[0], hold_keys[1])) {
      // Not what the hold wrote: the program overwrote it. Its clock and
      // lateness are unknown, so the sample counts as it is.
      sample.report_overwritten = true;
    } else {
      sample.hold_timed_out = timed_out != 0;
      if (ns > 0) {
        sample.clock_mhz = static_cast<double>(cycles) * 1000.0 / static_cast<double>(ns);
      }
    }
  }
  return sample;
}

absl::Status CudaWorker::FlushL2() {
  KE_CU_RETURN_IF_ERROR(
      api_.cuMemsetD32Async(l2_flush_.ptr(), ++flush_value_, l2_flush_.bytes() / 4, stream_.get()));
  // Then read it all back, so that L2 holds clean lines (ke_read_flush).
  CUdeviceptr flush_ptr = l2_flush_.ptr(), sink_ptr = flush_sink_.ptr();
  uint64_t n16 = l2_flush_.bytes() / 16;
  uint64_t never = uint64_t{1} << 32;  // above any 32-bit XOR: the sink is never written
  void* args[] = {&flush_ptr, &n16, &sink_ptr, &never};
  KE_CU_RETURN_IF_ERROR(api_.cuLaunchKernel(read_flush_kernel_.handle,
                                            static_cast<unsigned>(properties_.sm_count) * 4, 1, 1,
                                            512, 1, 1, 0, stream_.get(), args, nullptr));
  return absl::OkStatus();
}

absl::Status CudaWorker::ClearAfterRun(LoadedProgram& program, BufferSet& set) {
  if (absl::Status s = StashOutputs(set); !s.ok()) return s;
  if (absl::Status s = PoisonWritable(set); !s.ok()) return s;
  if (absl::Status s = ClearSharedMemory(); !s.ok()) return s;
  return HideGlobals(program);
}

absl::StatusOr<WorkerOutcome<internal::TimingResult>> CudaWorker::Time(
    const internal::TimingRequest& request) {
  WorkerOutcome<internal::TimingResult> outcome;
  internal::TimingResult& result = outcome.result;
  const internal::TimingConfig config = timing::WithDefaults(request.config());
  if (clear_shared_bytes_ == 0) {
    outcome.notes.push_back(
        "shared memory is not cleared between the programs timed here (the device refused "
        "ke_clear_shared at start-up)");
  }
  if (!persisting_l2_refusal_.empty()) {
    outcome.notes.push_back(absl::StrCat("the device refused ", persisting_l2_refusal_,
                                         " at start-up (no L2 set-aside exists unless set, and a "
                                         "submission cannot set one)"));
  }
  const int program_count = request.programs_size();
  if (program_count == 0) return absl::InvalidArgumentError("TimingRequest has no programs");
  if (request.input_seeds().empty()) {
    return absl::InvalidArgumentError("TimingRequest has no input_seeds");
  }
  const absl::Time deadline =
      DeadlineAfter(request.timeout_seconds(), 2 * config.max_seconds() + kDefaultTimeoutSeconds);
  auto fail = [&](const absl::Status& fault, int program) {
    internal::RunFailure* failure = result.mutable_failure();
    failure->set_stage(FaultStage(fault).value_or("runtime"));
    failure->set_message(std::string(fault.message()));
    failure->set_program(request.programs(program).program().label());
    outcome.worker_exiting = ContextLost();
    return outcome;
  };

  std::vector<LoadedProgram> programs;
  for (int p = 0; p < program_count; ++p) {
    absl::StatusOr<LoadedProgram> loaded =
        LoadProgram(request.programs(p).program(), &outcome.notes);
    if (!loaded.ok()) {
      if (FaultStage(loaded.status())) return fail(loaded.status(), p);
      return loaded.status();
    }
    programs.push_back(*std::move(loaded));
  }
  // The globals' load-time images first, before any run: the input sets
  // are sized to what is left.
  for (int p = 0; p < program_count; ++p) {
    if (absl::Status s = KeepLoadTimeGlobals(programs[p]); !s.ok()) {
      if (FaultStage(s)) return fail(s, p);
      return s;
    }
  }

  // Input sets: as many as asked for that fit in 90 % of free memory, each
  // with kMaxDrawnRunsPerSet kept copies of its outputs (fewer first, down
  // to one, where they do not fit).
  int sets = static_cast<int>(
      std::min<uint64_t>(std::max<uint32_t>(config.input_sets(), 1), request.input_seeds_size()));
  uint64_t bytes_per_set_but_kept = 0;  // [bytes] one set of every program, no kept copies
  uint64_t output_bytes_per_set = 0;    // [bytes] one kept copy of its outputs
  uint64_t largest_input = 0;
  uint64_t reference_output_bytes = 0;  // [bytes] one copy of the reference's outputs
  for (const internal::BufferSpec& spec : request.programs(0).plan().buffers()) {
    if (spec.role() == internal::BUFFER_ROLE_OUTPUT) {
      reference_output_bytes += spec.elements() * data::DTypeSize(spec.dtype());
    }
  }
  for (const internal::TimedProgram& timed : request.programs()) {
    for (const internal::BufferSpec& spec : timed.plan().buffers()) {
      const uint64_t payload = RoundUp(spec.elements() * data::DTypeSize(spec.dtype()), 256);
      // Outputs also in the stash, and in each draw's kept copy.
      bytes_per_set_but_kept += payload + 2 * options_.guard_bytes +
                                (spec.role() == internal::BUFFER_ROLE_OUTPUT ? payload : 0);
      if (spec.role() == internal::BUFFER_ROLE_OUTPUT) output_bytes_per_set += payload;
      if (spec.role() == internal::BUFFER_ROLE_INPUT) {
        largest_input = std::max(largest_input, payload);
      }
    }
  }
  size_t free_bytes = 0, total_bytes = 0;
  KE_CU_RETURN_IF_ERROR(api_.cuMemGetInfo(&free_bytes, &total_bytes));
  // Less the input check buffer, allocated below.
  free_bytes -= std::min<size_t>(free_bytes, largest_input);
  int draws = kMaxDrawnRunsPerSet;
  auto fits = [&] {
    return (bytes_per_set_but_kept + static_cast<uint64_t>(draws) * output_bytes_per_set) *
               static_cast<uint64_t>(sets) <=
           free_bytes / 10 * 9;
  };
  while (draws > 1 && !fits()) --draws;
  while (sets > 1 && !fits()) --sets;
  if (sets <
      static_cast<int>(std::min<uint64_t>(config.input_sets(), request.input_seeds_size()))) {
    outcome.notes.push_back(absl::StrCat("timing with ", sets, " input set(s): more do not fit"));
  }
  // Where Collect generates a timed round's inputs again to check them: one
  // for the whole request (released by release_all, defined next).
  if (largest_input > 0) {
    absl::StatusOr<DeviceBuffer> check = DeviceBuffer::Allocate(api_, largest_input);
    if (!check.ok()) return check.status();  // no program's doing
    input_check_ = *std::move(check);
  }

  // buffers[p][s]: every program has its own copy of every input set, so no
  // program sees (or can disturb) another's buffers.
  std::vector<std::vector<BufferSet>> buffers(program_count);
  // (Once the context is lost, every handle is dropped without a device
  // call: MarkContextLost.)
  auto release_all = [&]() {
    // As in Run: what is still queued finishes within the deadline, or the
    // context is lost and the scrubs (which wait for the whole context) skip.
    if (!ContextLost()) (void)WaitFor(nullptr, deadline);
    (void)input_check_.ScrubAndFree();
    for (auto& per_program : buffers) {
      for (BufferSet& set : per_program) (void)set.ScrubAndFree();
    }
  };
  // Timing sets: their inputs are generated on the device, every round.
  for (int p = 0; p < program_count; ++p) {
    for (int s = 0; s < sets; ++s) {
      absl::StatusOr<BufferSet> set =
          AllocateBuffers(request.programs(p).plan(), /*seed=*/0, /*inputs=*/nullptr, draws);
      if (!set.ok()) {
        release_all();
        return set.status();
      }
      buffers[p].push_back(*std::move(set));
    }
  }

  // The program that ran last; its fault is its verdict, anything else is
  // the worker's error.
  int failed_program = 0;
  auto program_failed =
      [&](const absl::Status& status) -> absl::StatusOr<WorkerOutcome<internal::TimingResult>> {
    if (!IsProgramFault(status)) {
      release_all();
      return status;
    }
    const absl::Status fault = FaultFrom(status);
    release_all();
    return fail(fault, failed_program);
  };
  // [wall] Each run within timing::TimedRunBoundSeconds of the longest so
  // far: a kernel that hangs only on the timed shape is cut there.
  timing::TimedRunBound run_bound;
  // Runs `run(its deadline)`; a timeout that its bound, not the timing's
  // deadline, caused says so.
  auto bounded_run = [&](auto&& run) -> absl::Status {
    absl::Status status = run(run_bound.Start(deadline));
    if (status.ok()) {
      run_bound.Finish();
    } else if (std::optional<std::string> cut = run_bound.CutMessage();
               cut && FaultStage(status) == "timeout") {
      return MakeFault("timeout", *cut);
    }
    return status;
  };
  // Warm-up: module load, instruction caches, TLBs, clocks ramping up.
  // Rounds are numbered from the first warm-up on: every round has inputs of
  // its own, generated afresh on the device (data::TimedInputSeed), and
  // every program its own. All share this context, so one program could leave a result
  // where another finds it (past a buffer's guard in the driver's pool, in
  // local memory): computed on inputs the other was not given, it fails the
  // other's check.
  //
  // Besides the last round's, the outputs checked per input set are those of
  // `draws` rounds drawn at random among every round run on it, each by a
  // reservoir of its own (the k-th round on a set replaces a draw's choice
  // with probability 1/k; its stash is copied into that draw's kept copy,
  // KeepStash): a kernel that knows when timing ends (the time cap, read
  // from %globaltimer) could otherwise skip the work in every round but the
  // last, and with one draw a kernel honest in half of its runs passed 1
  // time in 4 on 2 sets (h^(d s) with d draws on s sets; the CPU backend's
  // red-team figures: evaluator/cpu/README.md). The draws come from the
  // OS, in this process. chosen_round[s][d]: the round draw d chose on s.
  std::vector<std::vector<uint64_t>> chosen_round(
      static_cast<size_t>(sets), std::vector<uint64_t>(static_cast<size_t>(draws), 0));
  std::vector<uint64_t> last_round(static_cast<size_t>(sets), 0);
  std::vector<uint64_t> rounds_on_set(static_cast<size_t>(sets), 0);
  // The draws that chose `round` (on set s).
  auto draw_check = [&](int s, uint64_t round) {
    last_round[static_cast<size_t>(s)] = round;
    const uint64_t k = ++rounds_on_set[static_cast<size_t>(s)];
    std::vector<int> chose;
    for (int d = 0; d < draws; ++d) {
      if (DrawKey() % k != 0) continue;
      chosen_round[static_cast<size_t>(s)][static_cast<size_t>(d)] = round;
      chose.push_back(d);
    }
    return chose;
  };
  // The kept copies of set s for the draws that chose its round, made once
  // the whole round has run: made after each program's run, the copy of
  // the reference's outputs in a drawn round came before the candidates'
  // runs, and a candidate that watched the reference's kept buffer (or the
  // gap the copies add) knew which rounds are checked before it ran. Each
  // stash holds until its program's next run on the set.
  auto keep_drawn = [&](int s, const std::vector<int>& chose) -> absl::Status {
    for (const int d : chose) {
      for (int p = 0; p < program_count; ++p) {
        failed_program = p;
        if (absl::Status kept = KeepStash(buffers[p][s], d); !kept.ok()) return kept;
      }
    }
    return absl::OkStatus();
  };
  for (uint32_t w = 0; w < config.warmup_runs(); ++w) {
    const int s = static_cast<int>(w % sets);
    const std::vector<int> check = draw_check(s, w);
    for (int p = 0; p < program_count; ++p) {
      failed_program = p;
      absl::Status status = bounded_run([&](absl::Time run_deadline) {
        return RunUntimed(programs[p], request.programs(p).plan(), buffers[p][s],
                          request.input_seeds(s), w, p, run_deadline);
      });
      if (!status.ok()) return program_failed(status);
    }
    if (absl::Status kept = keep_drawn(s, check); !kept.ok()) {
      return program_failed(OwnWorkFailed(kept, "copy of a drawn run's outputs"));
    }
  }

  // Samples, interleaved A B A B ... so that drifts hit every program alike;
  // input sets take turns, each round on inputs generated for it.
  const timing::StoppingRule rule(config);
  const double nominal_mhz = properties_.sm_clock_mhz;
  std::vector<std::vector<double>> raw(program_count), clocks(program_count);
  // Per sample: the stream hold gave up before the host released it, so the
  // plan's first launches may have waited on the host (launch latency in the
  // sample, which then overstates the time).
  std::vector<std::vector<bool>> hold_timed_out(program_count);
  std::vector<int> reports_overwritten(program_count, 0);
  std::vector<double> all_clocks;
  // The samples that count: a throttled clock reading drops the sample it
  // preceded and the next of every other program, and each program's
  // samples whose hold timed out go, unless most would
  // (timing::FindThrottledSamples, timing::KeepSamples).
  auto throttled_samples = [&] { return timing::FindThrottledSamples(clocks, nominal_mhz); };
  auto kept = [&](int p, const timing::ThrottledSamples& throttled) {
    return timing::KeepSamples(raw[p], throttled.dropped[static_cast<size_t>(p)],
                               hold_timed_out[p]);
  };
  // One round on input set round % sets: every program once, in order. All
  // programs share one context, so a candidate that finds another program's
  // memory could copy a result computed on the very inputs it was given
  // (this round's). So right after its sample each program's
  // outputs go to its stash under fresh pads (keyed_mix.h) and are poisoned,
  // and zeros take the place of its device globals, which its next run
  // finds as loaded (ClearAfterRun, RestoreGlobals); the stash of the last run
  // on each set is what is checked. Every round does the same, so no round
  // looks checked to a program that reads the clock between its launches.
  auto time_round = [&](uint64_t round) -> absl::Status {
    const int s = static_cast<int>(round % sets);
    const std::vector<int> check = draw_check(s, config.warmup_runs() + round);
    for (int p = 0; p < program_count; ++p) {
      failed_program = p;
      BufferSet& set = buffers[p][s];
      absl::Status prepared =
          GenerateInputs(set, request.input_seeds(s), config.warmup_runs() + round, p);
      if (prepared.ok()) prepared = RestoreGlobals(programs[p]);
      if (!prepared.ok()) return OwnWorkFailed(prepared, "preparation of a run (inputs, globals)");
      absl::StatusOr<Sample> sample;
      if (absl::Status ran = bounded_run([&](absl::Time run_deadline) {
            sample = TimeOnce(programs[p], request.programs(p).plan(), set, config.flush_l2(),
                              run_deadline);
            return sample.status();
          });
          !ran.ok()) {
        return ran;
      }
      raw[p].push_back(sample->microseconds);
      clocks[p].push_back(sample->clock_mhz);
      hold_timed_out[p].push_back(sample->hold_timed_out);
      reports_overwritten[p] += sample->report_overwritten;
      if (sample->clock_mhz > 0) all_clocks.push_back(sample->clock_mhz);
      if (absl::Status cleared = ClearAfterRun(programs[p], set); !cleared.ok()) {
        return OwnWorkFailed(cleared, "clean-up after a run (stashes, poison)");
      }
    }
    return OwnWorkFailed(keep_drawn(s, check), "copy of a drawn run's outputs");
  };
  const absl::Time start = absl::Now();
  // Checking the rule sorts every program's samples: check at geometrically
  // spaced rounds (every ~6 %) so that long runs stay O(n log n) overall.
  uint64_t next_check = 0;
  uint64_t rounds_run = 0;
  for (uint64_t round = 0;; ++round) {
    if (absl::Status status = time_round(round); !status.ok()) return program_failed(status);
    rounds_run = round + 1;
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    if (rule.TimedOut(elapsed)) break;
    if (absl::Now() >= deadline) {
      release_all();
      return fail(MakeFault("timeout", "timing did not finish before the deadline"), 0);
    }
    if (round + 1 < static_cast<uint64_t>(sets) || round < next_check) continue;
    next_check = round + 1 + round / 16;
    bool all_stop = true;
    const timing::ThrottledSamples throttled = throttled_samples();
    for (int p = 0; p < program_count && all_stop; ++p) {
      all_stop = rule.ShouldStop(kept(p, throttled).samples_us, elapsed);
    }
    if (all_stop) break;
  }
  // The last stash and poison kernels are still queued on our stream, and
  // Collect reads with cuMemcpyDtoH, on the legacy stream, which a
  // non-blocking stream does not wait for: let them finish first.
  if (absl::Status status = WaitFor(nullptr, deadline); !status.ok()) {
    return program_failed(status);
  }
  // The outputs of the last run and of the drawn run on each input set, for
  // checking: of the sets that ran at all (the time cap may end timing
  // before every set had a round; warm-up runs count, their stashes are as
  // good).
  const int ran = static_cast<int>(std::min<uint64_t>(
      static_cast<uint64_t>(sets), std::max<uint64_t>(rounds_run, config.warmup_runs())));
  if (request.return_outputs()) {
    // Every copy the reply would hold: each program's last and drawn runs,
    // and the reference's on each candidate's inputs.
    const uint64_t copies = static_cast<uint64_t>(ran) * static_cast<uint64_t>(1 + draws) *
                            static_cast<uint64_t>(2 * program_count - 1);
    if (copies * reference_output_bytes > kMaxReturnedOutputBytes) {
      release_all();
      return absl::InvalidArgumentError(
          absl::StrCat("return_outputs: ", copies, " copies of ", reference_output_bytes,
                       " bytes of outputs exceed the limit of ", kMaxReturnedOutputBytes,
                       " bytes of outputs in one reply (the outputs are checked here without it)"));
    }
  }
  const timing::ThrottledSamples throttled_readings = throttled_samples();
  const bool throttled = throttled_readings.throttled > 0;
  if (throttled_readings.kept_all) {
    outcome.notes.push_back(absl::StrCat(
        throttled_readings.throttled, " of ", throttled_readings.rounds * program_count,
        " clock readings throttled, too many to drop their samples: every sample kept"));
  } else if (throttled) {
    outcome.notes.push_back(absl::StrCat(
        throttled_readings.throttled, " of ", throttled_readings.rounds * program_count,
        " clock readings below ", timing::kThrottleFraction * 100, " % of ",
        absl::SixDigits(throttled_readings.reference_mhz),
        " MHz (throttled): each dropped the sample it preceded and the next sample of every "
        "other program"));
  }
  if (nominal_mhz > 0 && timing::IsThrottled(throttled_readings.reference_mhz, nominal_mhz,
                                             timing::kThrottleFraction)) {
    // Not throttling within the run: every sample ran at most this fast, so
    // the programs compare fairly, but times (and roofline fractions) are
    // this clock's, not the datasheet's.
    outcome.notes.push_back(absl::StrCat(
        "the SM clock while timing was at most ", absl::SixDigits(throttled_readings.reference_mhz),
        " MHz, under ", timing::kThrottleFraction * 100, " % of the device's maximum ",
        absl::SixDigits(nominal_mhz),
        " MHz (clocks locked or capped?): samples judged against the highest reading"));
  }
  bool converged = true;
  for (int p = 0; p < program_count; ++p) {
    internal::ProgramTiming* timing = result.add_programs();
    const timing::KeptSamples counted = kept(p, throttled_readings);
    const std::vector<double>& samples = counted.samples_us;
    converged = converged && rule.Converged(samples);
    timing->mutable_samples_us()->Assign(samples.begin(), samples.end());
    if (reports_overwritten[p] > 0) {
      outcome.notes.push_back(
          absl::StrCat(programs[p].label, ": the stream hold's report was overwritten in ",
                       reports_overwritten[p], " samples (kept; their clock is unknown)"));
    }
    if (counted.kept_all) {
      outcome.notes.push_back(absl::StrCat(programs[p].label, ": most samples (", counted.late,
                                           ") had a stream hold that timed out: each kept"));
    } else if (counted.late > 0) {
      outcome.notes.push_back(absl::StrCat(programs[p].label, ": ", counted.late,
                                           " samples whose stream hold timed out dropped"));
    }
    // The last run on each set: its guards and inputs. A candidate's
    // outputs are read again below, to check them against the reference's.
    for (int s = 0; s < ran; ++s) {
      failed_program = p;
      absl::StatusOr<internal::CaseResult> outputs = Collect(buffers[p][s]);
      if (!outputs.ok()) {
        result.clear_programs();
        return program_failed(outputs.status());
      }
      internal::TimedRunCheck* checked = timing->add_checked_runs();
      checked->set_input_set(static_cast<uint32_t>(s));
      checked->set_modified_input(outputs->modified_input());
      if (request.return_outputs()) *timing->add_last_outputs() = *std::move(outputs);
    }
  }
  // After sampling, running out of time is no program's doing (the
  // worker's copies, the reference's runs on the candidates' inputs): an
  // error, no verdict, rather than a timeout charged to a program.
  auto checking_failed =
      [&](const absl::Status& status) -> absl::StatusOr<WorkerOutcome<internal::TimingResult>> {
    result.clear_programs();
    if (FaultStage(status) == "timeout") {
      release_all();
      return absl::DeadlineExceededError(
          "timing ran out of time after sampling, while checking the timed outputs: the time "
          "limit is too short for this problem");
    }
    return program_failed(status);
  };
  // Restores draw d's kept copy of set s of program p into its stash and
  // reads it (Collect reads the stash).
  auto collect_drawn = [&](int p, int s, int d) -> absl::StatusOr<internal::CaseResult> {
    failed_program = p;
    absl::Status status = KeepStash(buffers[p][s], d, /*restore=*/true);
    if (status.ok()) status = WaitFor(nullptr, deadline);
    if (!status.ok()) return status;
    return Collect(buffers[p][s], /*stashed_outputs_only=*/true);
  };
  // The reference's drawn runs: nothing is checked against them (each
  // candidate's inputs are its own), so they are read only to be sent back.
  for (int s = 0; s < ran && request.return_outputs(); ++s) {
    for (int d = 0; d < draws; ++d) {
      absl::StatusOr<internal::CaseResult> outputs = collect_drawn(0, s, d);
      if (!outputs.ok()) return checking_failed(outputs.status());
      *result.mutable_programs(0)->add_drawn_outputs() = *std::move(outputs);
    }
  }
  // Each candidate's last and drawn runs on a set saw inputs of its own:
  // they are checked here against the reference's outputs on those very
  // inputs, from its runs after every candidate has run for the last time
  // (nothing a candidate does can reach them), one per round checked. Only
  // the checks go back: the outputs themselves, ~60 copies for one
  // candidate, came to more than a reply can hold on most problems' timed
  // shapes (red team rt10 #1). At most two copies are held here at a time.
  for (int p = 1; p < program_count; ++p) {
    internal::ProgramTiming* timing = result.mutable_programs(p);
    // Set-major, as TimingResult.drawn_outputs.
    std::vector<internal::TimedRunCheck> drawn_checks(static_cast<size_t>(ran * draws));
    std::vector<internal::CaseResult> drawn_outputs, reference_drawn_outputs;
    if (request.return_outputs()) {
      drawn_outputs.resize(drawn_checks.size());
      reference_drawn_outputs.resize(drawn_checks.size());
    }
    for (int s = 0; s < ran; ++s) {
      const std::vector<uint64_t>& chosen = chosen_round[static_cast<size_t>(s)];
      const uint64_t last = last_round[static_cast<size_t>(s)];
      // The last round first: its outputs are in the stash until a drawn
      // run's are restored there.
      std::vector<uint64_t> rounds = {last};
      for (const uint64_t round : chosen) {
        if (std::find(rounds.begin(), rounds.end(), round) == rounds.end()) {
          rounds.push_back(round);
        }
      }
      for (const uint64_t round : rounds) {
        failed_program = 0;
        BufferSet& set = buffers[0][static_cast<size_t>(s)];
        absl::Status status = RunUntimed(programs[0], request.programs(0).plan(), set,
                                         request.input_seeds(s), round, p, deadline);
        // ClearAfterRun's stash kernels are queued; Collect reads on the
        // legacy stream.
        if (status.ok()) status = WaitFor(nullptr, deadline);
        absl::StatusOr<internal::CaseResult> expected =
            status.ok() ? Collect(set) : absl::StatusOr<internal::CaseResult>(status);
        if (!expected.ok()) return checking_failed(expected.status());
        // This candidate's runs of that round on the set: -1 its last.
        for (int d = -1; d < draws; ++d) {
          const bool drawn = d >= 0;
          if ((drawn ? chosen[static_cast<size_t>(d)] : last) != round) continue;
          failed_program = p;
          absl::StatusOr<internal::CaseResult> got =
              drawn ? collect_drawn(p, s, d)
                    : Collect(buffers[p][static_cast<size_t>(s)], /*stashed_outputs_only=*/true);
          if (!got.ok()) return checking_failed(got.status());
          absl::StatusOr<std::vector<v1::OutputCheck>> checks =
              data::CompareOutputs(request.check_outputs(), *expected, *got);
          if (!checks.ok()) {
            result.clear_programs();
            release_all();
            return checks.status();
          }
          const auto slot =
              static_cast<size_t>(s) * static_cast<size_t>(draws) + static_cast<size_t>(d);
          internal::TimedRunCheck* checked =
              drawn ? &drawn_checks[slot] : timing->mutable_checked_runs(s);
          checked->set_input_set(static_cast<uint32_t>(s));
          checked->set_drawn(drawn);
          checked->set_reference_modified_input(expected->modified_input());
          for (v1::OutputCheck& check : *checks) *checked->add_outputs() = std::move(check);
          if (!request.return_outputs()) continue;
          if (drawn) {
            drawn_outputs[slot] = *std::move(got);
            reference_drawn_outputs[slot] = *expected;
          } else {
            *timing->add_reference_outputs() = *expected;
          }
        }
      }
    }
    for (internal::TimedRunCheck& checked : drawn_checks) {
      *timing->add_checked_runs() = std::move(checked);
    }
    for (internal::CaseResult& outputs : drawn_outputs) {
      *timing->add_drawn_outputs() = std::move(outputs);
    }
    for (internal::CaseResult& outputs : reference_drawn_outputs) {
      *timing->add_reference_drawn_outputs() = std::move(outputs);
    }
  }
  result.set_sm_clock_mhz(all_clocks.empty() ? nominal_mhz : MedianOf(all_clocks));
  result.set_sm_clock_min_mhz(
      all_clocks.empty() ? nominal_mhz : *std::min_element(all_clocks.begin(), all_clocks.end()));
  result.set_throttled(throttled);
  result.set_converged(converged);
  release_all();
  outcome.worker_exiting = ContextLost();
  return outcome;
}

// ---------------------------------------------------------------- calibration

absl::StatusOr<double> CudaWorker::TimeHeldLaunch(CUfunction kernel, unsigned blocks,
                                                  unsigned threads, void** args) {
  // Behind the stream hold, as a timed sample (TimeOnce): recorded on an idle
  // stream, the start event completed before the host's launch call reached
  // the GPU, and the sample held that latency (a few us: 1.5-3 % of the
  // ~350 us copy on an H200, more where a small L2 leaves the 64 MiB floor).
  auto* control = static_cast<uint8_t*>(control_.data());
  volatile int* release = reinterpret_cast<volatile int*>(control + kReleaseOffset);
  *release = 0;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  CUdeviceptr release_ptr = control_.device_ptr() + kReleaseOffset;
  CUdeviceptr report_ptr = control_.device_ptr() + kHoldReportOffset;
  uint64_t min_ns = options_.hold_min_ns, timeout_ns = options_.hold_timeout_ns;
  // No program runs here: the report's seal is not checked, any keys do.
  uint64_t keys[2] = {0, 0};
  void* hold_args[] = {&release_ptr, &min_ns, &timeout_ns, &report_ptr, &keys[0], &keys[1]};
  KE_CU_RETURN_IF_ERROR(api_.cuLaunchKernel(hold_kernel_.handle, 1, 1, 1, 1, 1, 1, 0, stream_.get(),
                                            hold_args, nullptr));
  absl::Status status = start_.Record(stream_.get());
  if (status.ok()) {
    const CUresult launched =
        api_.cuLaunchKernel(kernel, blocks, 1, 1, threads, 1, 1, 0, stream_.get(), args, nullptr);
    if (launched != CUDA_SUCCESS) status = CuError(launched, "cuLaunchKernel", __FILE__, __LINE__);
  }
  if (status.ok()) status = stop_.Record(stream_.get());
  std::atomic_thread_fence(std::memory_order_seq_cst);
  *release = 1;  // always: the hold must not keep the stream after a failure
  if (!status.ok()) return status;
  KE_CU_RETURN_IF_ERROR(api_.cuEventSynchronize(stop_.get()));
  absl::StatusOr<float> ms = Event::ElapsedMilliseconds(api_, start_, stop_);
  if (!ms.ok()) return ms.status();
  return *ms * 1e-3;
}

absl::StatusOr<double> CudaWorker::MeasureBandwidth(uint64_t bytes) {
  bytes = std::max<uint64_t>(RoundUp(bytes, 16), 16);
  absl::StatusOr<DeviceBuffer> src = DeviceBuffer::Allocate(api_, bytes);
  if (!src.ok()) return src.status();
  absl::StatusOr<DeviceBuffer> dst = DeviceBuffer::Allocate(api_, bytes);
  if (!dst.ok()) return dst.status();
  if (absl::Status s = Fill(src->ptr(), bytes, 0x3F8000003F800000ull); !s.ok()) return s;
  CUdeviceptr src_ptr = src->ptr(), dst_ptr = dst->ptr();
  uint64_t n16 = bytes / 16;
  void* args[] = {&src_ptr, &dst_ptr, &n16};
  const unsigned blocks = static_cast<unsigned>(properties_.sm_count) * 4;
  std::vector<double> seconds;
  for (int i = 0; i < 12; ++i) {
    absl::StatusOr<double> took = TimeHeldLaunch(copy_kernel_.handle, blocks, 512, args);
    if (!took.ok()) return took.status();
    if (i >= 2) seconds.push_back(*took);  // the first two warm up
  }
  return 2.0 * static_cast<double>(bytes) / MedianOf(seconds);
}

absl::StatusOr<double> CudaWorker::MeasureFp32Throughput() {
  constexpr unsigned kThreads = 256;
  const unsigned blocks = static_cast<unsigned>(properties_.sm_count) * 16;
  int iterations = 1 << 14;
  absl::StatusOr<DeviceBuffer> out =
      DeviceBuffer::Allocate(api_, uint64_t{blocks} * kThreads * sizeof(float));
  if (!out.ok()) return out.status();
  CUdeviceptr out_ptr = out->ptr();
  float seed = 1.0f;
  void* args[] = {&out_ptr, &iterations, &seed};
  std::vector<double> seconds;
  for (int i = 0; i < 7; ++i) {
    absl::StatusOr<double> took = TimeHeldLaunch(fma_kernel_.handle, blocks, kThreads, args);
    if (!took.ok()) return took.status();
    if (i >= 2) seconds.push_back(*took);
  }
  const double flops = 2.0 * 8 * iterations * static_cast<double>(blocks) * kThreads;
  return flops / MedianOf(seconds);
}

}  // namespace kerneleval::cuda
