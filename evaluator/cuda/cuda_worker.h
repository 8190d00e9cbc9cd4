// The GPU side of the CUDA backend: runs inside `kerneleval-worker cuda
// --device N`, one process per device, and owns that device's primary
// context. Untrusted kernels run here; a sticky error or a hang ends the
// process (the backend starts a fresh one), never the engine.
//
// Run (correctness), per case:
//   1. allocate every buffer with a guard region before and after it;
//      fill the whole allocation with the guard pattern;
//   2. inputs: GenerateInput(spec, case seed) uploaded (a host copy kept);
//      outputs and scratch: the dtype's poison pattern (evaluator/data/poison.h);
//   3. launch the plan (limits checked, dynamic shared memory opted in, args
//      packed), wait until the request's deadline;
//   4. copy outputs back; inputs compared with the host copy; guards checked;
//   5. overwrite every buffer with zeros and free it, and the module's
//      device globals before it is unloaded, so nothing a program computed
//      is left for the next one to find.
// Time: see evaluator/cuda/README.md ("Measurement procedure").
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "evaluator/cuda/device.h"
#include "evaluator/cuda/driver.h"
#include "evaluator/cuda/resources.h"
#include "evaluator/data/prng.h"
#include "kerneleval/internal/worker.pb.h"
#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::cuda {

struct CudaWorkerOptions {
  int device = 0;
  // Measure copy bandwidth and FP32 FMA throughput at start-up (DeviceInfo.measured_*).
  bool calibrate = false;
  // Device printf buffer [bytes]: a printf flood fills it and the rest is dropped.
  uint64_t printf_fifo_bytes = uint64_t{1} << 20;
  // Device malloc() heap [bytes]: in-kernel allocation beyond it returns NULL.
  uint64_t malloc_heap_bytes = uint64_t{8} << 20;
  // Guard region before and after every buffer [bytes]; a multiple of 256 so
  // that the buffer the kernel sees keeps cuMemAlloc's alignment.
  uint64_t guard_bytes = 4096;
  // Minimum time the stream-holding kernel holds [ns]: long enough for its
  // clock measurement (cycles / ns) to be accurate to ~2 % per sample even
  // where %globaltimer ticks in 1 us steps (documented only as a ns timer);
  // the median over samples is steadier. Outside the timed window.
  uint64_t hold_min_ns = 50'000;
  // The hold gives up after this long [ns] (a full launch queue must not deadlock).
  uint64_t hold_timeout_ns = 200'000'000;
};

// What a Run/Time call produced: the result, and whether the context is
// unusable so the process must exit after replying.
template <typename Result>
struct WorkerOutcome {
  Result result;
  bool worker_exiting = false;
  std::vector<std::string> notes;
};

class CudaWorker {
 public:
  // Loads the driver, retains the device's primary context, sets the limits
  // (printf FIFO, malloc heap, persisting L2 = 0), loads the auxiliary kernels
  // and, if asked, calibrates. FAILED_PRECONDITION without a driver or device.
  static absl::StatusOr<std::unique_ptr<CudaWorker>> Create(const CudaWorkerOptions& options);
  CudaWorker(const CudaWorker&) = delete;
  CudaWorker& operator=(const CudaWorker&) = delete;
  CudaWorker(CudaWorker&&) = delete;
  CudaWorker& operator=(CudaWorker&&) = delete;
  ~CudaWorker();

  [[nodiscard]] const v1::DeviceInfo& device_info() const { return device_info_; }
  [[nodiscard]] const DeviceProperties& properties() const { return properties_; }

  // Non-OK only when nothing could be judged (e.g. out of device memory for
  // the problem's own buffers); a fault of the program is result.failure.
  absl::StatusOr<WorkerOutcome<internal::RunResult>> Run(const internal::RunRequest& request);
  absl::StatusOr<WorkerOutcome<internal::TimingResult>> Time(
      const internal::TimingRequest& request);
  // After a request: the context's per-thread stack back to its start-up
  // size. The driver grows it for a kernel with a larger frame (a
  // reservation of frame x resident threads on every SM: 200 KiB x 2048 x
  // 132 is ~54 GB of an H100, by that rule) and never shrinks it, so one
  // request's kernel would hold it for every later request (free memory,
  // input-set sizing). Non-OK: the context is in doubt (the worker leaves).
  absl::Status GiveBackStack();

  // Calibration. Device-to-device copy of `bytes` with the worker's 16-byte
  // copy kernel, median of 10 [bytes/s, read + written]; FP32 FMA chains on
  // every SM, median of 5 [FLOP/s].
  absl::StatusOr<double> MeasureBandwidth(uint64_t bytes);
  absl::StatusOr<double> MeasureFp32Throughput();

 private:
  struct LoadedProgram;
  struct Buffer;
  struct BufferSet;
  struct Sample;

  CudaWorker(const DriverApi& api, CudaWorkerOptions options);
  absl::Status Initialise();

  absl::StatusOr<LoadedProgram> LoadProgram(const internal::Program& program,
                                            std::vector<std::string>* notes);
  // Finds the program's device globals (CompileResult.device_globals) in
  // its module (a name the module lacks: a note).
  absl::Status FindGlobals(const internal::Program& program, LoadedProgram* loaded,
                           std::vector<std::string>* notes);
  // On the stream. Every run of a timing request, warm-up or timed, starts
  // from the program's device globals as loaded: a plan whose first run
  // builds a `__device__` table and whose later runs only read it
  // (sweep 6, x17) had the build in no timed sample. A Run's cases
  // keep their state (a counter a kernel does not reset fails its second
  // case, as when called again in a real program).
  // KeepLoadTimeGlobals: copies them into the program's image under pads
  // from fresh keys (Time keeps every program's right after loading, before
  // any run, and before sizing its input sets); a "runtime" fault when the
  // image does not fit. RestoreGlobals: the image, pads off, back into the
  // globals before each run. HideGlobals: zeros in their place after each
  // run, so another program timed in the same context finds nothing this
  // one computed.
  absl::Status KeepLoadTimeGlobals(LoadedProgram& program);
  absl::Status RestoreGlobals(const LoadedProgram& program);
  absl::Status HideGlobals(const LoadedProgram& program);
  // ke_stash_xor from the image to `to` (the image itself: pads on; the
  // staging buffer: pads off, the pad being its own inverse).
  absl::Status XorGlobalsImage(const LoadedProgram& program, CUdeviceptr to);
  // Zeros every device global and waits: before the module is unloaded.
  absl::Status ZeroGlobals(const LoadedProgram& program);
  // Queues ke_clear_shared on the stream: every SM's shared memory filled
  // with a pattern drawn per call (data/shared_fill.h: NaN in every float
  // type, a drawn int), so the next program's blocks find nothing this
  // one's left there, nor a value they could take as known. After
  // every run of a program (correctness and timing, outside the timed
  // window). A no-op when it could not be set up (a note at start-up).
  absl::Status ClearSharedMemory();
  // A correctness set (`inputs` given): each input generated from `seed`
  // (kept in `inputs` for the next Run) and uploaded. A timing set
  // (`inputs` null): its inputs are generated on the device before every
  // run (GenerateInputs), and its outputs get stashes.
  // `draws`: the kept copies of each timed output (KeepStash). Outputs and
  // scratch start as PoisonOutput leaves them.
  absl::StatusOr<BufferSet> AllocateBuffers(const internal::ResolvedPlan& plan, uint64_t seed,
                                            data::GeneratedInputs* inputs, int draws = 0);
  // Queues ke_generate_input on the stream: `buffer`'s elements generated
  // from `seed` into `out` (its payload, or input_check_).
  absl::Status LaunchGenerate(CUdeviceptr out, const Buffer& buffer, uint64_t seed);
  // Queues on the stream the generation of every input of a timing set for
  // timed round `round` as program `program` of the request sees it
  // (data::TimedInputSeed: every round's values new, each program's its own).
  absl::Status GenerateInputs(BufferSet& set, uint64_t set_seed, uint64_t round, int program);
  // One untimed run on a timing set, as a timed run but without the hold
  // and events: inputs generated for (`round`, `inputs_of_program`), globals
  // back, outputs poisoned, the plan, ClearAfterRun; waits for the stream.
  // Warm-up runs, and the reference's runs on each candidate's inputs.
  absl::Status RunUntimed(LoadedProgram& program, const internal::ResolvedPlan& plan,
                          BufferSet& set, uint64_t set_seed, uint64_t round, int inputs_of_program,
                          absl::Time deadline);
  absl::Status PoisonWritable(const BufferSet& buffers);
  absl::Status LaunchPlan(LoadedProgram& program, const internal::ResolvedPlan& plan,
                          const BufferSet& buffers);
  // Polls `event` (nullptr: the stream) until done, a CUDA error (a fault,
  // context lost if sticky) or `deadline` (a "timeout" fault, context lost).
  absl::Status WaitFor(CUevent event, absl::Time deadline);
  // Reads a set back: guards, inputs (modified?), outputs (from the stash
  // while timing). `stashed_outputs_only`: only the outputs' stashes (the
  // drawn run's, once the last run's read checked guards and inputs).
  absl::StatusOr<internal::CaseResult> Collect(const BufferSet& buffers,
                                               bool stashed_outputs_only = false);
  // Copies each output of a timing set into its stash under fresh pads
  // (ke_stash_xor), on the stream.
  absl::Status StashOutputs(BufferSet& set);
  // Queues the copy of each output's stash (and its keys) into its kept copy
  // for `draw`: the run that draw chose for the check. `restore`: the copy
  // back into the stash, for Collect.
  absl::Status KeepStash(BufferSet& set, int draw, bool restore = false);
  // After every timed or warm-up run, on the stream: StashOutputs, outputs
  // and scratch poisoned, HideGlobals.
  absl::Status ClearAfterRun(LoadedProgram& program, BufferSet& set);
  // Queues the L2 flush before a timed sample: cuMemsetD32Async over
  // l2_flush_, then ke_read_flush reads it all back.
  absl::Status FlushL2();
  uint64_t DrawKey();  // 64 bits from key_source_
  absl::Status Fill(CUdeviceptr ptr, uint64_t bytes, uint64_t pattern);
  // Queues the poison of `buffer`'s payload for `integer_draw` (a draw per
  // run): i32 and i64 elements mixed with small leftovers as
  // data::FillLeftovers writes them (ke_fill_leftovers), every other dtype
  // the uniform poison (ke_fill_pattern).
  absl::Status PoisonOutput(const Buffer& buffer, uint64_t integer_draw);
  // Launches one of the worker's grid-stride kernels over `items` on the
  // stream, 256 threads a block.
  absl::Status LaunchGridStride(const KernelFunction& kernel, uint64_t items, void** args);
  absl::StatusOr<Sample> TimeOnce(LoadedProgram& program, const internal::ResolvedPlan& plan,
                                  const BufferSet& buffers, bool flush_l2, absl::Time deadline);
  // Calibration: one launch of `kernel` (`blocks` x `threads`, 1-D) between
  // the start and stop events, queued behind the stream hold [seconds].
  absl::StatusOr<double> TimeHeldLaunch(CUfunction kernel, unsigned blocks, unsigned threads,
                                        void** args);
  // A CUDA error seen while a program's work was in flight, as a fault.
  absl::Status FaultFrom(const absl::Status& status);
  // A CUDA error of the worker's own work around a timed or warm-up run
  // (`what`: its inputs, poison, stashes, the L2 flush, the stream hold), as
  // UNAVAILABLE rather than a fault of the program run next or last: a
  // program's faults surface at its own launches and at the wait for it,
  // which every run has before the worker queues more (so a sticky error
  // met at the worker's own calls is its own work's). The engine then times
  // again, alone, against the reference's twin, before it blames a kernel.
  // A sticky error still loses the context (the worker exits after
  // answering); a status that is already a fault (a timeout) is returned as
  // it is.
  absl::Status OwnWorkFailed(const absl::Status& status, absl::string_view what);

  const DriverApi& api_;
  CudaWorkerOptions options_;
  DeviceProperties properties_;
  v1::DeviceInfo device_info_;
  std::unique_ptr<PrimaryContext> context_;
  Stream stream_;
  std::unique_ptr<Module> aux_module_;
  KernelFunction hold_kernel_;
  KernelFunction fill_kernel_;
  KernelFunction leftovers_kernel_;
  KernelFunction copy_kernel_;
  KernelFunction read_flush_kernel_;
  KernelFunction fma_kernel_;
  KernelFunction stash_kernel_;
  KernelFunction clear_shared_kernel_;
  KernelFunction generate_kernel_;
  uint32_t clear_shared_bytes_ = 0;  // dynamic shared memory it fills per block; 0: off
  std::mt19937_64 shared_fill_chooser_{std::random_device{}()};  // ke_clear_shared's seeds
  std::mt19937_64 poison_chooser_{std::random_device{}()};       // integer poison, per run
  // The persisting-L2 call the device refused at start-up, and how (empty:
  // none, or a refusal cuda.h documents).
  std::string persisting_l2_refusal_;
  size_t initial_stack_bytes_ = 0;  // [bytes per thread] CU_LIMIT_STACK_SIZE at start-up
  PinnedHostBuffer control_;        // [0] release flag (int); [64..96) hold kernel's report
  // Where the keys of keyed_mix.h come from: the OS (a seeded generator's
  // 32-bit seed could be searched for from what a program can read).
  std::random_device key_source_;
  DeviceBuffer l2_flush_;    // 2x L2, memset then read before each timed sample
  DeviceBuffer flush_sink_;  // where ke_read_flush would write (never does)
  // Correctness inputs, kept across Run calls: the reference and every
  // candidate of a request are run on the same seeds, one after another
  // (a group of 64 generated them 65 times on the host).
  data::GeneratedInputs correctness_inputs_;
  // Timing: where Collect generates a timed round's inputs again (as large
  // as the request's largest input), to compare with what a program left.
  DeviceBuffer input_check_;
  Event start_;
  Event stop_;
  uint32_t flush_value_ = 0;  // what the next L2 flush writes
};

// The fault statuses Run/Time use internally; exposed for tests.
// A fault is ABORTED with the stage ("runtime" | "timeout") as a payload.
absl::Status MakeFault(absl::string_view stage, absl::string_view message);
std::optional<std::string> FaultStage(const absl::Status& status);
// A fault, or a CUDA error seen while a program's work was in flight (both
// are the program's doing); anything else is the request's or the machine's.
bool IsProgramFault(const absl::Status& status);

// The 8-byte pattern that repeats a dtype's poison bits (poison.h; i32 and
// i64 from `integer_draw`) across a word: f32 0x7FC0DEAD ->
// 0x7FC0DEAD7FC0DEAD; f16 0x7E00 -> 0x7E007E007E007E00.
uint64_t PoisonWord(v1::DType dtype, uint64_t integer_draw);

// The guard regions' pattern; any byte that differs afterwards was written
// out of bounds.
inline constexpr uint64_t kGuardWord = 0xA5C35AE1D00DFEEDull;

// Byte `offset` (from the start of a region filled with Fill()) of `word`.
inline uint8_t PatternByte(uint64_t word, uint64_t offset) {
  return static_cast<uint8_t>(word >> (8 * (offset % 8)));
}

// `kerneleval-worker cuda` main: serves wire::WorkerRequest frames on `fd`.
int CudaWorkerMain(int fd, int argc, char** argv);

}  // namespace kerneleval::cuda
