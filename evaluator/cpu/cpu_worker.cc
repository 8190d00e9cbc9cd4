#include "evaluator/cpu/cpu_worker.h"

#include <fcntl.h>
#include <google/protobuf/any.pb.h>
#include <google/protobuf/wrappers.pb.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "evaluator/cpu/device_memory.h"
#include "evaluator/cpu/device_runtime.h"
#include "evaluator/cpu/host_compiler.h"
#include "evaluator/cpu/library_image.h"
#include "evaluator/cpu/remote_pages.h"
#include "evaluator/cpu/runner.h"
#include "evaluator/cpu/source_rewrite.h"
#include "evaluator/data/compare.h"
#include "evaluator/data/dtype.h"
#include "evaluator/data/poison.h"
#include "evaluator/data/prng.h"
#include "evaluator/process/framing.h"
#include "evaluator/timing/sampling.h"

namespace kerneleval::cpu {
namespace {

// Whether a case of thread schedule `kind` shows the races that a schedule
// of role `role` (DrawThreadSchedules) is there to show.
bool Serves(ThreadScheduleKind kind, ThreadScheduleKind role) {
  return kind == role ||
         (kind == ThreadScheduleKind::kLanesReversedInWarp &&
          (role == ThreadScheduleKind::kForward || role == ThreadScheduleKind::kReverse));
}

// internal::Case::thread_schedule of the cases of `job` that leave it unset:
// a draw of their positions' schedules in which every shape, where the
// schedules go round, has one with store points (lost updates), one whose
// threads run forward (an in-place scan step reading a lower thread) and
// one whose threads run in reverse (reading a higher one); the lanes
// reversed in each warp count as both where the pure orders ran out, and a
// schedule whose small grids start quiet
// (kStorePointsQuietInSmallGrids) as store points where those ran out. A
// shuffle over all cases had left every forward schedule on shapes too
// small to show a race about 1 in 30 runs, and an in-place Hillis-Steele
// scan passed (ExploitTest.ScansChunkSumsInPlaceWithoutASecondBuffer).
// Which shape gets which schedules and which of its cases runs which are
// drawn, so that the case number a kernel can count in `__device__` state
// tells neither (sweep 10, a16).
void DrawThreadSchedules(internal::RunRequest& job, std::mt19937_64& draw) {
  // A shape's cases still to schedule, and the kinds of schedule given it.
  struct ShapeSlots {
    std::vector<uint32_t> slots;
    std::vector<ThreadScheduleKind> given;
    std::vector<uint32_t> cases;  // all of them, in order
  };
  std::vector<uint32_t> pool;
  std::map<uint32_t, ShapeSlots> by_shape;
  for (int c = 0; c < job.cases_size(); ++c) {
    if (job.cases(c).thread_schedule() != 0) continue;
    pool.push_back(static_cast<uint32_t>(c));
    ShapeSlots& shape = by_shape[job.cases(c).shape_index()];
    shape.slots.push_back(static_cast<uint32_t>(c));
    shape.cases.push_back(static_cast<uint32_t>(c));
  }
  std::vector<ShapeSlots*> shapes;
  for (auto& [index, shape] : by_shape) {
    std::shuffle(shape.slots.begin(), shape.slots.end(), draw);
    shapes.push_back(&shape);
  }
  std::shuffle(shapes.begin(), shapes.end(), draw);
  auto give = [&](ShapeSlots& shape, size_t pick) {
    const uint32_t schedule = pool[pick];
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(pick));
    shape.given.push_back(KindOfThreadSchedule(schedule));
    job.mutable_cases(static_cast<int>(shape.slots.back()))->set_thread_schedule(schedule + 1);
    shape.slots.pop_back();
  };
  // Roles in turn over every shape: a pure order before the lanes reversed,
  // which another shape may still need for both.
  for (const ThreadScheduleKind role :
       {ThreadScheduleKind::kStorePoints, ThreadScheduleKind::kForward,
        ThreadScheduleKind::kReverse}) {
    for (ShapeSlots* shape : shapes) {
      if (shape->slots.empty() ||
          std::any_of(shape->given.begin(), shape->given.end(),
                      [&](ThreadScheduleKind kind) { return Serves(kind, role); })) {
        continue;
      }
      // A shape's last slot for two roles: the order that serves both.
      const bool last_for_both = role == ThreadScheduleKind::kForward && shape->slots.size() == 1;
      const ThreadScheduleKind fallback = role == ThreadScheduleKind::kStorePoints
                                              ? ThreadScheduleKind::kStorePointsQuietInSmallGrids
                                              : ThreadScheduleKind::kLanesReversedInWarp;
      for (const ThreadScheduleKind wanted :
           {last_for_both ? fallback : role, last_for_both ? role : fallback}) {
        std::vector<size_t> candidates;
        for (size_t i = 0; i < pool.size(); ++i) {
          if (KindOfThreadSchedule(pool[i]) == wanted) candidates.push_back(i);
        }
        if (candidates.empty()) continue;
        give(*shape,
             candidates[std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(draw)]);
        break;
      }
    }
  }
  std::shuffle(pool.begin(), pool.end(), draw);
  for (ShapeSlots* shape : shapes) {
    while (!shape->slots.empty()) give(*shape, pool.size() - 1);
  }
  // A quiet schedule's draws follow the points the kernel's blocks had in
  // the shape's earlier cases without store points (SetCaseSchedule), so
  // a shape's first case trades a schedule with store points for one
  // without, drawn from the shape's others.
  auto store_points = [&](uint32_t c) {
    const ThreadScheduleKind kind =
        KindOfThreadSchedule(job.cases(static_cast<int>(c)).thread_schedule() - 1);
    return kind == ThreadScheduleKind::kStorePoints ||
           kind == ThreadScheduleKind::kStorePointsQuietInSmallGrids;
  };
  for (const auto& [index, shape] : by_shape) {
    const uint32_t first = shape.cases.front();
    if (!store_points(first)) continue;
    std::vector<uint32_t> others;
    for (const uint32_t c : shape.cases) {
      if (!store_points(c)) others.push_back(c);
    }
    if (others.empty()) continue;
    const uint32_t other =
        others[std::uniform_int_distribution<size_t>(0, others.size() - 1)(draw)];
    const uint32_t schedule = job.cases(static_cast<int>(first)).thread_schedule();
    job.mutable_cases(static_cast<int>(first))
        ->set_thread_schedule(job.cases(static_cast<int>(other)).thread_schedule());
    job.mutable_cases(static_cast<int>(other))->set_thread_schedule(schedule);
  }
}

// internal::Case::thread_schedule (DrawThreadSchedules) and block_schedule
// of every case of `job` that leaves them unset, drawn from the OS's
// randomness per run: each shape's cases take a shuffle of their
// positions' block orders, so that the case number does not tell the block
// order either (sweep 10, a15).
void DrawSchedules(internal::RunRequest& job) {
  std::mt19937_64 draw{std::random_device{}()};
  DrawThreadSchedules(job, draw);
  std::map<uint32_t, std::vector<uint32_t>> positions_by_shape;
  for (int c = 0; c < job.cases_size(); ++c) {
    const internal::Case& one = job.cases(c);
    if (one.block_schedule() == 0) {
      positions_by_shape[one.shape_index()].push_back(static_cast<uint32_t>(c));
    }
  }
  for (const auto& [shape, of_shape] : positions_by_shape) {
    std::vector<uint32_t> orders = of_shape;
    std::shuffle(orders.begin(), orders.end(), draw);
    for (size_t i = 0; i < of_shape.size(); ++i) {
      job.mutable_cases(static_cast<int>(of_shape[i]))->set_block_schedule(orders[i] + 1);
    }
  }
}

// [bytes] What a timed runner may hold besides its buffers (runtime, thread
// and fiber stacks, the device heap, the kernel's own data; an honest runner
// holds ~40 MiB in all): at most kTimedRunnerSlackBytes, and a group's
// runners kTimedGroupSlackBytes together, but never less than
// kTimedRunnerSlackFloorBytes each.
constexpr uint64_t kTimedRunnerSlackBytes = uint64_t{512} << 20;
constexpr uint64_t kTimedGroupSlackBytes = uint64_t{8} << 30;
constexpr uint64_t kTimedRunnerSlackFloorBytes = uint64_t{128} << 20;

// Timed runs whose outputs are checked per input set besides the last: each
// drawn at random (Time), fewer where the outputs would not fit the limit.
constexpr uint64_t kMaxDrawnRunsPerSet = 4;

std::string FromEnvOr(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

// ---- Requests.

// The kernel names of every launch of `plans`, sorted and unique: launcher i
// of the compiled library runs names[i].
template <class Plans>
std::vector<std::string> KernelNames(const Plans& plans) {
  std::set<std::string> names;
  for (const internal::ResolvedPlan* plan : plans) {
    for (const internal::ResolvedLaunch& launch : plan->launches()) names.insert(launch.kernel());
  }
  return {names.begin(), names.end()};
}

// Checks what the runner relies on; returns the plan's output bytes.
absl::StatusOr<uint64_t> ValidatePlan(const internal::ResolvedPlan& plan) {
  std::set<std::string> names;
  uint64_t output_bytes = 0;
  for (const internal::BufferSpec& buffer : plan.buffers()) {
    const size_t element = data::DTypeSize(buffer.dtype());
    if (element == 0) {
      return absl::InvalidArgumentError(absl::StrCat("buffer ", buffer.name(), " has no dtype"));
    }
    if (buffer.elements() > (uint64_t{1} << 40) / element) {
      return absl::InvalidArgumentError(absl::StrCat("buffer ", buffer.name(), " is too large"));
    }
    if (!names.insert(buffer.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("buffer ", buffer.name(), " is defined twice"));
    }
    if (buffer.role() == internal::BUFFER_ROLE_OUTPUT) output_bytes += buffer.elements() * element;
  }
  for (const internal::ResolvedLaunch& launch : plan.launches()) {
    if (!IsValidKernelName(launch.kernel())) {
      return absl::InvalidArgumentError(absl::StrCat("not a kernel name: ", launch.kernel()));
    }
    for (const internal::KernelArg& arg : launch.args()) {
      if (arg.value_case() == internal::KernelArg::VALUE_NOT_SET) {
        return absl::InvalidArgumentError(
            absl::StrCat("an argument of ", launch.kernel(), " has no value"));
      }
      if (arg.has_buffer() && !names.count(arg.buffer())) {
        return absl::InvalidArgumentError(
            absl::StrCat(launch.kernel(), " is passed unknown buffer ", arg.buffer()));
      }
    }
  }
  return output_bytes;
}

// The compiler's messages, with what they mean for the user first.
std::string FormatCompileFailure(const std::string& log,
                                 const std::vector<std::string>& kernel_names) {
  std::string summary;
  const std::string launchers_prefix = absl::StrCat(kLaunchersFileName, ":");
  std::set<std::string> unlaunchable;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    const size_t at = line.find(launchers_prefix);
    if (at != absl::string_view::npos) {
      int number = 0;
      const absl::string_view rest = line.substr(at + launchers_prefix.size());
      if (absl::SimpleAtoi(rest.substr(0, rest.find(':')), &number) && number >= 3 &&
          static_cast<size_t>(number - 3) < kernel_names.size()) {
        unlaunchable.insert(kernel_names[static_cast<size_t>(number - 3)]);
      }
    }
  }
  for (const std::string& kernel : unlaunchable) {
    absl::StrAppend(&summary, "the plan's kernel '", kernel,
                    "' cannot be launched: it is not defined in the source, is overloaded, or is "
                    "not a __global__ void function\n");
  }
  if (log.find("undefined reference to") != std::string::npos) {
    absl::StrAppend(&summary,
                    "the CPU backend cannot link a function the code calls (CUDA runtime API "
                    "calls and device libraries are not available)\n");
  }
  return absl::StrCat(summary, "host compile (CPU backend) failed:\n", log);
}

// Buffers in a memfd this worker maps and one runner maps too (runner.h):
// one region per case of a Run, or per input set of a timed program, each
// holding its plan's buffers (SharedBufferLayout). The worker writes the
// inputs and the poison and reads the outputs, while no code of the runner
// runs (stopped between samples, or ended after its cases): what a runner
// reports about its buffers is never taken. The bytes around each buffer's
// data in its pages (0-15 after it, up to a page before it, where the
// runner's guard pages cannot fault) stay zero unless kernel code wrote out
// of bounds.
class SharedBuffers {
 public:
  static absl::StatusOr<SharedBuffers> Create(std::vector<const internal::ResolvedPlan*> plans,
                                              const char* name) {
    SharedBuffers shared;
    shared.offsets_ = RegionOffsets(plans);
    shared.bytes_ = std::max<uint64_t>(1, shared.offsets_.back());
    shared.fd_ = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    // Sealed at its size: the runner cannot shrink it under this worker's
    // mapping (a SIGBUS here).
    if (shared.fd_ < 0 || ::ftruncate(shared.fd_, static_cast<off_t>(shared.bytes_)) != 0 ||
        ::fcntl(shared.fd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
      return absl::ResourceExhaustedError(absl::StrCat("memfd: ", std::strerror(errno)));
    }
    void* map = ::mmap(nullptr, shared.bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, shared.fd_, 0);
    if (map == MAP_FAILED) {
      return absl::ResourceExhaustedError(absl::StrCat("mmap: ", std::strerror(errno)));
    }
    shared.map_ = static_cast<char*>(map);
    for (const internal::ResolvedPlan* plan : plans) {
      shared.layouts_.push_back(LayoutFor(*plan));
      shared.inputs_.emplace_back(static_cast<size_t>(plan->buffers_size()));
    }
    shared.plans_ = std::move(plans);
    for (size_t r = 0; r < shared.plans_.size(); ++r) {
      shared.ForEachGuard(r, [&shared](char* begin, size_t n, int, bool) {
        for (size_t i = 0; i < n; ++i) begin[i] = shared.GuardByte(begin + i);
      });
    }
    return shared;
  }

  SharedBuffers() = default;
  SharedBuffers(SharedBuffers&& other) noexcept { *this = std::move(other); }
  SharedBuffers& operator=(SharedBuffers&& other) noexcept {
    if (this != &other) {
      Release();
      plans_ = std::move(other.plans_);
      layouts_ = std::move(other.layouts_);
      offsets_ = std::move(other.offsets_);
      inputs_ = std::move(other.inputs_);
      poison_chooser_ = other.poison_chooser_;
      fd_ = std::exchange(other.fd_, -1);
      map_ = std::exchange(other.map_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  SharedBuffers(const SharedBuffers&) = delete;
  SharedBuffers& operator=(const SharedBuffers&) = delete;
  ~SharedBuffers() { Release(); }

  // [bytes] What this worker maps for buffers of `plans` (one region
  // each): the memfd, and each input as generated (kept for the check).
  static uint64_t MappedBytes(const std::vector<const internal::ResolvedPlan*>& plans) {
    uint64_t bytes = RegionOffsets(plans).back();
    for (const internal::ResolvedPlan* plan : plans) {
      for (const internal::BufferSpec& spec : plan->buffers()) {
        if (spec.role() == internal::BUFFER_ROLE_INPUT) bytes += BufferBytes(spec);
      }
    }
    return bytes;
  }

  [[nodiscard]] int fd() const { return fd_; }

  // Region `region` before a run: inputs GenerateInput(spec, seed) (from
  // `inputs`, which generates each once for every program asking for it),
  // outputs and scratch poisoned, wide integers mixed with leftovers
  // (data::FillLeftovers).
  void Prepare(size_t region, uint64_t seed, data::GeneratedInputs& inputs) {
    const internal::ResolvedPlan& plan = *plans_[region];
    // The integer poison is drawn per run (poison.h), by this process.
    const uint64_t integer_draw = poison_chooser_();
    for (int b = 0; b < plan.buffers_size(); ++b) {
      const internal::BufferSpec& spec = plan.buffers(b);
      char* data = Data(region, b);
      if (spec.role() == internal::BUFFER_ROLE_INPUT) {
        std::shared_ptr<const std::string>& input = inputs_[region][static_cast<size_t>(b)];
        input = inputs.Get(spec, seed);
        // NOLINTNEXTLINE(bugprone-not-null-terminated-result): a byte buffer, not a C string
        std::memcpy(data, input->data(), input->size());
      } else {
        data::FillLeftovers(spec.dtype(), data, spec.elements(), integer_draw);
      }
    }
  }

  // The outputs of the last run on `region`, and whether an input changed.
  [[nodiscard]] internal::CaseResult Collect(size_t region) const {
    const internal::ResolvedPlan& plan = *plans_[region];
    internal::CaseResult result;
    for (int b = 0; b < plan.buffers_size(); ++b) {
      const internal::BufferSpec& spec = plan.buffers(b);
      const char* data = Data(region, b);
      const size_t bytes = BufferBytes(spec);
      if (spec.role() == internal::BUFFER_ROLE_INPUT) {
        const std::string& expected = *inputs_[region][static_cast<size_t>(b)];
        if (result.modified_input().empty() &&
            (expected.size() != bytes || std::memcmp(data, expected.data(), bytes) != 0)) {
          result.set_modified_input(spec.name());
        }
      } else if (spec.role() == internal::BUFFER_ROLE_OUTPUT) {
        data::AppendOutput(spec, data, &result);
      }
    }
    return result;
  }

  // "N bytes before and M bytes after buffer 'y' were overwritten" for the
  // first buffer of `region` whose surrounding bytes lost their pattern.
  [[nodiscard]] std::optional<std::string> OutOfBoundsWrite(size_t region) const {
    std::optional<std::string> found;
    size_t before = 0;
    ForEachGuard(region, [&](const char* begin, size_t n, int buffer, bool after) {
      if (found) return;
      size_t changed = 0;
      for (size_t i = 0; i < n; ++i) changed += begin[i] != GuardByte(begin + i);
      if (!after) {
        before = changed;
      } else if (before != 0 || changed != 0) {
        found = absl::StrCat("out-of-bounds write: ", before, " bytes before and ", changed,
                             " bytes after buffer '", plans_[region]->buffers(buffer).name(),
                             "' were overwritten");
      }
    });
    return found;
  }

 private:
  // The pattern around buffers, from the byte's place in the memfd: a
  // kernel writing zeros (or any constant) next to a buffer changes it.
  [[nodiscard]] char GuardByte(const char* at) const {
    const auto offset = static_cast<uint64_t>(at - map_);
    return static_cast<char>(0xA5 ^ ((offset * 0x9E3779B97F4A7C15ull) >> 56));
  }
  // f(begin, bytes, buffer, after) for the bytes before, then after, the
  // data of each buffer of `region` in its pages (before: up to a page,
  // after: 0-15 bytes; the runner's guard pages fault beyond them).
  template <class F>
  void ForEachGuard(size_t region, F&& f) const {
    const internal::ResolvedPlan& plan = *plans_[region];
    for (int b = 0; b < plan.buffers_size(); ++b) {
      const size_t bytes = BufferBytes(plan.buffers(b));
      char* pages = Pages(region, b);
      const size_t lead = GuardedDataOffset(bytes);
      f(pages, lead, b, false);
      f(pages + lead + bytes, GuardedDataPagesBytes(bytes) - lead - bytes, b, true);
    }
  }
  static size_t BufferBytes(const internal::BufferSpec& spec) {
    return spec.elements() * data::DTypeSize(spec.dtype());
  }
  // Where the pages of a buffer of `region` start, and where its data does.
  [[nodiscard]] char* Pages(size_t region, int buffer) const {
    return map_ + offsets_[region] + layouts_[region].offsets[static_cast<size_t>(buffer)];
  }
  [[nodiscard]] char* Data(size_t region, int buffer) const {
    return Pages(region, buffer) + GuardedDataOffset(BufferBytes(plans_[region]->buffers(buffer)));
  }
  void Release() noexcept {
    if (map_) ::munmap(map_, bytes_);
    if (fd_ >= 0) ::close(fd_);
    map_ = nullptr;
    fd_ = -1;
  }

  std::vector<const internal::ResolvedPlan*> plans_;  // [region]
  std::vector<SharedBufferLayout> layouts_;           // [region]
  std::vector<uint64_t> offsets_;                     // [region] then the size
  // [region][buffer] the inputs of the region's last Prepare (inputs only),
  // shared with the other programs
  std::vector<std::vector<std::shared_ptr<const std::string>>> inputs_;
  std::mt19937_64 poison_chooser_{std::random_device{}()};  // integer poison, per Prepare
  int fd_ = -1;
  char* map_ = nullptr;
  uint64_t bytes_ = 0;
};

// Appended to a hang while timed: the checked build yields at volatile
// loads and atomics, the timed build only at barriers, warp operations and
// __nanosleep (evaluator/cpu/README.md, "Semantic gaps").
constexpr char kTimedBuildHangHint[] =
    "; the CPU backend times a build without the checked build's spin points: a thread "
    "spinning on a value another thread of its block sets (a volatile flag, an atomic read) "
    "yields only at __syncthreads, warp operations and __nanosleep; a __nanosleep in the "
    "loop lets it finish";

// What a GPU computes otherwise under NVRTC option `option` (canonical, as
// CheckUserOptions spells it) and the host build does not reproduce, or
// nullptr: the host build follows the defaults and --fmad=false, and the
// other options change no result (-maxrregcount, -lineinfo, ...). Flushing
// single-precision denormals would take MXCSR's FTZ and DAZ, which flush
// doubles too; an approximate division, another `/`.
const char* ArithmeticNotEmulated(const std::string& option) {
  if (option == "--use_fast_math") {
    return "approximate math functions, division and square root; denormals flushed";
  }
  if (option == "--ftz=true") return "single-precision denormals flushed to zero";
  if (option == "--prec-div=false") return "an approximate single-precision division";
  if (option == "--prec-sqrt=false") return "an approximate single-precision square root";
  return nullptr;
}

class Worker {
 public:
  explicit Worker(CpuWorkerSettings settings) : settings_(std::move(settings)) {
    HostCompilerOptions options;
    options.compiler = settings_.compiler;
    options.prelude_dir =
        settings_.prelude_dir.empty() ? DefaultPreludeDir() : settings_.prelude_dir;
    options.cuda_include_dir =
        settings_.cuda_include_dir.empty() ? DefaultCudaIncludeDir() : settings_.cuda_include_dir;
    options.cache_dir = settings_.cache_dir;
    options.timeout_seconds = settings_.compile_timeout_seconds;
    options.precompiled_prelude = settings_.precompiled_prelude;
    absl::StatusOr<HostCompiler> compiler = HostCompiler::Create(options);
    if (compiler.ok()) {
      compiler_.emplace(*std::move(compiler));
    } else {
      setup_error_ = compiler.status();
    }
    if (settings_.interleaved_runs && setup_error_.ok()) {
      options.interleave_stores = true;
      absl::StatusOr<HostCompiler> interleaved = HostCompiler::Create(std::move(options));
      if (interleaved.ok()) {
        interleaved_compiler_.emplace(*std::move(interleaved));
      } else {
        setup_error_ = interleaved.status();
      }
    }
    runtime_.threads = settings_.threads
                           ? settings_.threads
                           : std::clamp(std::thread::hardware_concurrency(), 1u, kMaxPoolThreads);
    runtime_.fiber_stack_bytes = settings_.fiber_stack_bytes;
    // Runners are fresh images of this binary (fork + exec), by
    // /proc/self/exe rather than the path it names: the very file this
    // worker runs, even if the path was given a new binary since (a runner
    // started while a rebuild was writing it failed in its set-up).
    self_binary_ = "/proc/self/exe";
    if (::access(self_binary_.c_str(), X_OK) != 0 && setup_error_.ok()) {
      setup_error_ =
          absl::FailedPreconditionError("cannot execute the worker binary (/proc/self/exe)");
    }
    runtime_.print_budget_bytes = settings_.print_budget_bytes;
    runtime_.heap_bytes = settings_.heap_bytes;
  }

  absl::StatusOr<internal::RunResult> Run(const internal::RunRequest& request) {
    if (!setup_error_.ok()) return setup_error_;
    build_notes_.clear();
    internal::RunResult result;
    uint64_t output_bytes = 0;
    std::vector<const internal::ResolvedPlan*> plans;
    for (const internal::Case& c : request.cases()) {
      absl::StatusOr<uint64_t> bytes = ValidatePlan(c.plan());
      if (!bytes.ok()) return bytes.status();
      output_bytes += *bytes;
      plans.push_back(&c.plan());
    }
    if (output_bytes > settings_.max_output_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("the cases' outputs (", output_bytes,
                                                       " bytes) exceed the CPU backend's limit of ",
                                                       settings_.max_output_bytes, " bytes"));
    }
    const std::vector<std::string> names = KernelNames(plans);
    absl::StatusOr<std::optional<internal::RunFailure>> compiled = Compile(
        request.program(), names, interleaved_compiler_ ? *interleaved_compiler_ : *compiler_);
    // A Run without cases (the backend's warm-up) builds the timing build's
    // precompiled prelude too.
    if (compiled.ok() && !compiled->has_value() && request.cases_size() == 0 &&
        interleaved_compiler_) {
      compiled = Compile(request.program(), names, *compiler_);
    }
    if (!compiled.ok()) return compiled.status();
    if (compiled->has_value()) {
      *result.mutable_failure() = **compiled;
      return result;
    }
    if (settings_.build_only) {
      for (std::string& note : TakeBuildNotes()) result.add_notes(std::move(note));
      return result;
    }
    RunnerConfig config = MakeConfig(names);
    config.job = RunnerJob::kRunCases;
    const auto case_label = [&](const RunnerReport& report) {
      const int c = report.case_index.load();
      return c >= 0 && c < request.cases_size() ? request.cases(c).label() : std::string();
    };
    const auto failed = [&](const std::string& stage, const std::string& message,
                            const std::string& label) {
      result.Clear();
      internal::RunFailure* failure = result.mutable_failure();
      failure->set_stage(stage);
      failure->set_message(message);
      failure->set_program(request.program().label());
      failure->set_case_label(label);
      return result;
    };
    // Every case's buffers at once, in memory this worker owns (a runner
    // runs its cases in one go); this worker also keeps each input as
    // generated. A plan's scratch is the submission's choice: too much of
    // it is its failure.
    const uint64_t mapped_bytes = SharedBuffers::MappedBytes(plans);
    if (mapped_bytes > 2 * settings_.max_output_bytes) {
      return failed("runtime",
                    absl::StrCat("the buffers of the ", request.cases_size(), " cases (",
                                 mapped_bytes >> 20, " MiB) exceed the CPU backend's limit of ",
                                 (2 * settings_.max_output_bytes) >> 20, " MiB"),
                    "");
    }
    absl::StatusOr<SharedBuffers> buffers = SharedBuffers::Create(plans, "kerneleval-run-buffers");
    if (!buffers.ok()) return buffers.status();
    {
      data::GeneratedInputs inputs(GeneratorThreads());
      for (int c = 0; c < request.cases_size(); ++c) {
        buffers->Prepare(static_cast<size_t>(c), request.cases(c).input_seed(), inputs);
      }
    }
    // The runner gets the plans, not the seeds: the inputs are in its
    // buffers already.
    internal::RunRequest job = request;
    for (internal::Case& c : *job.mutable_cases()) c.clear_input_seed();
    DrawSchedules(job);
    absl::StatusOr<RunnerProcess> runner =
        RunnerProcess::Start(self_binary_, config, job, buffers->fd());
    if (!runner.ok()) return runner.status();
    if (absl::Status s = AwaitLoading(*runner); !s.ok()) return s;
    const double timeout = request.timeout_seconds() > 0 ? request.timeout_seconds()
                                                         : settings_.default_timeout_seconds;
    std::string reply;
    const absl::Status received =
        process::ReadFrame(runner->fd(), &reply, absl::Now() + absl::Seconds(timeout), 64);
    if (absl::IsDeadlineExceeded(received)) {
      runner->Kill();
      return failed("timeout",
                    absl::StrCat("the kernel did not finish within ", timeout, " s",
                                 Where(runner->report(), plans, case_label(runner->report()))),
                    case_label(runner->report()));
    }
    // Read once the runner has ended: no code of the kernel runs any more.
    const int status = runner->Wait(absl::Seconds(received.ok() ? 2 : 5));
    if (received.ok() && reply == kRunDoneFrame && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      for (int c = 0; c < request.cases_size(); ++c) {
        if (std::optional<std::string> written =
                buffers->OutOfBoundsWrite(static_cast<size_t>(c))) {
          return failed("runtime",
                        absl::StrCat(*written, ", case '", request.cases(c).label(), "'"),
                        request.cases(c).label());
        }
        internal::CaseResult* collected = result.add_cases();
        *collected = buffers->Collect(static_cast<size_t>(c));
        collected->set_schedule(DescribeCaseSchedule(job.cases(c).block_schedule() - 1,
                                                     job.cases(c).thread_schedule() - 1,
                                                     interleaved_compiler_.has_value()));
      }
      return result;
    }
    // The kernel's code ran in the runner: every abnormal end is its failure.
    std::string cause = DescribeRunnerEnd(status, runner->report());
    if (cause.empty()) cause = ProtocolBreach(received);
    // Blocks racing on memory: a wrong program, whatever this run's values.
    const bool raced = WIFEXITED(status) && WEXITSTATUS(status) == kKernelRaceExit;
    return failed(raced ? "correctness" : "runtime",
                  absl::StrCat(cause, Where(runner->report(), plans, case_label(runner->report()))),
                  case_label(runner->report()));
  }

  absl::StatusOr<internal::TimingResult> Time(const internal::TimingRequest& request) {
    if (!setup_error_.ok()) return setup_error_;
    build_notes_.clear();
    internal::TimingResult result;
    const internal::TimingConfig config = timing::WithDefaults(request.config());
    std::vector<uint64_t> seeds(request.input_seeds().begin(), request.input_seeds().end());
    if (seeds.empty()) {
      for (uint32_t i = 0; i < std::max<uint32_t>(1, config.input_sets()); ++i)
        seeds.push_back(i + 1);
    }
    // At least twice: the reply carries each set's last and drawn outputs.
    uint64_t outputs_once = 0;  // [bytes] every program's outputs of every set, once
    for (const internal::TimedProgram& program : request.programs()) {
      absl::StatusOr<uint64_t> bytes = ValidatePlan(program.plan());
      if (!bytes.ok()) return bytes.status();
      outputs_once += *bytes * seeds.size();
    }
    const uint64_t output_bytes = 2 * outputs_once;
    if (output_bytes > settings_.max_output_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("the timed outputs (", output_bytes,
                                                       " bytes) exceed the CPU backend's limit of ",
                                                       settings_.max_output_bytes, " bytes"));
    }
    // Runs drawn per input set, each by a reservoir of its own, as many as
    // the output limit holds (up to kMaxDrawnRunsPerSet).
    const size_t draws = static_cast<size_t>(
        std::clamp<uint64_t>(settings_.max_output_bytes / std::max<uint64_t>(outputs_once, 1) - 1,
                             1, kMaxDrawnRunsPerSet));
    const double timeout = request.timeout_seconds() > 0 ? request.timeout_seconds()
                                                         : settings_.default_timeout_seconds;
    // Compile everything first: compile time is not the kernels' time.
    std::vector<RunnerConfig> configs;
    for (const internal::TimedProgram& program : request.programs()) {
      const std::vector<std::string> names = KernelNames(std::vector{&program.plan()});
      absl::StatusOr<std::optional<internal::RunFailure>> compiled =
          Compile(program.program(), names, *compiler_);
      if (!compiled.ok()) return compiled.status();
      if (compiled->has_value()) {
        *result.mutable_failure() = **compiled;
        return result;
      }
      configs.push_back(MakeConfig(names));
    }
    if (settings_.build_only) {
      for (std::string& note : TakeBuildNotes()) result.add_notes(std::move(note));
      return result;
    }
    // What each program's LibraryImage needs from its file, read before any
    // runner loads it (below).
    std::vector<LibraryImage::Layout> layouts;
    for (const RunnerConfig& runner_config : configs) {
      absl::StatusOr<LibraryImage::Layout> layout =
          LibraryImage::ReadLayout(runner_config.library_path);
      if (!layout.ok()) return layout.status();  // the worker's own build: infrastructure
      layouts.push_back(*std::move(layout));
    }
    const absl::Time deadline = absl::Now() + absl::Seconds(timeout);
    // Each program's buffers, shared with its runner only. This worker maps
    // them all, plus each set's latest inputs as generated (counted per
    // program, though programs share them) and the round being generated:
    // bounded, so that a large group fails clearly instead of hitting the
    // worker's address-space limit.
    uint64_t mapped_bytes = 0;
    for (const internal::TimedProgram& program : request.programs()) {
      mapped_bytes += SharedBuffers::MappedBytes(std::vector(seeds.size(), &program.plan()));
    }
    if (mapped_bytes > 2 * settings_.max_output_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the timed buffers of ", request.programs_size(), " programs (",
                       mapped_bytes, " bytes) exceed the CPU backend's limit of ",
                       2 * settings_.max_output_bytes, " bytes: fewer submissions per group"));
    }
    std::vector<SharedBuffers> buffers;
    // [bytes] What each runner may hold while timed: its buffers (every
    // input set, mapped from the memfd) and its share of slack.
    const uint64_t slack =
        std::clamp<uint64_t>(kTimedGroupSlackBytes / static_cast<uint64_t>(request.programs_size()),
                             kTimedRunnerSlackFloorBytes, kTimedRunnerSlackBytes);
    std::vector<uint64_t> resident_allowance;
    for (const internal::TimedProgram& program : request.programs()) {
      resident_allowance.push_back(LayoutFor(program.plan()).set_bytes * seeds.size() + slack);
    }
    for (const internal::TimedProgram& program : request.programs()) {
      absl::StatusOr<SharedBuffers> shared = SharedBuffers::Create(
          std::vector(seeds.size(), &program.plan()), "kerneleval-timed-buffers");
      if (!shared.ok()) return shared.status();
      buffers.push_back(*std::move(shared));
    }
    // One runner per program: the programs never share memory.
    std::vector<RunnerProcess> runners;
    for (int p = 0; p < request.programs_size(); ++p) {
      // The runner's job: this program alone, the seeds and the config.
      internal::TimingRequest job;
      *job.add_programs() = request.programs(p);
      // The runner needs only how many sets there are (this worker
      // generates the inputs): placeholders, not the secret seeds, which
      // kernel code could find in its memory and predict inputs from.
      for (size_t set = 0; set < seeds.size(); ++set) job.add_input_seeds(set);
      *job.mutable_config() = config;
      RunnerConfig runner_config = configs[static_cast<size_t>(p)];
      runner_config.job = RunnerJob::kTimeProgram;
      absl::StatusOr<RunnerProcess> runner = RunnerProcess::Start(
          self_binary_, runner_config, job, buffers[static_cast<size_t>(p)].fd());
      if (!runner.ok()) return runner.status();
      if (absl::Status s = AwaitLoading(*runner); !s.ok()) return s;
      runners.push_back(*std::move(runner));
    }
    std::string reply;
    bool sample_cut = false;  // a run went over its own bound (see `run`)
    auto fail = [&](int p, const absl::Status& status) -> absl::StatusOr<internal::TimingResult> {
      RunnerProcess& runner = runners[static_cast<size_t>(p)];
      runner.Continue();  // a stopped runner could not end
      internal::TimingResult failed;
      internal::RunFailure* failure = failed.mutable_failure();
      failure->set_program(request.programs(p).program().label());
      const std::vector<const internal::ResolvedPlan*> plan = {&request.programs(p).plan()};
      if (absl::IsDeadlineExceeded(status)) {
        runner.Kill();
        failure->set_stage("timeout");
        // The timed build has no spin points: a spin on a flag another
        // thread of the block sets ran in the checked build and hangs here.
        failure->set_message(
            absl::StrCat(sample_cut ? status.message()
                                    : absl::StrCat("timing did not finish within ", timeout, " s"),
                         Where(runner.report(), plan, ""), kTimedBuildHangHint));
        return failed;
      }
      if (absl::IsOutOfRange(status)) {  // wrote next to a buffer (OutOfBoundsWrite)
        runner.Kill();
        failure->set_stage("runtime");
        failure->set_message(absl::StrCat(status.message(), " while timed"));
        return failed;
      }
      if (absl::IsPermissionDenied(status)) {  // ran while held stopped
        runner.Kill();
        failure->set_stage("runtime");
        failure->set_message(absl::StrCat(status.message(), Where(runner.report(), plan, "")));
        return failed;
      }
      if (absl::IsResourceExhausted(status)) {  // held too much memory
        runner.Kill();
        // A runtime failure that depends on the group's size (the engine
        // times such a candidate again alone).
        failure->set_stage("resources");
        failure->set_message(absl::StrCat(status.message(), Where(runner.report(), plan, "")));
        return failed;
      }
      const int wait_status = runner.Wait(absl::Seconds(5));
      std::string cause = DescribeRunnerEnd(wait_status, runner.report());
      if (cause.empty()) cause = ProtocolBreach(status);
      failure->set_stage("runtime");
      failure->set_message(absl::StrCat(cause, Where(runner.report(), plan, "")));
      return failed;
    };
    for (int p = 0; p < request.programs_size(); ++p) {
      absl::Status s =
          process::ReadFrame(runners[static_cast<size_t>(p)].fd(), &reply, deadline, 64);
      if (!s.ok() || reply != "ready") return fail(p, s.ok() ? absl::DataLossError("no ready") : s);
    }
    // Exactly one reply per command: a reply sent early by kernel code
    // leaves an extra frame that the next read sees as a protocol error.
    // Only the program being served gets CPU time: the others are stopped,
    // threads their kernel code may have left running included, so that no
    // program can slow another one down while it is timed.
    for (RunnerProcess& runner : runners) runner.PauseAndWaitStopped(absl::Seconds(5));
    // Each program's writable data as loaded (`__device__` variables, its
    // static initialisers' results), read out of its stopped runner and put
    // back before every run, warm-up or timed: state a run leaves for the
    // next one (a table the first run builds and later runs only read,
    // sweep 6, x17) does not take work out of the timed samples, as
    // on the GPU (CudaWorker::RestoreGlobals). A Run's cases keep theirs:
    // a kernel that leaves a counter it does not reset fails its second
    // case there, as it would when called again in a real program.
    std::vector<std::optional<LibraryImage>> images;
    for (int p = 0; p < request.programs_size(); ++p) {
      RunnerProcess& runner = runners[static_cast<size_t>(p)];
      absl::StatusOr<LibraryImage> image =
          LibraryImage::Capture(runner.pid(), layouts[static_cast<size_t>(p)]);
      if (image.ok()) {
        images.push_back(*std::move(image));
      } else if (absl::IsUnimplemented(image.status())) {
        // A host without process_vm_readv: timed as before, and said so.
        result.add_notes(
            absl::StrCat(request.programs(p).program().label(),
                         ": device globals are not restored between timed runs on this host (",
                         image.status().message(), ")"));
        images.emplace_back(std::nullopt);
      } else {
        return fail(p, absl::PermissionDeniedError(
                           absl::StrCat("its device globals could not be kept for the timed runs: ",
                                        image.status().message())));
      }
    }
    // [CPU time] Each runner's CPU clock when it was last seen stopped. A
    // stopped process does not run; one that did (a signal such as SIGCONT
    // resumed it: the sandbox denies the ways to have one sent later, this
    // is the check behind them) did work between samples, unmeasured, and
    // fails.
    std::vector<absl::Duration> cpu_when_stopped;
    for (RunnerProcess& runner : runners) {
      absl::StatusOr<absl::Duration> cpu = runner.CpuTime();
      cpu_when_stopped.push_back(cpu.ok() ? *cpu : absl::ZeroDuration());
    }
    // What a process seen stopped may still be charged [CPU time]: its
    // state reads "stopped" once its main thread is, and the other threads
    // stop one after another (1.5 ms was seen on a busy 2-core machine).
    // Whatever it is, it is charged to the next sample.
    constexpr absl::Duration kStoppedSlack = absl::Milliseconds(20);
    auto check_stood_still = [&](int p) -> absl::Status {
      const char state = runners[static_cast<size_t>(p)].State();
      if (state == 'Z' || state == '?') return absl::DataLossError("the runner ended");
      if (state != 'T') {
        return absl::PermissionDeniedError(
            "the kernel's process was resumed while its worker held it stopped between samples "
            "(by a signal?): work outside the measured runs");
      }
      absl::StatusOr<absl::Duration> cpu = runners[static_cast<size_t>(p)].CpuTime();
      if (!cpu.ok()) return cpu.status();
      const absl::Duration ran = *cpu - cpu_when_stopped[static_cast<size_t>(p)];
      if (ran > kStoppedSlack) {
        return absl::PermissionDeniedError(absl::StrCat(
            "the kernel's process ran for ", absl::FormatDuration(ran),
            " of CPU time while its worker held it stopped between samples (resumed by a "
            "signal?): work outside the measured runs"));
      }
      return absl::OkStatus();
    };
    // A sample is the CPU time the runner spent from the command until it
    // stood still again (all its threads, work left running after the reply
    // included), read by this process: neither waits for a core on a busy
    // machine nor the wake-up of a stopped process count, so a program
    // timed against itself measures ~1x where wall time varied by 2x.
    // Before each run this worker prepares the set's buffers for that round
    // (SharedBuffers::Prepare), the runner stopped; the run is the sample.
    // A sample counts from the CPU clock read when the runner was last seen
    // stopped: whatever it ran since is charged to it, the "P" command that
    // prepares the run (StartRunAfresh) included. Kernel code shares the
    // runner's address space and can make any runner code do its work (a
    // GOT slot the preparation calls through, a signal handler for a fault
    // it plants there: sweep 41 did a matmul so, at 19x, while "P" was left
    // out). The costly part of the preparation, the fill of the fiber stack
    // pages kernels touched (~1-1.4 ms for 512 fibers, which had doubled a
    // 1.4 ms histogram's samples and pulled every speedup of small kernels
    // towards 1), is this process's instead: it zeros them from outside
    // while the runner stands still (ZeroTouchedPages), where no code of
    // the runner runs.
    // [wall] Each run within timing::TimedRunBoundSeconds of the longest so far.
    timing::TimedRunBound run_bound;
    bool preparation_unmeasured = false;  // no per-thread CPU clock on this host
    auto prepare = [&](int p) -> absl::StatusOr<absl::Duration> {
      RunnerProcess& runner = runners[static_cast<size_t>(p)];
      absl::StatusOr<absl::Duration> main_before = runner.MainThreadCpuTime();
      runner.Continue();
      if (absl::Status s = process::WriteFrame(runner.fd(), "P"); !s.ok()) return s;
      if (absl::Status s = process::ReadFrame(runner.fd(), &reply, deadline, 64); !s.ok()) {
        return s;
      }
      if (!runner.PauseAndWaitStopped(absl::Seconds(5))) {
        return absl::DataLossError("the runner did not stop after its reply");
      }
      if (reply != "p") return absl::DataLossError("unexpected reply");
      // Read once: kernel code can write the report (bounded, and checked by
      // ZeroTouchedPages).
      const uint32_t ranges =
          std::min<uint32_t>(runner.report().stack_range_count, RunnerReport::kMaxStackRanges);
      std::vector<AddressRange> stacks(runner.report().stack_ranges,
                                       runner.report().stack_ranges + ranges);
      if (absl::StatusOr<uint64_t> zeroed =
              ZeroTouchedPages(runner.pid(), stacks, kFiberStackBudgetBytes * 4);
          !zeroed.ok()) {
        return absl::PermissionDeniedError(absl::StrCat(
            "the stacks of its GPU threads could not be reset before a timed run (memory the "
            "kernel code unmapped or made inaccessible?): ",
            zeroed.status().message()));
      }
      absl::StatusOr<absl::Duration> main_after = runner.MainThreadCpuTime();
      if (!main_before.ok() || !main_after.ok()) {
        preparation_unmeasured = true;
        return absl::ZeroDuration();
      }
      return std::max(absl::ZeroDuration(), *main_after - *main_before);
    };
    std::vector<std::vector<double>> preparations(static_cast<size_t>(request.programs_size()));
    auto run = [&](int p, size_t set, double* microseconds) -> absl::Status {
      RunnerProcess& runner = runners[static_cast<size_t>(p)];
      if (absl::Status s = check_stood_still(p); !s.ok()) return s;
      absl::StatusOr<absl::Duration> preparation = prepare(p);
      if (!preparation.ok()) return preparation.status();
      if (const std::optional<LibraryImage>& image = images[static_cast<size_t>(p)]; image) {
        if (absl::Status s = image->Restore(runner.pid()); !s.ok()) {
          return absl::PermissionDeniedError(absl::StrCat(
              "its device globals could not be restored before a timed run (memory the kernel "
              "code unmapped or made read-only?): ",
              s.message()));
        }
      }
      const absl::Time run_deadline = run_bound.Start(deadline);
      runner.Continue();
      if (absl::Status s = process::WriteFrame(runner.fd(), absl::StrCat("R", set)); !s.ok()) {
        return s;
      }
      if (absl::Status s = process::ReadFrame(runner.fd(), &reply, run_deadline, 64); !s.ok()) {
        if (std::optional<std::string> cut = run_bound.CutMessage();
            cut && absl::IsDeadlineExceeded(s)) {
          sample_cut = true;
          return absl::DeadlineExceededError(*cut);
        }
        return s;
      }
      run_bound.Finish();
      if (!runner.PauseAndWaitStopped(absl::Seconds(5))) {
        return absl::DataLossError("the runner did not stop after its reply");
      }
      if (reply != "k") return absl::DataLossError("unexpected reply");
      // Every runner of a group stays alive, and resident, while the group
      // is timed: each may hold its buffers and a bounded allowance besides,
      // or K candidates could pin K x its address-space limit of host
      // memory (4 kernels touching 3 GiB each took a 24 GB host from 1.3
      // to 13.4 GB used).
      if (absl::StatusOr<uint64_t> resident = runner.ResidentBytes();
          resident.ok() && *resident > resident_allowance[static_cast<size_t>(p)]) {
        return absl::ResourceExhaustedError(absl::StrCat(
            "the kernel's process held ", *resident >> 20,
            " MiB of memory after a run while timed, more than its buffers and ", slack >> 20,
            " MiB besides (every program of a group stays resident while it is timed)"));
      }
      absl::StatusOr<absl::Duration> cpu_after = runner.CpuTime();
      if (!cpu_after.ok()) return cpu_after.status();
      if (microseconds) {
        *microseconds =
            absl::ToDoubleMicroseconds(*cpu_after - cpu_when_stopped[static_cast<size_t>(p)]);
        if (!preparation_unmeasured) {
          preparations[static_cast<size_t>(p)].push_back(absl::ToDoubleMicroseconds(*preparation));
        }
      }
      cpu_when_stopped[static_cast<size_t>(p)] = *cpu_after;
      return absl::OkStatus();
    };
    std::vector<std::vector<double>> samples(static_cast<size_t>(request.programs_size()));
    const timing::StoppingRule rule(config);
    const size_t sets = seeds.size();
    // Besides the last round's, the outputs checked per input set are those
    // of `draws` rounds drawn at random among every round run on it, each
    // by a reservoir of its own (round k of a set replaces a draw's choice
    // with probability 1/k), read right after that round while every runner
    // stands still: a kernel that knows when timing ends (the time cap)
    // could otherwise skip the work in every round but the last. One draw
    // was not enough: a kernel that wrote zeros in ~72 % of its timed runs
    // (the median is then a skipped run's) passed 5 times in 20 at ~45x,
    // reward 0.83 on average against 0.35 for honest work; with d draws on
    // each of s sets it passes with probability (honest fraction)^(d s),
    // under 0.5^8 at the default 4 x 2. The draws come from this process,
    // which kernel code cannot read. checked[p][set * draws + d].
    std::vector<std::vector<internal::CaseResult>> checked(
        static_cast<size_t>(request.programs_size()),
        std::vector<internal::CaseResult>(sets * draws));
    std::vector<uint64_t> rounds_on_set(sets, 0);
    std::mt19937_64 chooser(std::random_device{}());
    auto maybe_check = [&](size_t set) {
      ++rounds_on_set[set];
      std::vector<internal::CaseResult> collected;
      for (size_t d = 0; d < draws; ++d) {
        if (chooser() % rounds_on_set[set] != 0) continue;
        if (collected.empty()) {
          for (int p = 0; p < request.programs_size(); ++p) {
            collected.push_back(buffers[static_cast<size_t>(p)].Collect(set));
          }
        }
        for (int p = 0; p < request.programs_size(); ++p) {
          checked[static_cast<size_t>(p)][set * draws + d] = collected[static_cast<size_t>(p)];
        }
      }
    };
    // Rounds are numbered from the first warm-up on: every round, warm-up or
    // timed, has inputs of its own (data::TimedInputSeed), generated while
    // every runner stands still (not in any sample) and once for all
    // programs (GeneratorThreads).
    // The CPU backend's programs run in processes of their own: one input
    // per round for all (program 0's).
    const auto round_seed = [&](size_t set, uint64_t round) {
      return data::TimedInputSeed(seeds[set], round, /*program=*/0);
    };
    for (uint32_t w = 0; w < config.warmup_runs(); ++w) {
      data::GeneratedInputs round_inputs(GeneratorThreads());
      for (int p = 0; p < request.programs_size(); ++p) {
        buffers[static_cast<size_t>(p)].Prepare(w % sets, round_seed(w % sets, w), round_inputs);
        if (absl::Status s = run(p, w % sets, nullptr); !s.ok()) return fail(p, s);
      }
      maybe_check(w % sets);
    }
    const auto start = std::chrono::steady_clock::now();
    bool converged = false;
    const int n_programs = request.programs_size();
    for (uint64_t round = 0;; ++round) {
      const size_t set = round % sets;
      data::GeneratedInputs round_inputs(GeneratorThreads());
      // The first program of a round changes from round to round: no program
      // always follows the same neighbour (caches, clocks).
      for (int k = 0; k < n_programs; ++k) {
        const int p = static_cast<int>((round + static_cast<uint64_t>(k)) % n_programs);
        buffers[static_cast<size_t>(p)].Prepare(set, round_seed(set, config.warmup_runs() + round),
                                                round_inputs);
        double microseconds = 0;
        if (absl::Status s = run(p, set, &microseconds); !s.ok()) return fail(p, s);
        samples[static_cast<size_t>(p)].push_back(microseconds);
      }
      maybe_check(set);
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      bool stop = true;
      converged = true;
      for (const std::vector<double>& s : samples) {
        stop = stop && rule.ShouldStop(s, elapsed);
        converged = converged && rule.Converged(s);
      }
      // Every program has samples of every input set before stopping.
      if (stop && round + 1 >= sets) break;
      // Out of time before the rule stopped it (the time cap stops it
      // first unless something is very slow, or the caller's deadline cut
      // the limit): a failure, charged to the run as a whole (its first
      // program), never a verdict on fewer samples than the rule asks.
      if (absl::Now() >= deadline) return fail(0, absl::DeadlineExceededError("timing"));
    }
    // Every runner stands still after its last sample: the last outputs are
    // read now, before any runs again. Kernel code shares its runner's
    // process, channel included, and could answer "F" itself: what it writes
    // after its last sample must not count, and nothing it sends is taken
    // (the samples and outputs are this worker's own measurements and reads).
    for (int p = 0; p < request.programs_size(); ++p) {
      if (absl::Status s = check_stood_still(p); !s.ok()) return fail(p, s);
      // Bytes around a buffer are never reset: a write there in any round
      // is still there.
      for (size_t set = 0; set < sets; ++set) {
        if (std::optional<std::string> written =
                buffers[static_cast<size_t>(p)].OutOfBoundsWrite(set)) {
          return fail(p, absl::OutOfRangeError(*written));
        }
      }
      internal::ProgramTiming* timing = result.add_programs();
      // Sets run in order: those that ran (the deadline may end timing
      // first) are a prefix.
      for (size_t set = 0; set < sets && rounds_on_set[set] > 0; ++set) {
        *timing->add_last_outputs() = buffers[static_cast<size_t>(p)].Collect(set);
        for (size_t d = 0; d < draws; ++d) {
          *timing->add_drawn_outputs() =
              std::move(checked[static_cast<size_t>(p)][set * draws + d]);
        }
      }
      for (double sample : samples[static_cast<size_t>(p)]) timing->add_samples_us(sample);
      if (!preparation_unmeasured) {
        for (double us : preparations[static_cast<size_t>(p)]) timing->add_preparation_us(us);
      }
    }
    for (int p = 0; p < request.programs_size(); ++p) {
      RunnerProcess& runner = runners[static_cast<size_t>(p)];
      runner.Continue();
      // The runner's farewell: an empty message, read with a small bound (a
      // frame header announcing gigabytes would otherwise be allocated).
      if (absl::Status s = process::WriteFrame(runner.fd(), "F"); !s.ok()) return fail(p, s);
      if (absl::Status s = process::ReadFrame(runner.fd(), &reply, deadline, 64); !s.ok()) {
        return fail(p, s);
      }
      runner.Wait(absl::Seconds(2));
    }
    result.set_converged(converged);
    return result;
  }

 private:
  // nullopt: compiled, ready to run; a RunFailure (stage "compile"): the
  // user's code cannot run on the CPU backend.
  absl::StatusOr<std::optional<internal::RunFailure>> Compile(const internal::Program& program,
                                                              const std::vector<std::string>& names,
                                                              HostCompiler& compiler) {
    internal::RunFailure failure;
    failure.set_stage("compile");
    failure.set_program(program.label());
    if (std::optional<std::string> unsupported = FindUnsupportedFeature(program.source())) {
      failure.set_message(*unsupported);
      return failure;
    }
    const v1::CompileResult& compiled_by_nvrtc = program.compiled();
    if (absl::StrContains(compiled_by_nvrtc.log(), "'long double' is treated as 'double'")) {
      // x87's 64-bit mantissa here, a double's 53 bits on a GPU: a kernel
      // kept its sum only where 1 + 2^-60 != 1 (sweep 38, s38a). NVRTC
      // warns at every use after preprocessing, however spelt (a macro, a
      // 1.0L literal); FindUnsupportedFeature refuses the pragmas that
      // could silence it.
      failure.set_message(
          "the CPU backend does not emulate long double as a GPU computes it (NVRTC: \"'long "
          "double' is treated as 'double' in device code\"; its host build would keep x87's "
          "64-bit mantissa): use double, or evaluate on a GPU");
      return failure;
    }
    for (const std::string& option : compiled_by_nvrtc.options()) {
      if (option == "--std=c++17") {
        // The host build is C++20 (its prelude needs it): the language would
        // differ between the builds, which a source can detect (sweep 9).
        failure.set_message(
            "the CPU backend compiles C++20 (its host build): submit without --std=c++17 "
            "(kerneleval compiles C++20 by default)");
        return failure;
      }
      if (const char* what = ArithmeticNotEmulated(option)) {
        // The host build would compute other numbers than a GPU: a kernel
        // could write the right answer only where a result is not flushed or
        // approximated (session 37), and one whose approximations fail a
        // tolerance on a GPU would pass here.
        failure.set_message(absl::StrCat(
            "the CPU backend does not emulate ", option, " (", what,
            "): its host build would compute other numbers than a GPU; submit without it, or "
            "evaluate on a GPU"));
        return failure;
      }
    }
    if (compiled_by_nvrtc.has_host_build_probe() &&
        !compiled_by_nvrtc.host_build_probe().error().empty()) {
      failure.set_message(compiled_by_nvrtc.host_build_probe().error());
      return failure;
    }
    std::vector<std::string> defines(program.defines().begin(), program.defines().end());
    // __CUDA_ARCH__ as NVRTC defined it for this program (sm_90 without one),
    // where the compile stage sent no probe of NVRTC's macros (tests).
    const int cuda_arch = CudaArchValue(compiled_by_nvrtc.arch());
    absl::StatusOr<std::string> unit = BuildTranslationUnit(
        program.source(), defines, names, cuda_arch > 0 ? cuda_arch : 900,
        compiled_by_nvrtc.has_host_build_probe() ? &compiled_by_nvrtc.host_build_probe() : nullptr);
    if (!unit.ok()) return unit.status();
    if (!NvrtcFusesMultiplyAdd(compiled_by_nvrtc.options())) {
      if (absl::Status fused = FuseNoMultiplyAdd(&*unit); !fused.ok()) return fused;
    }
    absl::StatusOr<HostCompileResult> compiled = compiler.Compile(*unit);
    if (!compiled.ok()) return compiled.status();
    if (!compiled->success) {
      failure.set_message(FormatCompileFailure(compiled->log, names));
      return failure;
    }
    library_path_ = compiled->library_path;
    if (settings_.build_only) {
      build_notes_.push_back(compiled->cache_hit
                                 ? std::string(kBuildNoteCacheHit)
                                 : absl::StrCat(kBuildNotePrefix, compiled->seconds));
    }
    return std::optional<internal::RunFailure>();
  }

  // The notes of a builder's builds since the last call.
  std::vector<std::string> TakeBuildNotes() { return std::exchange(build_notes_, {}); }

  // Waits for the runner's kLoadingFrame: a runner that ends before it could
  // not set itself up (sandbox, job), which is not the submission's fault.
  static absl::Status AwaitLoading(RunnerProcess& runner) {
    std::string frame;
    const absl::Status s =
        process::ReadFrame(runner.fd(), &frame, absl::Now() + absl::Seconds(60), 64);
    if (s.ok() && frame == kLoadingFrame) return absl::OkStatus();
    const int status = runner.Wait(absl::Seconds(5));
    std::string cause = DescribeRunnerEnd(status, runner.report());
    if (cause.empty()) cause = std::string(s.message());
    return absl::InternalError(absl::StrCat("the CPU runner could not start: ", cause));
  }

  // A runner that exited cleanly without the reply the protocol asks for.
  static std::string ProtocolBreach(const absl::Status& read) {
    return absl::StrCat(
        "the runner ended without a valid reply (kernel code exiting the process or writing to "
        "its channel?)",
        read.ok() ? "" : absl::StrCat(": ", read.message()));
  }

  RunnerConfig MakeConfig(const std::vector<std::string>& names) const {
    RunnerConfig config;
    config.library_path = library_path_;
    config.kernel_names = names;
    config.runtime = runtime_;
    return config;
  }

  // Threads generating inputs: up to 4 cores (a normal value takes ~40 ns
  // to draw on one core here: 2^18 of them, ~10 ms; more threads would each
  // reserve stack and a malloc arena in a worker whose address space is
  // limited).
  static unsigned GeneratorThreads() {
    return std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  }

  // ", case 'small', launch 1 (softmax)" from the runner's last position.
  static std::string Where(const RunnerReport& report,
                           const std::vector<const internal::ResolvedPlan*>& plans,
                           const std::string& case_label) {
    const int c = report.case_index.load();
    const int l = report.launch_index.load();
    std::string where;
    if (!case_label.empty()) absl::StrAppend(&where, ", case '", case_label, "'");
    const internal::ResolvedPlan* plan =
        plans.size() == 1 ? plans[0]
                          : (c >= 0 && static_cast<size_t>(c) < plans.size() ? plans[c] : nullptr);
    if (plan && l >= 0 && l < plan->launches_size()) {
      absl::StrAppend(&where, ", launch ", l, " (", plan->launches(l).kernel(), ")");
    }
    return where;
  }

  CpuWorkerSettings settings_;
  std::optional<HostCompiler> compiler_;              // the plain build: timing
  std::optional<HostCompiler> interleaved_compiler_;  // correctness runs, when enabled
  absl::Status setup_error_;
  DeviceRuntimeOptions runtime_;
  std::string library_path_;
  std::vector<std::string> build_notes_;  // build_only: one per build of this request
  std::string self_binary_;
};

void ReplyError(int fd, const absl::Status& status) {
  google::protobuf::StringValue error;
  error.set_value(absl::StrCat(static_cast<int>(status.code()), ":", status.message()));
  google::protobuf::Any envelope;
  envelope.PackFrom(error);
  (void)process::WriteMessage(fd, envelope);
}

}  // namespace

std::vector<std::string> CpuWorkerSettings::ToArgs() const {
  return {absl::StrCat("--cache-dir=", cache_dir),
          absl::StrCat("--prelude-dir=", prelude_dir),
          absl::StrCat("--cuda-include-dir=", cuda_include_dir),
          absl::StrCat("--compiler=", compiler),
          absl::StrCat("--compile-timeout=", compile_timeout_seconds),
          absl::StrCat("--default-timeout=", default_timeout_seconds),
          absl::StrCat("--threads=", threads),
          absl::StrCat("--fiber-stack-bytes=", fiber_stack_bytes),
          absl::StrCat("--print-budget-bytes=", print_budget_bytes),
          absl::StrCat("--heap-bytes=", heap_bytes),
          absl::StrCat("--max-output-bytes=", max_output_bytes),
          absl::StrCat("--precompiled-prelude=", precompiled_prelude ? 1 : 0),
          absl::StrCat("--interleaved-runs=", interleaved_runs ? 1 : 0),
          absl::StrCat("--build-only=", build_only ? 1 : 0)};
}

CpuWorkerSettings CpuWorkerSettings::FromArgs(int argc, char** argv) {
  CpuWorkerSettings s;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const size_t eq = arg.find('=');
    if (arg.substr(0, 2) != "--" || eq == std::string_view::npos) continue;
    const std::string_view name = arg.substr(2, eq - 2);
    const std::string value(arg.substr(eq + 1));
    double number = 0;
    const bool numeric = absl::SimpleAtod(value, &number);
    if (name == "cache-dir") s.cache_dir = value;
    if (name == "prelude-dir") s.prelude_dir = value;
    if (name == "cuda-include-dir") s.cuda_include_dir = value;
    if (name == "compiler") s.compiler = value;
    if (!numeric) continue;
    if (name == "compile-timeout") s.compile_timeout_seconds = number;
    if (name == "default-timeout") s.default_timeout_seconds = number;
    if (name == "threads") s.threads = static_cast<unsigned>(number);
    if (name == "fiber-stack-bytes") s.fiber_stack_bytes = static_cast<uint64_t>(number);
    if (name == "print-budget-bytes") s.print_budget_bytes = static_cast<uint64_t>(number);
    if (name == "heap-bytes") s.heap_bytes = static_cast<uint64_t>(number);
    if (name == "max-output-bytes") s.max_output_bytes = static_cast<uint64_t>(number);
    if (name == "precompiled-prelude") s.precompiled_prelude = number != 0;
    if (name == "interleaved-runs") s.interleaved_runs = number != 0;
    if (name == "build-only") s.build_only = number != 0;
  }
  return s;
}

std::string DefaultPreludeDir() {
  if (const char* env = std::getenv("KERNELEVAL_CPU_PRELUDE_DIR"); env && *env) return env;
  // Installed: <prefix>/bin/kerneleval-worker and <prefix>/share/kerneleval/cpu-prelude.
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed =
        self.parent_path().parent_path() / "share" / "kerneleval" / "cpu-prelude";
    if (std::filesystem::exists(installed / "kerneleval_cpu_prelude.h", ec)) {
      return installed.string();
    }
  }
  return KERNELEVAL_CPU_PRELUDE_SOURCE_DIR;
}

std::string DefaultCudaIncludeDir() {
  return FromEnvOr("KERNELEVAL_CUDA_INCLUDE_DIR", KERNELEVAL_CPU_CUDA_INCLUDE_DIR);
}

int CpuWorkerMain(int channel_fd, int argc, char** argv) {
  CpuWorkerSettings settings = CpuWorkerSettings::FromArgs(argc, argv);
  if (settings.cache_dir.empty()) {
    std::fprintf(stderr, "kerneleval-worker cpu: --cache-dir is required\n");
    return 2;
  }
  Worker worker(std::move(settings));
  google::protobuf::Any envelope;
  for (;;) {
    envelope.Clear();
    const absl::Status read = process::ReadMessage(channel_fd, &envelope, absl::InfiniteFuture());
    if (absl::IsUnavailable(read)) return 0;  // the engine closed the channel
    if (!read.ok()) return 3;
    google::protobuf::Any reply;
    if (envelope.Is<internal::RunRequest>()) {
      internal::RunRequest request;
      envelope.UnpackTo(&request);
      absl::StatusOr<internal::RunResult> result = worker.Run(request);
      if (!result.ok()) {
        ReplyError(channel_fd, result.status());
        continue;
      }
      reply.PackFrom(*result);
    } else if (envelope.Is<internal::TimingRequest>()) {
      internal::TimingRequest request;
      envelope.UnpackTo(&request);
      absl::StatusOr<internal::TimingResult> result = worker.Time(request);
      if (!result.ok()) {
        ReplyError(channel_fd, result.status());
        continue;
      }
      reply.PackFrom(*result);
    } else {
      ReplyError(channel_fd, absl::InvalidArgumentError(
                                 absl::StrCat("unknown request type ", envelope.type_url())));
      continue;
    }
    if (!process::WriteMessage(channel_fd, reply).ok()) return 4;
  }
}

}  // namespace kerneleval::cpu
