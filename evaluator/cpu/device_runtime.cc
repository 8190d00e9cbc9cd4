#include "evaluator/cpu/device_runtime.h"

#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <boost/context/fiber.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "evaluator/cpu/device_heap.h"
#include "evaluator/cpu/loaded_modules.h"
#include "evaluator/data/shared_fill.h"
#include "evaluator/data/splitmix64.h"

namespace kerneleval::cpu {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr uint32_t kMaxThreadsPerBlock = 1024;

size_t PageSize() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

size_t RoundUp(size_t value, size_t unit) { return (value + unit - 1) / unit * unit; }

constexpr size_t kCacheLineBytes = 64;

// Allocates whole cache lines, so that what one OS thread's executor writes
// at every fiber switch shares no line with another thread's data. With
// plain allocations (and the runner's own thread running blocks too: see
// ThreadPool), one runner process in two or three ran row_sum's reference
// 15-70 % longer (CPU time, 2 OS threads on 2 cores) than another process
// running the same code, in AbiWarp on one thread and __tls_get_addr on the
// other (`perf record -a -e cpu-clock`): lines went back and forth between
// the cores. Which objects neighboured which depended on each process's
// heap, so self-speedups came out 0.70-1.65; on one core, 0.99-1.01.
template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>& /*other*/) noexcept {}
  T* allocate(size_t n) {
    return static_cast<T*>(::operator new (RoundUp(n * sizeof(T), kCacheLineBytes),
                                           std::align_val_t{kCacheLineBytes}));
  }
  void deallocate(T* p, size_t /*n*/) noexcept {
    ::operator delete (p, std::align_val_t{kCacheLineBytes});
  }
  friend bool operator==(const CacheLineAllocator& /*a*/, const CacheLineAllocator& /*b*/) {
    return true;
  }
};
template <class T>
using LineVector = std::vector<T, CacheLineAllocator<T>>;

// The order in which a block's threads start (each runs until it ends or
// waits at a barrier or warp operation). A GPU runs them concurrently: code
// that reads what another thread writes without a barrier between them is
// wrong there, yet always right here if threads started in index order (a
// racy scan passed with reward 3.3). Each launch draws one order, except in
// a correctness run's odd cases (SetCaseSchedule), which take them in turn.
enum class ThreadOrder : uint8_t {
  kForward,              // 0, 1, 2, ...
  kReverse,              // n-1, n-2, ...
  kLanesReversedInWarp,  // warps in order, lanes of each warp from the last
};
constexpr int kThreadOrders = 3;

struct Globals {
  DeviceRuntimeOptions options;
  FatalErrorHandler on_fatal = nullptr;
  // Draws each launch's ThreadOrder, seeded from the OS. This catches races
  // in honest code; kernel code shares this address space and could read
  // the generator's state, but a kernel that checks which order it got can
  // as well wait for its predecessor properly.
  std::mt19937_64 order_chooser{std::random_device{}()};
  // Every OS thread's thread-local block of the submission's library, with
  // the initial image of its initialised part (.tdata: the prelude's state)
  // that StartRunAfresh puts back (AbiTlsBlock records each).
  struct TlsBlock {
    char* begin = nullptr;
    const char* image = nullptr;
    size_t initialised_bytes = 0;
  };
  std::mutex tls_blocks_mutex;
  std::vector<TlsBlock> tls_blocks;
  // The seed of each run's shared-memory fill (StartRunAfresh).
  std::mt19937_64 fill_chooser{std::random_device{}()};
  // What every block's shared memory starts as (kerneleval_cpu_block_info::
  // shared_fill), drawn by StartRunAfresh; empty: 0xff.
  std::vector<uint64_t> shared_fill;
  uint64_t launches = 0;  // GridJob::sequence
  // [ns] Where the next launch's virtual clocks may start (GridJob::
  // clock_start, globaltimer_start): drawn at the process's first launch,
  // then each launch starts a drawn step above the last one's start.
  int64_t clock_floor = 0;
  uint64_t globaltimer_floor = 0;
  // SetCaseSchedule: whether store points yield, and the order of every
  // launch (none: drawn per launch).
  bool store_points = true;
  std::optional<ThreadOrder> fixed_order;
  // SetCaseSchedule: every block of a grid under kDrawnStorePointsMinBlocks
  // blocks lets a drawn number of its first store points pass
  // (GridJob::quiet_every_block).
  bool quiet_small_grids = false;
  // SetCaseSchedule: the case's shape (internal::Case::shape_index).
  uint32_t shape = 0;
  // GridJob::block_points_seen by kernel (its thread function) and shape:
  // the most of its launches' GridJob::most_block_points in cases without
  // store points (read and written by the runner's thread, between grids).
  std::map<std::pair<kerneleval_cpu_thread_fn, uint32_t>, uint64_t> block_points_by_kernel;
  // SetCaseSchedule: blocks taken with blockIdx.x slowest, from the last,
  // or shuffled (GridJob).
  bool x_slowest = false;
  bool blocks_reversed = false;
  bool blocks_shuffled = false;
  // SetCaseSchedule: blocks after the run's first on each OS thread find
  // shared memory as the last block there left it
  // (kerneleval_cpu_block_info::shared_left_over).
  bool shared_left_over = false;
  // StartRunAfresh calls so far: an OS thread's first block since the last
  // one is filled even where shared memory is left over.
  uint64_t runs_started = 0;
  // SetRaceCheckedMemory: the cross-block race check of the correctness
  // runs (writes: kRaceSlots slots, mapped on first use; grids: tags
  // handed out so far).
  bool race_checked = false;
  kerneleval_cpu_race_check race{};
  uint64_t race_grids = 0;
  bool race_reported = false;  // RaceFound described one (LastGridRaced)
  std::atomic<uint64_t> printed{0};
  // The kernels' malloc() heap (options.heap_bytes). The race check covers
  // it once a kernel has allocated there (RegisterHeapRange): as one more
  // range from the start, every access to memory outside the ranges (shared
  // memory, locals) scanned it too, and correctness runs of kernels that
  // never call malloc() took up to 13% longer (row_sum's reference).
  std::unique_ptr<DeviceHeap> heap;
  std::mutex heap_range_mutex;
  std::atomic<bool> heap_range_registered{false};
  kerneleval_cpu_runtime table{};
};
Globals* globals = nullptr;

[[noreturn]] void Fatal(const std::string& message) {
  globals->on_fatal(message.c_str());
  std::_Exit(70);  // the handler must not return; never continue either way
}

// Stacks of fibers, recycled within one OS thread. Each is mapped with a
// PROT_NONE guard page below it: a stack overflow faults instead of writing
// into the neighbour.
class StackPool {
 public:
  explicit StackPool(size_t bytes) : bytes_(RoundUp(bytes, PageSize())) {}
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;
  StackPool(StackPool&&) = delete;
  StackPool& operator=(StackPool&&) = delete;
  ~StackPool() { UnmapAll(); }

  // Between blocks (no stack in use): stacks of another size from now on.
  void Resize(size_t bytes) {
    bytes = RoundUp(bytes, PageSize());
    if (bytes == bytes_) return;
    UnmapAll();
    bytes_ = bytes;
  }

  boost::context::stack_context Allocate() {
    Stack stack;
    if (!free_.empty()) {
      stack = free_.back();
      free_.pop_back();
    } else {
      void* base = ::mmap(nullptr, MappingBytes(), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (base == MAP_FAILED) {
        Fatal(
            "out of memory for the stacks of GPU threads (too many threads per block for the "
            "memory limit?)");
      }
      ::mprotect(base, PageSize(), PROT_NONE);
      stack = {.base = static_cast<char*>(base),
               .color = static_cast<uint32_t>(mapped_.size() % kStackColors)};
      // In address order: Fill finds adjacent mappings next to each other.
      mapped_.insert(std::upper_bound(mapped_.begin(), mapped_.end(), base), base);
    }
    // The top is `color` cache lines below the mapping's end: a block's
    // fibers switch in turn, and with every top at the same offset in its
    // page their saved registers and hottest frames all fell in one L1 set.
    // Measured with the cache-line allocations below in place: row_sum's
    // timed runs 3 % shorter and its self-speedups 0.996-1.011 against
    // 0.951-0.990 (5 evaluations each, alternating). At least `bytes_` stay
    // usable.
    boost::context::stack_context context;
    context.size = bytes_ + PageSize() - stack.color * kCacheLineBytes;
    context.sp = stack.base + MappingBytes() - stack.color * kCacheLineBytes;
    return context;
  }

  void Release(const boost::context::stack_context& context) noexcept {
    // The mapping ends at the first page boundary at or above the top.
    const auto top = reinterpret_cast<uintptr_t>(context.sp);
    const uintptr_t end = RoundUp(top, PageSize());
    free_.push_back({.base = reinterpret_cast<char*>(end - MappingBytes()),
                     .color = static_cast<uint32_t>((end - top) / kCacheLineBytes)});
  }

  // Whether `address` lies in one of the guard pages: a frame outgrew its
  // stack (the host compile probes every page of a large frame). From a
  // fault handler: no lock, no allocation.
  bool GuardPageHolds(uint64_t address) const {
    for (void* base : mapped_) {
      const auto guard = reinterpret_cast<uint64_t>(base);
      if (address >= guard && address < guard + PageSize()) return true;
    }
    return false;
  }
  size_t bytes() const { return bytes_; }

  // Between runs (no stack in use): every page of every stack that a fiber
  // touched is filled with `fill` (zeros: StartRunAfresh). A kernel could otherwise keep what it
  // wrote in an uninitialised local (a 64 Ki-entry lookup table, a count
  // of the runs that tells the timed runs from the correctness cases) for
  // the next run, whose fibers get the same stacks at the same addresses
  // (sweep 38, r03, r14, r15). Pages never touched stay unmapped (zeros).
  // The timing runner leaves this to its worker (FiberStackRanges), which
  // zeros the same pages from outside while the runner stands still.
  void Fill(unsigned char fill) {
    const size_t page = PageSize();
    const size_t mapping = MappingBytes();
    // mincore over each run of adjacent mappings, in chunks. A call per
    // stack measured about the same in cpu_backend_bench: the fill costs
    // ~1-1.4 ms per run for 512 stacks of 512 KiB. No allocation: a kernel
    // may scan the heap, and the fill must not change it.
    constexpr size_t kChunkPages = 4096;
    unsigned char resident[kChunkPages];
    ForEachRunOfMappings([&](uintptr_t begin, uintptr_t end) {
      for (uintptr_t chunk = begin; chunk < end; chunk += kChunkPages * page) {
        const size_t bytes = std::min<size_t>(kChunkPages * page, end - chunk);
        if (::mincore(reinterpret_cast<void*>(chunk), bytes, resident) != 0) {
          // Unknown: every page of the chunk but the guard pages (never
          // accessible), committed, between runs only.
          for (uintptr_t p = chunk; p < chunk + bytes; p += page) {
            if ((p - begin) % mapping != 0) std::memset(reinterpret_cast<char*>(p), fill, page);
          }
          continue;
        }
        // Guard pages are never resident.
        for (size_t p = 0; p < bytes / page; ++p) {
          if (resident[p] & 1) std::memset(reinterpret_cast<char*>(chunk + p * page), fill, page);
        }
      }
    });
  }

  // Calls `visit(begin, end)` for each run of adjacent stack mappings
  // (guard pages included), in address order: mmap hands them out next to
  // each other, so there are few.
  template <typename Visit>
  void ForEachRunOfMappings(Visit visit) const {
    const size_t mapping = MappingBytes();
    const auto at = [&](size_t k) { return reinterpret_cast<uintptr_t>(mapped_[k]); };
    for (size_t first = 0; first < mapped_.size();) {
      size_t last = first;
      while (last + 1 < mapped_.size() && at(last + 1) == at(last) + mapping) ++last;
      visit(at(first), at(last) + mapping);
      first = last + 1;
    }
  }

 private:
  // Guard page, the stack's `bytes_` and one page of room for the color.
  size_t MappingBytes() const { return bytes_ + 2 * PageSize(); }

  void UnmapAll() noexcept {
    for (void* base : mapped_) ::munmap(base, MappingBytes());
    mapped_.clear();
    free_.clear();
  }

  struct Stack {
    char* base = nullptr;  // the mapping, guard page first
    uint32_t color = 0;    // the top is this many cache lines below the end
  };
  static constexpr uint32_t kStackColors = 64;  // a 4 KiB page's cache lines

  size_t bytes_;
  LineVector<void*> mapped_;
  LineVector<Stack> free_;
};

// Boost.Context's StackAllocator concept over a StackPool.
struct PooledStack {
  StackPool* pool;
  boost::context::stack_context allocate() { return pool->Allocate(); }
  void deallocate(boost::context::stack_context& context) noexcept { pool->Release(context); }
};

// GridJob::store_points_drawn: grids of at least this many blocks.
constexpr uint64_t kDrawnStorePointsMinBlocks = 8;
// BlockExecutor::DrawQuietPoints: at most 2^(this + 1) - 1 quiet points.
constexpr uint64_t kMostQuietPointsLog2 = 18;

struct GridJob {
  const kerneleval_cpu_launch* launch = nullptr;
  kerneleval_cpu_thread_fn fn = nullptr;
  void* closure = nullptr;
  uint64_t total_blocks = 0;
  size_t stack_bytes = 0;  // [bytes] per fiber
  ThreadOrder thread_order = ThreadOrder::kForward;
  bool store_points = true;  // an interleaved build's store points yield
  // In a grid of at least kDrawnStorePointsMinBlocks blocks with store
  // points, each store point yields in 7 of 8 times, drawn per point. A
  // kernel that probed the schedule (a racy shared increment counts 1 when
  // every increment yields) took a racy read-modify-write path only where
  // it found no store points, which a whole case's schedule made safe
  // (sweep 6, x05b); drawn per point, a probe finds a mixture and the racy
  // path runs where stores yield. Small grids yield at every point, so a
  // one-block race is caught every time. In such a grid, one block in four
  // (drawn) also lets a drawn number of its first store and spin points
  // pass (BlockExecutor::quiet_points_left_).
  bool store_points_drawn = false;
  // Every block lets a drawn number of its first store and spin points pass:
  // a grid under kDrawnStorePointsMinBlocks blocks in a case whose schedule
  // says so (SetCaseSchedule's quiet_small_grids). A kernel whose grids are
  // all small probed the schedule and took a racy path only where its
  // threads did not interleave (session 35's s35a, 4 blocks); the other
  // store-point cases still switch at every point.
  bool quiet_every_block = false;
  // Store and spin points of a block of this kernel on this shape in an
  // earlier case without store points (the most of a launch's
  // most_block_points; 0: none). There its threads never interleave, as in
  // the timed build and in a quiet stretch, so a kernel taking another
  // path where it finds them interleaving (atomics, which are no points;
  // or extra points, to stretch the draws) cannot move this without moving
  // its timed runs too. DrawQuietPoints draws from 1 to this (or, where 0,
  // to most_block_points) as often as from its octaves.
  uint64_t block_points_seen = 0;
  std::atomic<uint64_t> most_block_points{0};  // of this launch's blocks ended so far
  uint64_t schedule_seed = 0;                  // the draws' seed, from the OS's randomness
  // kerneleval_cpu_block_info::clock_start and globaltimer_start [ns].
  int64_t clock_start = 0;
  uint64_t globaltimer_start = 0;
  // kerneleval_cpu_thread_state::set_multiplier for this launch (odd).
  uint64_t set_multiplier = 0x9E3779B97F4A7C15ull;
  // A warp whose operation completes goes on before the threads already
  // ready (SetCaseSchedule's odd cases).
  bool warps_run_ahead = false;
  // Blocks are taken in index order, x fastest, or with x slowest: then the
  // blocks of one blockIdx.x (a row's split-K or split-row parts, grid
  // dim3(ROWS, SPLITS)) run side by side on the pool's OS threads. In x
  // order they were gridDim.x apart and never overlapped, so partial sums
  // added with a plain `+=` instead of atomicAdd passed, as they do not on a
  // GPU, where a small grid's blocks are all resident at once (sweep 6).
  // With x slowest, then y, then z, a 1-D grid's order is unchanged; in a
  // grid of more than one row, a block waiting for the block before it in
  // index order (x fastest: a chained scan over the grid) may wait for one
  // taken much later, so such grids are rescued as reversed ones are (below;
  // up to kMaxRescuedBlocks blocks, whose claims a bitmap records).
  bool x_slowest = false;
  // Blocks are claimed from the last (SetCaseSchedule's cases 1, 5, 9, ...).
  // A block that reads another's output with no flag or second launch
  // between them, and is right only because the other block ran first,
  // passed in index order: blocks ROWS apart in a 1-D grid, each scanning
  // half a row, the second reading the first's last output once (sweep 6,
  // x12; on a GPU both run at once). A block waiting for a lower block
  // (a chained scan spinning on block x - 1's flag, right on a GPU, which
  // dispatches blocks in index order) would wait for ever here, every
  // thread holding such a block: when no block has ended for
  // kStallBeforeRescue, the pool's rescuer claims blocks from the first up
  // (ThreadPool::Run).
  bool blocks_reversed = false;
  // Blocks are claimed in a shuffled order after the first
  // `shuffle_after` in index order (SetCaseSchedule's cases 0, 4, 8, ...).
  // Taking blocks from the last left two ways to read another block's output
  // unwaited (sweep 6): the last blocks waited properly while the others did
  // not, so that the threads held by those waiting were released only after
  // the rescuer had run every block they read (x12b); and a kernel noting
  // which block started first waited only where it was not block 0 (x12c).
  // Here block 0 starts first and a block's partner comes before or after
  // it by chance, so both read unwritten outputs. Rescued as a reversed grid
  // is (a chained scan's block may wait for one taken much later): grids up
  // to kMaxRescuedBlocks blocks; larger ones keep index order.
  bool blocks_shuffled = false;
  uint64_t shuffle_after = 1;           // blocks in index order first, at least 1
  uint64_t shuffle_key = 0;             // ShuffledBlock's permutation, drawn per launch
  uint64_t sequence = 0;                // launches so far in this process, this one's
  std::atomic<uint64_t> next_block{0};  // claims so far, when not `rescued`
  // Whether the runner's thread watches the grid and may start the rescuer
  // (blocks_reversed, blocks_shuffled, or x_slowest in a grid of more than
  // one row). Claims then go through `claims`: in a reversed grid, from the
  // last and, by the rescuer, from the first; shuffled or with x slowest, in
  // that order and, by the rescuer, in index order, `claimed` recording
  // which (by index).
  bool rescued = false;
  // Whether the grid's blocks run the cross-block race check
  // (Globals::race, SetRaceCheckedMemory).
  bool race_checked = false;
  std::mutex claims;
  uint64_t claimed_from_last = 0;
  uint64_t claimed_from_first = 0;
  std::vector<bool> claimed;
  uint64_t next_in_order = 0;
  uint64_t next_by_index = 0;
  std::atomic<uint64_t> blocks_ended{0};
};

// Slots of the race check's table of stores (Globals::race), by 4-byte
// granule: 16 MiB (4 words a slot), touched only where stores land; granules that share a
// slot (drawn per grid, kerneleval_cpu_race_check::slot_multiplier) keep
// the later store's record (a race missed, never one made up).
constexpr uint64_t kRaceSlotBits = 19;
constexpr uint64_t kRaceSlots = uint64_t{1} << kRaceSlotBits;

// GridJob::x_slowest: the largest grid whose claims a bitmap records, for the
// rescuer [blocks] (2 MiB of bits); a larger grid has none.
constexpr uint64_t kMaxRescuedBlocks = uint64_t{1} << 24;

// GridJob::rescued: how long a grid may go without a block ending
// before the rescuer starts. Measured by the runner's thread, which waits
// for the pool: a block may wait in a loop that never enters the scheduler
// (`cuda::atomic_ref::load`, `__ldcg`).
constexpr auto kStallBeforeRescue = std::chrono::milliseconds(20);

// blockIdx of the block `linear` (x fastest) of `launch`'s grid.
kerneleval_cpu_dim3 BlockIndex(const kerneleval_cpu_launch& launch, uint64_t linear) {
  const uint64_t gx = launch.grid.x, gy = launch.grid.y;
  return {static_cast<uint32_t>(linear % gx), static_cast<uint32_t>((linear / gx) % gy),
          static_cast<uint32_t>(linear / (gx * gy))};
}

// The index (x fastest) of the k-th block in an x-slowest order.
uint64_t XSlowestBlock(const GridJob& job, uint64_t k) {
  const uint64_t gx = job.launch->grid.x, gy = job.launch->grid.y, gz = job.launch->grid.z;
  const uint64_t x = k / (gy * gz), y = (k / gz) % gy, z = k % gz;
  return x + gx * (y + gy * z);
}

// A permutation of [0, n) drawn by `key`: a keyed bijection of the
// smallest power-of-two range holding n (odd multiplies, xor-shifts and
// adds, each invertible there), applied again while the value falls outside
// [0, n) (cycle walking: each value's walk ends at a distinct one, in under
// 2 steps on average). O(1) memory for grids of millions of blocks.
uint64_t Permute(uint64_t value, uint64_t n, uint64_t key) {
  if (n <= 1) return 0;
  const int bits = std::bit_width(n - 1);
  const uint64_t mask = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  const int shift = std::max(1, bits / 2);
  do {
    for (int round = 0; round < 3; ++round) {
      value = (value * ((key >> (round * 16)) | 1)) & mask;
      value ^= value >> shift;
      value = (value + (key >> (round * 8 + 40))) & mask;
    }
  } while (value >= n);
  return value;
}

// The index (x fastest) of the k-th block in a shuffled order
// (GridJob::blocks_shuffled).
uint64_t ShuffledBlock(const GridJob& job, uint64_t k) {
  if (k < job.shuffle_after) return k;
  return job.shuffle_after +
         Permute(k - job.shuffle_after, job.total_blocks - job.shuffle_after, job.shuffle_key);
}

// The index (x fastest) of the k-th block an executor claims.
uint64_t BlockInClaimOrder(const GridJob& job, uint64_t k) {
  if (job.blocks_shuffled) return ShuffledBlock(job, k);
  return job.x_slowest ? XSlowestBlock(job, k) : k;
}

// The index (x fastest) of the next block of `job` for an executor, false
// when none is left; the rescuer takes them in index order.
bool ClaimBlock(GridJob& job, bool rescuer, uint64_t* block) {
  if (!job.rescued) {
    const uint64_t k = job.next_block.fetch_add(1);
    if (k >= job.total_blocks) return false;
    *block = BlockInClaimOrder(job, k);
    return true;
  }
  std::lock_guard<std::mutex> lock(job.claims);
  if (job.blocks_reversed) {
    if (job.claimed_from_first + job.claimed_from_last >= job.total_blocks) return false;
    *block = rescuer ? job.claimed_from_first++ : job.total_blocks - 1 - job.claimed_from_last++;
    return true;
  }
  uint64_t& cursor = rescuer ? job.next_by_index : job.next_in_order;
  while (cursor < job.total_blocks) {
    const uint64_t index = rescuer ? cursor : BlockInClaimOrder(job, cursor);
    ++cursor;
    if (!job.claimed[index]) {
      job.claimed[index] = true;
      *block = index;
      return true;
    }
  }
  return false;
}

// The interleaved build's per-thread state (kerneleval_cpu_abi.h): static
// TLS of the process, at a fixed offset from every thread's pointer.
thread_local kerneleval_cpu_thread_state tls_interleave_state{
    .epoch = 1,
    .loads = {},
    .stack_top = 0,
    .failed_cas_address = 0,
    .failed_cas_expected = 0,
    .failed_cas_found = 0,
    .set_multiplier = 0x9E3779B97F4A7C15ull,
    .race_check = nullptr,
    .block = 0,
    .acquired_at = 0,
    .pending_wait_address = 0,
    .released_at = 0,
    .waited_at = 0,
    .split_read_address = 0,
    .split_read_writer = 0,
    .split_read_waited_at = 0,
    .shared_static_begin = 0,
    .shared_static_bytes = 0,
    .shared_dynamic_begin = 0,
    .thread_idx = {0, 0, 0},
    .block_idx = {0, 0, 0},
    .block_dim = {1, 1, 1},
    .grid_dim = {1, 1, 1}};

// An OS thread's dynamic shared memory: `bytes` reserved at `base`, the
// first `accessible` of them readable and writable (whole pages, from the
// last launch that ran blocks on the thread: launch number `sequence`, which
// asked for `requested`).
struct Arena {
  char* base = nullptr;
  size_t bytes = 0;
  size_t accessible = 0;
  size_t requested = 0;
  uint64_t sequence = 0;
  StackPool* stacks = nullptr;  // the thread's fiber stacks (StartRunAfresh fills them)
};
// Fills an arena's accessible bytes past a launch's request: a write there
// is found after the grid (kSharedSlackByte: reads give NaN and -1).
constexpr unsigned char kSharedSlackByte = 0xff;

// [bytes] The run's shared-memory fill (Globals::shared_fill): the most
// dynamic shared memory a launch may ask for, from any of the offsets a
// block draws (multiples of 64 below kSharedFillSlideBytes).
constexpr size_t kSharedFillSlideBytes = size_t{64} << 10;
constexpr size_t kSharedFillBytes = size_t{kMaxDynamicSharedBytes} + kSharedFillSlideBytes;

// Writes the first `words` 64-bit words of `seed`'s shared-memory fill
// (data/shared_fill.h) at `out`.
void WriteSharedFill(uint64_t seed, void* out, size_t words) {
  for (size_t i = 0; i < words; ++i) {
    const uint64_t word = data::SharedFillWord(seed, i);
    std::memcpy(static_cast<char*>(out) + i * sizeof(word), &word, sizeof(word));
  }
}

// Draws the run's shared-memory fill from `seed`.
void DrawSharedFill(uint64_t seed, std::vector<uint64_t>* fill) {
  fill->resize(kSharedFillBytes / sizeof(uint64_t));
  WriteSharedFill(seed, fill->data(), fill->size());
}

// Runs blocks on one OS thread; the ABI's fiber-side entry points act on the
// executor of the calling OS thread.
class alignas(kCacheLineBytes) BlockExecutor {
 public:
  BlockExecutor()
      : stacks_(globals->options.fiber_stack_bytes),
        shared_bytes_(RoundUp(kMaxDynamicSharedBytes, PageSize())) {
    // Dynamic shared memory: one arena per OS thread (its address is cached
    // by the submission's rewritten `extern __shared__` declarations), with a
    // guard page after it.
    void* base = ::mmap(nullptr, shared_bytes_ + PageSize(), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) Fatal("out of memory for shared memory");
    ::mprotect(static_cast<char*>(base) + shared_bytes_, PageSize(), PROT_NONE);
    dynamic_shared_ = base;
    threads_.resize(kMaxThreadsPerBlock);
    std::lock_guard<std::mutex> lock(ArenasMutex());
    Arenas().push_back({.base = static_cast<char*>(dynamic_shared_),
                        .bytes = shared_bytes_,
                        .accessible = shared_bytes_,
                        .stacks = &stacks_});
  }
  BlockExecutor(const BlockExecutor&) = delete;
  BlockExecutor& operator=(const BlockExecutor&) = delete;
  BlockExecutor(BlockExecutor&&) = delete;
  BlockExecutor& operator=(BlockExecutor&&) = delete;
  ~BlockExecutor() {
    {
      std::lock_guard<std::mutex> lock(ArenasMutex());
      auto& arenas = Arenas();
      arenas.erase(
          std::remove_if(arenas.begin(), arenas.end(),
                         [&](const Arena& arena) { return arena.base == dynamic_shared_; }),
          arenas.end());
    }
    ::munmap(dynamic_shared_, shared_bytes_ + PageSize());
  }

  const StackPool& stacks() const { return stacks_; }

  // Every executor's dynamic shared arena.
  static std::mutex& ArenasMutex() {
    static std::mutex mutex;
    return mutex;
  }
  static std::vector<Arena>& Arenas() {
    static std::vector<Arena> arenas;
    return arenas;
  }

  // Before this thread runs blocks of `job`: only the dynamic shared memory
  // the launch asked for stays accessible (whole pages; the rest of the
  // page is filled with kSharedSlackByte, checked after the grid). A
  // kernel using more, say a forgotten third <<<>>> value, faulted on a GPU
  // and passed here.
  void PrepareLaunch(const GridJob& job) {
    const size_t requested = job.launch->dynamic_shared_bytes;
    const size_t accessible = RoundUp(requested, PageSize());
    char* base = static_cast<char*>(dynamic_shared_);
    std::lock_guard<std::mutex> lock(ArenasMutex());
    Arena& arena = *std::find_if(Arenas().begin(), Arenas().end(),
                                 [&](const Arena& a) { return a.base == base; });
    if (accessible != arena.accessible) {
      if (accessible > 0) ::mprotect(base, accessible, PROT_READ | PROT_WRITE);
      if (accessible < shared_bytes_) {
        ::mprotect(base + accessible, shared_bytes_ - accessible, PROT_NONE);
      }
      arena.accessible = accessible;
    }
    std::memset(base + requested, kSharedSlackByte, accessible - requested);
    arena.requested = requested;
    arena.sequence = job.sequence;
    tls_interleave_state.race_check = job.race_checked ? &globals->race : nullptr;
  }

  // Runs block `linear_block` of `job`; returns its store and spin points.
  uint64_t RunBlock(const GridJob& job, uint64_t linear_block) {
    const kerneleval_cpu_launch& launch = *job.launch;
    job_ = &job;
    stacks_.Resize(job.stack_bytes);
    info_.grid_dim = launch.grid;
    info_.block_dim = launch.block;
    info_.block_idx = BlockIndex(launch, linear_block);
    n_ = launch.block.x * launch.block.y * launch.block.z;
    order_ = job.thread_order;
    store_points_ = job.store_points;
    // Each block draws its own (GridJob::store_points_drawn): splitmix64
    // of the launch's seed and the block.
    draw_state_ = job.schedule_seed + data::kSplitMix64Increment * (linear_block + 1);
    const bool quiet = job.quiet_every_block || (job.store_points_drawn && DrawSplitMix() % 4 == 0);
    const uint64_t points_seen = job.block_points_seen > 0
                                     ? job.block_points_seen
                                     : job.most_block_points.load(std::memory_order_relaxed);
    quiet_points_left_ = quiet ? DrawQuietPoints(points_seen) : 0;
    points_ = 0;
    warps_run_ahead_ = job.warps_run_ahead;
    for (uint32_t t = 0; t < n_; ++t) threads_[t].state = kUnstarted;
    const uint32_t warps = (n_ + 31) / 32;
    warp_waiting_.assign(warps, 0);
    warp_required_.assign(warps, 0);
    warp_live_.assign(warps, 0xffffffffu);
    if (n_ % 32) warp_live_[warps - 1] = (1u << (n_ % 32)) - 1;
    complete_warps_.clear();
    // The loads an interleaved build noted are another block's.
    ++tls_interleave_state.epoch;
    tls_interleave_state.set_multiplier = job.set_multiplier;
    tls_interleave_state.block = linear_block;
    tls_interleave_state.acquired_at = 0;
    tls_interleave_state.pending_wait_address = 0;
    tls_interleave_state.released_at = 0;
    tls_interleave_state.waited_at = 0;
    tls_interleave_state.split_read_address = 0;
    // What the block has not written reads as NaN / -1: its static
    // __shared__ variables (the module's zero-initialised thread-local data)
    // are filled as the block starts (the prelude's SetBlock), its dynamic
    // shared memory here. Zeros
    // (a fresh arena) or the last block's values hid reads of slots no
    // thread wrote: a block reduction summing 32 warp slots of which 8 were
    // written passed (sweep 4).
    info_.serial = ++blocks_started_;
    info_.clock_start = job.clock_start;
    info_.globaltimer_start = job.globaltimer_start;
    info_.shared_fill = nullptr;
    info_.shared_fill_bytes = 0;
    info_.shared_left_over =
        globals->shared_left_over && run_of_last_block_ == globals->runs_started;
    run_of_last_block_ = globals->runs_started;
    if (!globals->shared_fill.empty()) {
      // From an offset drawn per block (64-byte steps): blocks do not all
      // find the same values at the same addresses.
      const uint64_t offset =
          64 * (data::SplitMix64Finalizer(job.schedule_seed ^
                                          (linear_block + 1) * 0xd1b54a32d192ed03ull) %
                (kSharedFillSlideBytes / 64));
      info_.shared_fill = reinterpret_cast<const char*>(globals->shared_fill.data()) + offset;
      info_.shared_fill_bytes = kSharedFillBytes - offset;
    }
    if (globals->options.poison_shared_per_block && info_.shared_left_over == 0) {
      if (info_.shared_fill != nullptr) {
        std::memcpy(dynamic_shared_, info_.shared_fill, launch.dynamic_shared_bytes);
      } else {
        std::memset(dynamic_shared_, kSharedSlackByte, launch.dynamic_shared_bytes);
      }
    }
    yielded_.clear();
    spinning_.clear();
    next_unstarted_ = 0;
    done_ = 0;
    at_barrier_ = 0;
    at_warp_ = 0;
    at_active_mask_ = 0;
    warp_active_mask_.assign(warps, 0);
    round_left_ = 0;
    round_started_ = false;
    settled_check_arrivals_ = arrivals_;
    active_runner_ = kNone;
    ready_.clear();
    ready_head_ = 0;

    // Order: released threads first, then a warp whose lanes have all
    // arrived (at a warp operation, or at __activemask with the rest of the
    // warp waiting elsewhere), then new threads. A warp thus runs its
    // shuffles with only its 32 fibers in use (their stacks stay in cache)
    // before the next warp starts; barriers still wait for the whole block.
    // Then threads that yielded (store points, __nanosleep), then spinners
    // one at a time; lanes at __activemask whose warp still has some of
    // those are answered as they stand after a round of them in which no
    // thread arrived anywhere (they may be waiting for those lanes).
    while (done_ < n_) {
      const bool warp_first = warps_run_ahead_ && !complete_warps_.empty();
      if (!warp_first && ready_head_ < ready_.size()) {
        const uint32_t t = ready_[ready_head_++];
        if (ready_head_ == ready_.size()) {
          ready_.clear();
          ready_head_ = 0;
        }
        Resume(t);
      } else if (!complete_warps_.empty()) {
        const uint32_t w = complete_warps_.back();
        complete_warps_.pop_back();
        if (WarpComplete(w)) CompleteWarp(w);
      } else if (ReleaseSettledActiveMasks()) {
      } else if (next_unstarted_ < n_) {
        StartRunner();
      } else if (at_active_mask_ > 0 && RoundWithoutArrivals()) {
        ReleaseAllActiveMasks();
      } else if (!yielded_.empty()) {
        // One spinner first, then the threads that yielded: resumed before
        // any spinner ran, a thread held at a store point had finished its
        // read-modify-write before the next thread left a loop of spin
        // points, so threads entering a racy update one after another
        // (each after a scan of volatile loads) never interleaved there and
        // a racy block reduction passed (sweep 40, e2c, 15x). One spinner
        // per round keeps a lock's holder ahead of its many waiters.
        if (!spinning_.empty()) {
          if (round_left_ > 0) --round_left_;
          ready_.push_back(spinning_.front());
          spinning_.pop_front();
        }
        round_left_ -= std::min<size_t>(round_left_, yielded_.size());
        for (uint32_t t : yielded_) ready_.push_back(t);
        yielded_.clear();
      } else if (!spinning_.empty()) {
        if (round_left_ > 0) --round_left_;
        ready_.push_back(spinning_.front());
        spinning_.pop_front();
      } else if (at_active_mask_ > 0) {
        ReleaseAllActiveMasks();
      } else if (!Release()) {
        Fatal(DeadlockMessage());
      }
    }
    return points_;
  }

  // ---- Fiber side (called by the submission through the ABI).
  uint32_t NextThread() {
    const uint32_t t = current_;
    threads_[t].state = kDone;
    ++done_;
    ++arrivals_;
    // An exited lane no longer holds back its warp's operations.
    const uint32_t w = t / 32;
    warp_live_[w] &= ~(1u << (t % 32));
    if (warp_waiting_[w] && WarpComplete(w)) complete_warps_.push_back(w);
    if (t == active_runner_) {
      if (next_unstarted_ < n_) {
        const uint32_t next = ThreadToStart(next_unstarted_++);
        active_runner_ = next;
        current_ = next;
        threads_[next].state = kRunning;
        return next;
      }
      active_runner_ = kNone;
    }
    return UINT32_MAX;
  }

  int32_t Barrier(uint32_t kind, int32_t predicate) {
    Thread& thread = threads_[current_];
    thread.state = kAtBarrier;
    thread.op.kind = kind;
    thread.op.predicate = predicate;
    ++at_barrier_;
    ++arrivals_;
    Suspend();
    return static_cast<int32_t>(thread.result);
  }

  uint64_t Warp(const kerneleval_cpu_warp_op& op) {
    Thread& thread = threads_[current_];
    ++arrivals_;
    if (op.kind == KERNELEVAL_CPU_WARP_ACTIVE_MASK) {
      thread.state = kAtActiveMask;
      thread.op = op;
      warp_active_mask_[current_ / 32] |= 1u << (current_ % 32);
      ++at_active_mask_;
      Suspend();
      return thread.result;
    }
    thread.state = kAtWarp;
    thread.op = op;
    const uint32_t w = current_ / 32;
    warp_waiting_[w] |= 1u << (current_ % 32);
    warp_required_[w] |= op.mask;
    if (WarpComplete(w)) complete_warps_.push_back(w);
    ++at_warp_;
    Suspend();
    return thread.result;
  }

  uint64_t DrawSplitMix() { return data::SplitMix64Next(draw_state_); }

  // 1 to 2^19 - 1, each power of two as likely to hold it: a probe of any
  // length finds no switch in some blocks, and the work after it does.
  // Three times in four, where a block of this kernel has ended
  // (`points_seen` its store and spin points), 1 to points_seen, each as
  // likely: a probe of P points before R points of racy work is then
  // caught with a chance of about R / (P + R) per block, where the octaves
  // give about log2((P + R) / P) / 19 (s35a's 4 blocks of 256 threads on
  // 100,003 bytes: 256 probe points and ~25,000 racy ones a block, ~0.99
  // against ~0.35). The octaves stay for the blocks that start before any
  // has ended.
  uint64_t DrawQuietPoints(uint64_t points_seen) {
    if (points_seen > 1 && DrawSplitMix() % 4 != 0) return 1 + DrawSplitMix() % points_seen;
    const uint64_t octave = DrawSplitMix() % (kMostQuietPointsLog2 + 1);
    return (uint64_t{1} << octave) + DrawSplitMix() % (uint64_t{1} << octave);
  }

  void Yield() {
    threads_[current_].state = kReady;
    yielded_.push_back(current_);  // runs again once nothing else can
    Suspend();
  }

  // A store or spin point of an interleaved build, only on a block's thread
  // (static initialisers and launchers store too). A spinner runs again
  // when nothing else can, one at a time: a lock's holder held at a store
  // point goes on before every waiter has retried (with 1,024 threads on
  // one lock, each critical section cost a round of 1,023 failed tries).
  void Interleave(uint32_t kind) {
    if (!on_thread_) return;
    ++points_;
    if (quiet_points_left_ > 0) {
      --quiet_points_left_;
      return;
    }
    if (kind != KERNELEVAL_CPU_INTERLEAVE_SPIN) {
      if (store_points_ && (!job_->store_points_drawn || DrawSplitMix() % 8 != 0)) Yield();
      return;
    }
    threads_[current_].state = kReady;
    spinning_.push_back(current_);
    Suspend();
  }

  void* DynamicShared() const { return dynamic_shared_; }

 private:
  enum State : uint8_t { kUnstarted, kRunning, kReady, kAtBarrier, kAtWarp, kAtActiveMask, kDone };

  struct Thread {
    State state = kUnstarted;
    kerneleval_cpu_warp_op op{};
    uint64_t result = 0;
    boost::context::fiber fiber;  // the suspended thread's continuation
  };

  // On a fiber: back to the scheduler loop in RunBlock until resumed.
  void Suspend() { scheduler_ = std::move(scheduler_).resume(); }

  // After a fiber switched back: a suspended thread keeps its fiber; an
  // ended fiber has nothing to keep.
  void AfterSwitch(boost::context::fiber&& fiber) {
    on_thread_ = false;
    if (!fiber) return;
    threads_[current_].fiber = std::move(fiber);
    if (current_ == active_runner_) active_runner_ = kNone;  // it now belongs to that thread
  }

  void StartRunner() {
    const uint32_t first = ThreadToStart(next_unstarted_++);
    active_runner_ = first;
    current_ = first;
    threads_[first].state = kRunning;
    boost::context::fiber fiber(std::allocator_arg, PooledStack{&stacks_},
                                [this, first](boost::context::fiber&& scheduler) {
                                  scheduler_ = std::move(scheduler);
                                  job_->fn(job_->closure, &info_, first);
                                  return std::move(scheduler_);
                                });
    on_thread_ = true;
    AfterSwitch(std::move(fiber).resume());
  }

  // The thread that starts k-th (k < n_) in this block's order.
  uint32_t ThreadToStart(uint32_t k) const {
    switch (order_) {
      case ThreadOrder::kForward:
        return k;
      case ThreadOrder::kReverse:
        return n_ - 1 - k;
      case ThreadOrder::kLanesReversedInWarp: {
        const uint32_t warp_base = k / 32 * 32;
        const uint32_t warp_size = std::min<uint32_t>(32, n_ - warp_base);
        return warp_base + (warp_size - 1 - (k - warp_base));
      }
    }
    return k;
  }

  void Resume(uint32_t t) {
    current_ = t;
    threads_[t].state = kRunning;
    on_thread_ = true;
    AfterSwitch(std::move(threads_[t].fiber).resume());
  }

  // Every lane named by the waiting lanes' masks has arrived or exited.
  bool WarpComplete(uint32_t w) const {
    return (warp_required_[w] & warp_live_[w] & ~warp_waiting_[w]) == 0;
  }

  bool Release() {
    bool released = false;
    if (at_warp_ > 0) {
      for (uint32_t w = 0; w < warp_waiting_.size(); ++w) {
        if (warp_waiting_[w] == 0 || !WarpComplete(w)) continue;  // someone is missing
        CompleteWarp(w);
        released = true;
      }
      if (released) return true;
    }
    if (at_barrier_ > 0 && at_barrier_ == n_ - done_) {
      CompleteBarrier();
      return true;
    }
    return false;
  }

  // __activemask() in warp `w`: each waiting lane gets the lanes of its
  // warp waiting at the same call (op.value), the lanes of its branch.
  // Lanes elsewhere wait at another call, a warp operation or a barrier, or
  // have exited (a GPU would not count them active either: a lane that left
  // a loop early and waits at the __syncthreads after it).
  void ReleaseActiveMasks(uint32_t w) {
    const uint32_t waiting = warp_active_mask_[w];
    if (waiting == 0) return;
    const uint32_t base = w * 32;
    for (uint32_t lanes = waiting; lanes; lanes &= lanes - 1) {
      const uint32_t t = base + std::countr_zero(lanes);
      uint32_t same_call = 0;
      for (uint32_t others = waiting; others; others &= others - 1) {
        const uint32_t other = std::countr_zero(others);
        if (threads_[base + other].op.value == threads_[t].op.value) same_call |= 1u << other;
      }
      threads_[t].result = same_call;
    }
    ReadyInLaunchOrder(base, waiting);
    at_active_mask_ -= static_cast<uint32_t>(std::popcount(waiting));
    warp_active_mask_[w] = 0;
    round_started_ = false;
  }

  void ReleaseAllActiveMasks() {
    for (uint32_t w = 0; w < warp_active_mask_.size(); ++w) ReleaseActiveMasks(w);
  }

  // Answers the lanes at __activemask of every warp whose other lanes all
  // wait elsewhere (a warp operation, a barrier) or have exited: none of
  // them can arrive without a release. Not waiting for the whole block, so
  // that __activemask is no barrier between warps.
  bool ReleaseSettledActiveMasks() {
    // A warp settles only when one of its threads arrives somewhere.
    if (at_active_mask_ == 0 || settled_check_arrivals_ == arrivals_) return false;
    settled_check_arrivals_ = arrivals_;
    bool released = false;
    for (uint32_t w = 0; w < warp_active_mask_.size(); ++w) {
      if (warp_active_mask_[w] == 0) continue;
      const uint32_t base = w * 32, end = std::min(base + 32, n_);
      bool settled = true;
      for (uint32_t t = base; t < end && settled; ++t) {
        const State state = threads_[t].state;
        settled =
            state == kAtActiveMask || state == kAtWarp || state == kAtBarrier || state == kDone;
      }
      if (!settled) continue;
      ReleaseActiveMasks(w);
      released = true;
    }
    return released;
  }

  // Whether the threads that yielded or spin have all run once since the
  // last call that began a round, and none arrived anywhere meanwhile.
  bool RoundWithoutArrivals() {
    if (round_left_ > 0) return false;
    if (round_started_ && round_arrivals_ == arrivals_) return true;
    round_started_ = true;
    round_arrivals_ = arrivals_;
    round_left_ = yielded_.size() + spinning_.size();
    return round_left_ == 0;
  }

  // Readies the lanes `lanes` of the warp at `base`, in the order the
  // launch started them: ascending in kForward, descending otherwise. With
  // warps_run_ahead_, before the threads already ready: a warp goes on
  // through its warp operations to its next barrier before the others
  // resume, so one that writes shared memory the others still have to read
  // (a reduction array reused without a barrier between) is seen to.
  void ReadyInLaunchOrder(uint32_t base, uint32_t lanes) {
    const size_t first = ready_.size();
    const bool descending = order_ != ThreadOrder::kForward;
    for (; lanes; lanes &= descending ? ~(1u << (31 - std::countl_zero(lanes))) : lanes - 1) {
      const uint32_t lane = descending ? 31 - std::countl_zero(lanes) : std::countr_zero(lanes);
      threads_[base + lane].state = kReady;
      ready_.push_back(base + lane);
    }
    if (warps_run_ahead_) {
      std::rotate(ready_.begin() + static_cast<std::ptrdiff_t>(ready_head_),
                  ready_.begin() + static_cast<std::ptrdiff_t>(first), ready_.end());
    }
  }

  // The lane whose value lane `lane` reads in a shuffle (kind), from CUDA's
  // operands as PTX's shfl.sync decodes them: CUDA passes b = the source
  // lane, delta or lane mask and c = ((32 - width) << 8) | 0x1f (up: no
  // 0x1f); PTX reads b[4:0] and c's fields, whatever the width. A width that
  // is no power of two (24: half the lanes read lane 8 on a GPU) and a
  // delta of 32 or more (33 moves by 1 there) had been taken as 32 and as
  // out of range, so that a kernel could tell the builds apart by them
  // (sweep 38, r18 and r20).
  static uint32_t ShuffleSource(uint32_t kind, uint32_t lane, uint32_t lane_arg, uint32_t width) {
    const uint32_t c = ((32u - width) << 8) | (kind == KERNELEVAL_CPU_WARP_SHFL_UP ? 0u : 0x1fu);
    const uint32_t b = lane_arg & 0x1f;
    const uint32_t segmask = (c >> 8) & 0x1f;
    const uint32_t max_lane = (lane & segmask) | (c & 0x1f & ~segmask);
    const uint32_t min_lane = lane & segmask;
    int64_t j = lane;
    bool in_range = false;
    switch (kind) {
      case KERNELEVAL_CPU_WARP_SHFL_UP:
        j = int64_t{lane} - b;
        in_range = j >= int64_t{max_lane};
        break;
      case KERNELEVAL_CPU_WARP_SHFL_DOWN:
        j = int64_t{lane} + b;
        in_range = j <= int64_t{max_lane};
        break;
      case KERNELEVAL_CPU_WARP_SHFL_XOR:
        j = lane ^ b;
        in_range = j <= int64_t{max_lane};
        break;
      default:  // KERNELEVAL_CPU_WARP_SHFL (idx)
        j = min_lane | (b & ~segmask);
        in_range = j <= int64_t{max_lane};
        break;
    }
    return in_range ? static_cast<uint32_t>(j) : lane;
  }

  void CompleteWarp(uint32_t w) {
    const uint32_t waiting = warp_waiting_[w];
    const uint32_t base = w * 32;
    auto op_of = [&](uint32_t lane) -> const kerneleval_cpu_warp_op& {
      return threads_[base + lane].op;
    };
    uint32_t votes = 0;
    for (uint32_t lanes = waiting; lanes; lanes &= lanes - 1) {
      const uint32_t lane = std::countr_zero(lanes);
      if (op_of(lane).predicate) votes |= 1u << lane;
    }
    for (uint32_t lanes = waiting; lanes; lanes &= lanes - 1) {
      const uint32_t lane = std::countr_zero(lanes);
      const kerneleval_cpu_warp_op& op = op_of(lane);
      const uint32_t members = op.mask & waiting;
      uint32_t source = lane;
      uint64_t result = 0;
      switch (op.kind) {
        case KERNELEVAL_CPU_WARP_SYNC:
          break;
        case KERNELEVAL_CPU_WARP_SHFL:
        case KERNELEVAL_CPU_WARP_SHFL_UP:
        case KERNELEVAL_CPU_WARP_SHFL_DOWN:
        case KERNELEVAL_CPU_WARP_SHFL_XOR:
          source = ShuffleSource(op.kind, lane, static_cast<uint32_t>(op.lane_arg),
                                 static_cast<uint32_t>(op.width));
          break;
        case KERNELEVAL_CPU_WARP_BALLOT:
          result = votes & op.mask;
          break;
        case KERNELEVAL_CPU_WARP_ANY:
          result = (votes & members) != 0;
          break;
        case KERNELEVAL_CPU_WARP_ALL:
          result = (votes & members) == members;
          break;
        case KERNELEVAL_CPU_WARP_REDUCE_ADD:
        case KERNELEVAL_CPU_WARP_REDUCE_MIN_S:
        case KERNELEVAL_CPU_WARP_REDUCE_MAX_S:
        case KERNELEVAL_CPU_WARP_REDUCE_MIN_U:
        case KERNELEVAL_CPU_WARP_REDUCE_MAX_U:
        case KERNELEVAL_CPU_WARP_REDUCE_AND:
        case KERNELEVAL_CPU_WARP_REDUCE_OR:
        case KERNELEVAL_CPU_WARP_REDUCE_XOR:
          result = Reduce(op.kind, members, base);
          break;
        case KERNELEVAL_CPU_WARP_MATCH_ANY: {
          uint32_t same = 0;
          for (uint32_t m = members; m; m &= m - 1) {
            const uint32_t other = std::countr_zero(m);
            if (op_of(other).value == op.value) same |= 1u << other;
          }
          result = same;
          break;
        }
        case KERNELEVAL_CPU_WARP_MATCH_ALL: {
          bool all_same = true;
          for (uint32_t m = members; m; m &= m - 1) {
            if (op_of(std::countr_zero(m)).value != op.value) all_same = false;
          }
          result = all_same ? (uint64_t{members} | (uint64_t{1} << 32)) : 0;
          break;
        }
        default:
          Fatal("unknown warp operation");
      }
      if (op.kind >= KERNELEVAL_CPU_WARP_SHFL && op.kind <= KERNELEVAL_CPU_WARP_SHFL_XOR) {
        // A source lane that does not take part (exited, or not in the
        // mask): CUDA leaves the result undefined; here it is the own value.
        result = (waiting >> source) & 1u ? op_of(source).value : op.value;
      }
      threads_[base + lane].result = result;
    }
    ReadyInLaunchOrder(base, waiting);
    at_warp_ -= static_cast<uint32_t>(std::popcount(waiting));
    warp_waiting_[w] = 0;
    warp_required_[w] = 0;
  }

  uint64_t Reduce(uint32_t kind, uint32_t members, uint32_t base) const {
    bool first = true;
    uint32_t acc = 0;
    for (uint32_t m = members; m; m &= m - 1) {
      const uint32_t v = static_cast<uint32_t>(threads_[base + std::countr_zero(m)].op.value);
      if (first) {
        acc = v;
        first = false;
        continue;
      }
      switch (kind) {
        case KERNELEVAL_CPU_WARP_REDUCE_ADD:
          acc += v;
          break;
        case KERNELEVAL_CPU_WARP_REDUCE_MIN_S:
          acc = static_cast<int32_t>(v) < static_cast<int32_t>(acc) ? v : acc;
          break;
        case KERNELEVAL_CPU_WARP_REDUCE_MAX_S:
          acc = static_cast<int32_t>(v) > static_cast<int32_t>(acc) ? v : acc;
          break;
        case KERNELEVAL_CPU_WARP_REDUCE_MIN_U:
          acc = v < acc ? v : acc;
          break;
        case KERNELEVAL_CPU_WARP_REDUCE_MAX_U:
          acc = v > acc ? v : acc;
          break;
        case KERNELEVAL_CPU_WARP_REDUCE_AND:
          acc &= v;
          break;
        case KERNELEVAL_CPU_WARP_REDUCE_OR:
          acc |= v;
          break;
        case KERNELEVAL_CPU_WARP_REDUCE_XOR:
          acc ^= v;
          break;
        default:
          break;
      }
    }
    return acc;
  }

  void CompleteBarrier() {
    // Every load before the barrier precedes every store after it: an
    // update across it loses nothing by running one thread at a time.
    ++tls_interleave_state.epoch;
    int32_t count = 0;
    for (uint32_t t = 0; t < n_; ++t) {
      if (threads_[t].state == kAtBarrier && threads_[t].op.predicate) ++count;
    }
    const uint32_t waiting = at_barrier_;
    // Resumed in the launch's order, as they started: in index order alone
    // a thread after a barrier always found the writes of the threads
    // before it done (a red team's racy chained scan after a barrier passed
    // every case).
    for (uint32_t k = 0; k < n_; ++k) {
      const uint32_t t = ThreadToStart(k);
      Thread& thread = threads_[t];
      if (thread.state != kAtBarrier) continue;
      switch (thread.op.kind) {
        case KERNELEVAL_CPU_BARRIER_COUNT:
          thread.result = static_cast<uint64_t>(count);
          break;
        case KERNELEVAL_CPU_BARRIER_AND:
          thread.result = static_cast<uint32_t>(count) == waiting;
          break;
        case KERNELEVAL_CPU_BARRIER_OR:
          thread.result = count > 0;
          break;
        default:
          thread.result = 0;
          break;
      }
      thread.state = kReady;
      ready_.push_back(t);
    }
    at_barrier_ = 0;
  }

  std::string DeadlockMessage() const {
    std::string barrier_threads, warp_threads;
    for (uint32_t t = 0; t < n_; ++t) {
      std::string& list = threads_[t].state == kAtBarrier ? barrier_threads : warp_threads;
      if (threads_[t].state != kAtBarrier && threads_[t].state != kAtWarp) continue;
      if (list.size() < 60) list += (list.empty() ? "" : ",") + std::to_string(t);
    }
    char message[512];
    std::snprintf(message, sizeof(message),
                  "deadlock in block (%u,%u,%u): threads [%s] wait at a warp operation whose "
                  "other lanes never arrive, threads [%s] wait at __syncthreads (a warp "
                  "collective or barrier in divergent code?)",
                  info_.block_idx.x, info_.block_idx.y, info_.block_idx.z, warp_threads.c_str(),
                  barrier_threads.c_str());
    return message;
  }

  StackPool stacks_;
  size_t shared_bytes_;
  void* dynamic_shared_ = nullptr;
  uint64_t blocks_started_ = 0;  // kerneleval_cpu_block_info::serial
  // Globals::runs_started when this thread last started a block (~0: never).
  uint64_t run_of_last_block_ = ~uint64_t{0};
  LineVector<Thread> threads_;
  LineVector<uint32_t> warp_waiting_;    // per warp: lanes waiting at a warp operation
  LineVector<uint32_t> warp_required_;   // per warp: union of the waiting lanes' masks
  LineVector<uint32_t> warp_live_;       // per warp: lanes that exist and have not exited
  LineVector<uint32_t> complete_warps_;  // warps whose waiting lanes may be released
  LineVector<uint32_t> yielded_;         // threads in __nanosleep or at a store point
  // Threads at a spin point, oldest first.
  std::deque<uint32_t, CacheLineAllocator<uint32_t>> spinning_;
  bool on_thread_ = false;  // a block's thread runs (not the scheduler)
  LineVector<uint32_t> ready_;
  size_t ready_head_ = 0;
  const GridJob* job_ = nullptr;
  kerneleval_cpu_block_info info_{};
  uint32_t n_ = 0;
  uint32_t next_unstarted_ = 0;  // threads started so far (ThreadToStart maps them)
  ThreadOrder order_ = ThreadOrder::kForward;
  bool store_points_ = true;
  uint64_t draw_state_ = 0;  // splitmix64's state, for drawn store points
  // Store and spin points the running block still lets pass without a
  // switch (GridJob::store_points_drawn). A kernel that probed whether its
  // threads interleave (a racy shared increment reaching blockDim.x, a
  // volatile read of a neighbour's mark finding it unset) took a racy
  // path only where they did not, the timed build (session 34's s34a and
  // s34b); in such a block the probe finds them apart and the racy path
  // then runs where stores switch again
  // (ExploitTest.ProbesWhetherItsThreadsInterleaveAndAddsWithoutAtomicsWhereTheyDoNot).
  uint64_t quiet_points_left_ = 0;
  uint64_t points_ = 0;  // store and spin points the running block has passed
  bool warps_run_ahead_ = false;
  uint32_t done_ = 0;
  uint32_t at_barrier_ = 0;
  uint32_t at_warp_ = 0;
  uint32_t at_active_mask_ = 0;            // threads waiting in __activemask()
  LineVector<uint32_t> warp_active_mask_;  // per warp: lanes waiting in __activemask()
  uint64_t arrivals_ = 0;  // at a barrier, a warp operation or __activemask, or exits
  // RoundWithoutArrivals: yielded and spinning threads still to run in the
  // round under way, and arrivals_ when it began.
  size_t round_left_ = 0;
  uint64_t round_arrivals_ = 0;
  bool round_started_ = false;
  uint64_t settled_check_arrivals_ = 0;  // arrivals_ at ReleaseSettledActiveMasks' last look
  uint32_t current_ = kNone;
  uint32_t active_runner_ = kNone;   // thread being run by the fiber that runs threads in order
  boost::context::fiber scheduler_;  // RunBlock's continuation, while a fiber runs
};

thread_local std::unique_ptr<BlockExecutor> tls_executor;
// The same executor for a fault handler: a plain pointer, constant
// initialised (the first use of the unique_ptr may register its destructor,
// which allocates).
thread_local BlockExecutor* tls_executor_for_faults = nullptr;

BlockExecutor& Executor() {
  if (!tls_executor) {
    tls_executor = std::make_unique<BlockExecutor>();
    tls_executor_for_faults = tls_executor.get();
  }
  return *tls_executor;
}

void RunBlocks(GridJob& job, bool rescuer = false) {
  BlockExecutor& executor = Executor();
  executor.PrepareLaunch(job);
  for (uint64_t b = 0; ClaimBlock(job, rescuer, &b);) {
    const uint64_t points = executor.RunBlock(job, b);
    uint64_t most = job.most_block_points.load(std::memory_order_relaxed);
    while (points > most && !job.most_block_points.compare_exchange_weak(most, points)) {
    }
    if (job.rescued) job.blocks_ended.fetch_add(1, std::memory_order_relaxed);
  }
}

// Whether a block of a rescued grid is still unclaimed.
bool BlocksUnclaimed(GridJob& job) {
  std::lock_guard<std::mutex> lock(job.claims);
  if (job.blocks_reversed) return job.claimed_from_first + job.claimed_from_last < job.total_blocks;
  // Before the rescue every claim is the executors': one per step of their
  // cursor.
  return job.next_in_order < job.total_blocks;
}

// Signal handlers of this OS thread run on a stack of their own: a fault on
// an overflowed fiber stack could not push the handler's frame, and the
// runner's report lost the fault's address (sigaltstack is per thread; the
// runner sets the calling thread's).
void UseAlternateSignalStack() {
  constexpr size_t kBytes = size_t{64} << 10;
  void* memory =
      ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return;  // faults are still fatal, only less precise
  stack_t stack{};
  stack.ss_sp = memory;
  stack.ss_size = kBytes;
  ::sigaltstack(&stack, nullptr);
}

// Pool threads beyond the calling one; all started when the runtime is
// installed (the runner then forbids new threads, before any kernel code
// runs), parked on a condition variable between launches.
class ThreadPool {
 public:
  explicit ThreadPool(unsigned helpers) {
    for (unsigned index = 0; index < helpers; ++index) {
      threads_.emplace_back([this, index] { Loop(index); });
    }
    threads_.emplace_back([this] { RescueLoop(); });
  }

  // Runs `job` on up to `helpers` pool threads (no more than the pool has: a
  // runtime installed again with more threads gets no new ones) while the
  // calling thread waits. When it ran blocks too, its data (heap, and the
  // submission's thread-local storage, which the dynamic linker allocates
  // in the thread's arena) could share cache lines with a pool thread's own,
  // such as its dynamic thread vector read at every __tls_get_addr: with
  // CacheLineAllocator alone, 2 evaluations in 10 still had a process 12 %
  // slower than the other.
  void Run(GridJob& job, unsigned helpers) {
    helpers = std::min(helpers, static_cast<unsigned>(threads_.size() - 1));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      helpers_ = helpers;
      running_ = helpers;
      ++generation_;
    }
    start_.notify_all();
    std::unique_lock<std::mutex> lock(mutex_);
    const auto finished = [&] { return running_ == 0 && rescues_running_ == 0; };
    if (!job.rescued) {
      finished_.wait(lock, finished);
    } else {
      // GridJob::rescued: a grid where no block ended for kStallBeforeRescue
      // while blocks are still unclaimed gets the rescuer.
      bool rescuer_started = false;
      uint64_t ended = 0;
      while (!finished_.wait_for(lock, kStallBeforeRescue, finished)) {
        const uint64_t now_ended = job.blocks_ended.load(std::memory_order_relaxed);
        if (!rescuer_started && now_ended == ended && BlocksUnclaimed(job)) {
          rescuer_started = true;
          rescue_job_ = &job;
          ++rescues_running_;
          ++rescue_generation_;
          rescue_.notify_all();
        }
        ended = now_ended;
      }
    }
    job_ = nullptr;
  }

 private:
  [[noreturn]] void Loop(size_t index) {
    UseAlternateSignalStack();
    uint64_t seen = 0;
    for (;;) {
      GridJob* job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        start_.wait(lock, [&] { return generation_ != seen && index < helpers_; });
        seen = generation_;
        job = job_;
      }
      RunBlocks(*job);
      std::lock_guard<std::mutex> lock(mutex_);
      if (--running_ == 0) finished_.notify_all();
    }
  }

  [[noreturn]] void RescueLoop() {
    UseAlternateSignalStack();
    uint64_t seen = 0;
    for (;;) {
      GridJob* job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        rescue_.wait(lock, [&] { return rescue_generation_ != seen; });
        seen = rescue_generation_;
        job = rescue_job_;
      }
      RunBlocks(*job, /*rescuer=*/true);
      std::lock_guard<std::mutex> lock(mutex_);
      rescue_job_ = nullptr;
      if (--rescues_running_ == 0) finished_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable finished_;
  std::condition_variable rescue_;
  // Never joined: the runner process _exit()s. The last is the rescuer.
  std::vector<std::thread> threads_;
  GridJob* job_ = nullptr;
  unsigned helpers_ = 0;
  unsigned running_ = 0;
  uint64_t generation_ = 0;
  GridJob* rescue_job_ = nullptr;
  unsigned rescues_running_ = 0;
  uint64_t rescue_generation_ = 0;
};

ThreadPool* pool = nullptr;

// ---- The C ABI.
char launch_error[1024];

// After `job`'s grid: a block that wrote dynamic shared memory past the
// launch's request, within the page it ends in (PrepareLaunch), makes the
// launch fail.
const char* SharedSlackWritten(const GridJob& job) {
  std::lock_guard<std::mutex> lock(BlockExecutor::ArenasMutex());
  for (const Arena& arena : BlockExecutor::Arenas()) {
    if (arena.sequence != job.sequence) continue;
    for (size_t i = arena.requested; i < arena.accessible; ++i) {
      if (static_cast<unsigned char>(arena.base[i]) == kSharedSlackByte) continue;
      std::snprintf(launch_error, sizeof(launch_error),
                    "wrote dynamic shared memory at byte %zu, past the %zu bytes the launch asked "
                    "for (on a GPU: an out-of-range shared memory access)",
                    i, arena.requested);
      return launch_error;
    }
  }
  return nullptr;
}

// Starts the race check for `job` (SetRaceCheckedMemory): a fresh grid tag,
// so that what earlier grids recorded no longer counts.
void StartRaceCheck(GridJob& job) {
  kerneleval_cpu_race_check& race = globals->race;
  // Block indices are kept in 32 bits; a grid of one block has no other.
  job.race_checked = globals->race_checked && job.total_blocks > 1 &&
                     job.total_blocks <= 0xffffffffu && race.writes != nullptr;
  if (!job.race_checked) return;
  constexpr uint64_t kTags = (uint64_t{1} << KERNELEVAL_CPU_RACE_GRID_BITS) - 1;
  race.grid = globals->race_grids++ % kTags + 1;
  // A tag comes back after kTags grids: what they recorded must not count.
  if (race.grid == 1 && globals->race_grids > 1) {
    std::memset(race.writes, 0,
                (race.slot_mask + 1) * KERNELEVAL_CPU_RACE_SLOT_WORDS * sizeof(uint64_t));
  }
  race.clock = 1;
  race.found = 0;
  race.kind = KERNELEVAL_CPU_RACE_PLAIN_LOAD;
  race.slot_multiplier = globals->order_chooser() | 1;
}

// "block 12", or "block (1, 2, 0)" in a grid of more than one dimension;
// "Block ..." to begin a sentence.
std::string BlockName(const kerneleval_cpu_launch& launch, uint64_t linear,
                      bool capitalised = false) {
  const std::string block = capitalised ? "Block " : "block ";
  if (launch.grid.y == 1 && launch.grid.z == 1) return block + std::to_string(linear);
  const kerneleval_cpu_dim3 index = BlockIndex(launch, linear);
  return block + "(" + std::to_string(index.x) + ", " + std::to_string(index.y) + ", " +
         std::to_string(index.z) + ")";
}

// After `job`'s grid: the race its blocks found, described; nullptr: none.
const char* RaceFound(const GridJob& job) {
  const kerneleval_cpu_race_check& race = globals->race;
  if (__atomic_load_n(&race.found, __ATOMIC_SEQ_CST) == 0) return nullptr;
  std::string where = "memory at " + std::to_string(race.address);
  for (uint32_t i = 0; i < race.range_count; ++i) {
    const kerneleval_cpu_race_range& r = race.ranges[i];
    if (race.address < r.begin || race.address >= r.end) continue;
    const std::string name(r.name, strnlen(r.name, sizeof(r.name)));
    const uint64_t offset = race.address - r.begin;
    where = r.element_bytes > 0 ? name + "[" + std::to_string(offset / r.element_bytes) + "]"
                                : "byte " + std::to_string(offset) + " of " + name;
    break;
  }
  globals->race_reported = true;
  // Each kind's account of the race, from the same arguments: 1 where, 2
  // the reader, 3 the writer, 4 the reader to begin a sentence.
  const char* format = nullptr;
  switch (race.kind) {
    case KERNELEVAL_CPU_RACE_SPLIT_UPDATE:
      format =
          "blocks race on %1$s: %2$s read it with an atomic, volatile or __ldcg load after %3$s "
          "stored it, then stored to it again (an exchange, an atomic or plain store) with no "
          "wait for another block in between: one update made of two operations. Each may be "
          "atomic, the pair is not: on a GPU blocks run at once, and another block's update "
          "landing between the two is lost. Update it with one atomic read-modify-write "
          "(atomicAdd, atomicMax, ...) or an atomicCAS loop on the value read";
      break;
    case KERNELEVAL_CPU_RACE_UNFENCED_STORE:
      format =
          "blocks race on %1$s: %2$s loaded it after %3$s stored it in the same launch. %4$s "
          "waited for other blocks since, but on nothing %3$s set after a release covering this "
          "store (a __threadfence() or release atomic between the store and the flag or count): "
          "it waited on something else, or %3$s set its flag with no fence after the data "
          "(CUDA's atomicExch, atomicAdd, ... and volatile stores are relaxed, so a GPU may show "
          "the flag before the data). Wait for the writer's flag, set after its data and a "
          "__threadfence()";
      break;
    case KERNELEVAL_CPU_RACE_NON_COHERENT_LOAD:
      format =
          "blocks race on %1$s: %2$s read it with __ldg after %3$s stored it in the same launch. "
          "__ldg reads through the read-only data cache (ld.global.nc), which a GPU does not "
          "keep coherent with stores made during the kernel: it may return a stale value even "
          "after a proper wait for the writer. Read what other blocks write in the launch with a "
          "plain, volatile or __ldcg load after waiting for them";
      break;
    default:
      format =
          "blocks race on %1$s: %2$s loaded it after %3$s stored it in the same launch, and %2$s "
          "has not waited for another block since (an atomic operation, or a volatile or __ldcg "
          "load, on memory another block stored to). On a GPU blocks run in any order or at "
          "once, so such a load can miss the store (a plain `+=` from several blocks loses "
          "updates): wait for the writer (a flag set after the store and polled with an atomic "
          "or volatile load), use atomics, or split the kernel in two launches";
      break;
  }
  const std::string reader = BlockName(*job.launch, race.reader);
  const std::string writer = BlockName(*job.launch, race.writer);
  const std::string waiter = BlockName(*job.launch, race.reader, /*capitalised=*/true);
  // Positional arguments (POSIX): each format names the ones it uses.
  std::snprintf(launch_error, sizeof(launch_error), format, where.c_str(), reader.c_str(),
                writer.c_str(), waiter.c_str());
  return launch_error;
}

// Draws `job`'s virtual clock starts: an SM clock's value after 2^36 to 2^48
// cycles of uptime (~40 s to ~1.6 days at ~1.7 GHz) and a global timer in
// 2024-2027 [ns since 1970] at the process's first launch, then each launch
// a drawn 2^32 to 2^33 above the last (a thread that counts that far in
// one launch is stopped long before). Drawn, not the host's clocks: time
// between launches would tell the interleaved build from the plain one.
void DrawClockStarts(GridJob* job) {
  std::mt19937_64& draw = globals->order_chooser;
  if (globals->clock_floor == 0) {
    globals->clock_floor = int64_t{1} << 36 | static_cast<int64_t>(draw() % (uint64_t{1} << 48));
    constexpr uint64_t kJanuary2024Ns = uint64_t{1704067200} * 1000000000;
    constexpr uint64_t kThreeYearsNs = uint64_t{3} * 365 * 86400 * 1000000000;
    globals->globaltimer_floor = kJanuary2024Ns + draw() % kThreeYearsNs;
  }
  job->clock_start = globals->clock_floor;
  job->globaltimer_start = globals->globaltimer_floor;
  globals->clock_floor += static_cast<int64_t>((uint64_t{1} << 32) + draw() % (uint64_t{1} << 32));
  globals->globaltimer_floor += (uint64_t{1} << 32) + draw() % (uint64_t{1} << 32);
}

const char* AbiRunGrid(const kerneleval_cpu_launch* launch, kerneleval_cpu_thread_fn fn,
                       void* closure) {
  const kerneleval_cpu_dim3 g = launch->grid, b = launch->block;
  const uint64_t block_threads = uint64_t{b.x} * b.y * b.z;
  if (b.x == 0 || b.y == 0 || b.z == 0 || block_threads > kMaxThreadsPerBlock || b.z > 64) {
    std::snprintf(launch_error, sizeof(launch_error),
                  "invalid launch configuration: block (%u,%u,%u) (at most 1024 threads, z <= 64)",
                  b.x, b.y, b.z);
    return launch_error;
  }
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) {
    std::snprintf(launch_error, sizeof(launch_error),
                  "invalid launch configuration: grid (%u,%u,%u)", g.x, g.y, g.z);
    return launch_error;
  }
  if (launch->dynamic_shared_bytes > kMaxDynamicSharedBytes) {
    std::snprintf(launch_error, sizeof(launch_error),
                  "too much dynamic shared memory: %u bytes (at most %u)",
                  launch->dynamic_shared_bytes, kMaxDynamicSharedBytes);
    return launch_error;
  }
  globals->race_reported = false;
  GridJob job;
  job.sequence = ++globals->launches;
  job.launch = launch;
  job.fn = fn;
  job.closure = closure;
  job.total_blocks = uint64_t{g.x} * g.y * g.z;
  // Launches come one at a time from the runner's thread.
  job.thread_order = globals->fixed_order.value_or(
      static_cast<ThreadOrder>(globals->order_chooser() % kThreadOrders));
  job.store_points = globals->store_points;
  job.store_points_drawn = globals->store_points && job.total_blocks >= kDrawnStorePointsMinBlocks;
  job.quiet_every_block = globals->store_points && globals->quiet_small_grids &&
                          job.total_blocks < kDrawnStorePointsMinBlocks;
  const auto seen = globals->block_points_by_kernel.try_emplace({fn, globals->shape}, 0).first;
  job.block_points_seen = seen->second;
  job.schedule_seed = globals->order_chooser();
  job.set_multiplier = globals->order_chooser() | 1;
  DrawClockStarts(&job);
  job.warps_run_ahead = !globals->store_points;  // the odd cases' schedule
  job.x_slowest = globals->x_slowest;
  job.blocks_reversed = globals->blocks_reversed && job.total_blocks > 1;
  job.blocks_shuffled =
      globals->blocks_shuffled && job.total_blocks > 2 && job.total_blocks <= kMaxRescuedBlocks;
  if (job.blocks_shuffled) {
    // 1, 2, 4, ... up to a quarter of the grid, each as likely: block 0
    // always first (x12c), and at least 3/4 of the grid shuffled, so that
    // blocks half a grid apart (a row's halves, x12b) are both in it.
    const int most = std::bit_width(std::max<uint64_t>(1, job.total_blocks / 4)) - 1;
    job.shuffle_after = uint64_t{1} << (globals->order_chooser() % (most + 1));
    job.shuffle_key = globals->order_chooser();
  }
  job.rescued = job.blocks_reversed || job.blocks_shuffled ||
                (job.x_slowest && job.total_blocks > g.x && job.total_blocks <= kMaxRescuedBlocks);
  if (job.rescued && !job.blocks_reversed) job.claimed.assign(job.total_blocks, false);
  StartRaceCheck(job);
  const uint64_t wanted = std::min<uint64_t>(globals->options.threads, job.total_blocks);
  // Not by `wanted`: a kernel with large local arrays passed on 2 cores and
  // overflowed its stack on 16.
  const uint64_t sharing_blocks = std::clamp<uint64_t>(job.total_blocks, 1, kMaxPoolThreads);
  const size_t floor = globals->options.fiber_stack_bytes;
  job.stack_bytes = std::clamp<size_t>(kFiberStackBudgetBytes / (block_threads * sharing_blocks),
                                       floor, std::max(kMaxFiberStackBytes, floor));
  // A rescued grid always goes to the pool: this thread watches it.
  if (wanted <= 1 && !job.rescued) {
    RunBlocks(job);
  } else {
    pool->Run(job, static_cast<unsigned>(wanted));
  }
  if (!job.store_points) seen->second = std::max(seen->second, job.most_block_points.load());
  if (const char* error = SharedSlackWritten(job)) return error;
  return job.race_checked ? RaceFound(job) : nullptr;
}

uint32_t AbiNextThread() { return tls_executor->NextThread(); }
int32_t AbiBarrier(uint32_t kind, int32_t predicate) {
  return tls_executor->Barrier(kind, predicate);
}
uint64_t AbiWarp(const kerneleval_cpu_warp_op* op) { return tls_executor->Warp(*op); }
void AbiYield() { tls_executor->Yield(); }
void AbiInterleave(uint32_t kind) {
  if (tls_executor) tls_executor->Interleave(kind);
}
void* AbiDynamicShared() { return Executor().DynamicShared(); }
// What AbiTlsBlock last found on this OS thread. The prelude asks again after
// every restore of its .tdata (StartRunAfresh), inside the run's sample, and
// walking the loaded modules costs ~11 us in the worker (44 modules, ~0.25 us
// each, measured with a loop over FindLoadedModule, 2026-12-07). The library
// is never unloaded, so its block stays where it was.
struct FoundTlsBlock {
  const void* code = nullptr;
  uint64_t begin = 0;
  uint64_t bytes = 0;
  uint64_t initialised_bytes = 0;
};
thread_local FoundTlsBlock last_found_tls_block;

void AbiTlsBlock(const void* code, uint64_t* begin, uint64_t* bytes, uint64_t* initialised_bytes) {
  const FoundTlsBlock& last = last_found_tls_block;
  if (last.code == code && last.begin != 0) {
    *begin = last.begin;
    *bytes = last.bytes;
    *initialised_bytes = last.initialised_bytes;
    return;
  }
  *begin = 0;
  *bytes = 0;
  *initialised_bytes = 0;
  const auto address = reinterpret_cast<uintptr_t>(code);
  const std::optional<LoadedModule> module =
      FindLoadedModule([address](const LoadedModule& m) { return m.Holds(address); });
  if (!module || module->tls_module_id == 0) return;
  const std::vector<LoadedSegment> tls = module->SegmentsOf(PT_TLS);
  if (tls.empty()) return;
  *begin = reinterpret_cast<uintptr_t>(ThisThreadsTlsBlock(*module));
  *bytes = tls.front().bytes;
  *initialised_bytes = std::min(tls.front().file_bytes, tls.front().bytes);
  last_found_tls_block = {
      .code = code, .begin = *begin, .bytes = *bytes, .initialised_bytes = *initialised_bytes};
  std::lock_guard<std::mutex> lock(globals->tls_blocks_mutex);
  auto* const block = reinterpret_cast<char*>(*begin);
  for (const Globals::TlsBlock& known : globals->tls_blocks) {
    if (known.begin == block) return;
  }
  globals->tls_blocks.push_back({.begin = block,
                                 .image = reinterpret_cast<const char*>(tls.front().begin),
                                 .initialised_bytes = *initialised_bytes});
}

size_t AbiPrintBudget() {
  const uint64_t printed = globals->printed.load(std::memory_order_relaxed);
  return printed >= globals->options.print_budget_bytes
             ? 0
             : globals->options.print_budget_bytes - printed;
}
void AbiPrint(const char*, size_t length) {
  globals->printed.fetch_add(length, std::memory_order_relaxed);
}

// `range` as the race check's hooks read it, nothing recorded there yet.
void FillRaceRange(const RaceCheckedRange& range, kerneleval_cpu_race_range& r) {
  r.begin = range.begin;
  r.end = range.end;
  r.written_in = 0;
  r.element_bytes = range.element_bytes;
  std::snprintf(r.name, sizeof(r.name), "%s", range.name.c_str());
}

// Adds the device heap to the race check's ranges, once per
// SetRaceCheckedMemory, also while a grid runs (other OS threads' hooks
// read range_count as it grows: a range they miss for a moment is an
// access unchecked, never a race made up).
void RegisterHeapRange() {
  kerneleval_cpu_race_check& race = globals->race;
  std::lock_guard<std::mutex> lock(globals->heap_range_mutex);
  if (!globals->race_checked || globals->heap_range_registered.load()) return;
  if (race.range_count == KERNELEVAL_CPU_RACE_RANGES) return;
  FillRaceRange({.begin = globals->heap->begin(),
                 .end = globals->heap->end(),
                 .element_bytes = 0,
                 .name = "the device malloc() heap"},
                race.ranges[race.range_count]);
  __atomic_store_n(&race.range_count, race.range_count + 1, __ATOMIC_RELEASE);
  globals->heap_range_registered.store(true);
}

void* AbiHeapAlloc(size_t bytes) {
  void* memory = globals->heap->Allocate(bytes);
  if (memory && !globals->heap_range_registered.load(std::memory_order_relaxed)) {
    RegisterHeapRange();
  }
  return memory;
}

void AbiHeapFree(void* pointer) { globals->heap->Free(pointer); }

void AbiTrap(const char* message) {
  Fatal(message ? std::string(message, strnlen(message, 1000)) : "trap");
}

}  // namespace

const kerneleval_cpu_runtime* InstallDeviceRuntime(const DeviceRuntimeOptions& options,
                                                   FatalErrorHandler on_fatal) {
  if (!globals) globals = new Globals();  // lives until the process ends
  globals->options = options;
  if (globals->options.threads == 0) globals->options.threads = 1;
  globals->on_fatal = on_fatal;
  // Lives until the process ends. A grid of one block runs on the calling
  // thread, any other on up to `threads` pool threads (a grid that takes
  // blocks from the last on one of them at least), and the rescuer.
  if (!pool) pool = new ThreadPool(globals->options.threads);
  if (!globals->heap) globals->heap = std::make_unique<DeviceHeap>(globals->options.heap_bytes);
  kerneleval_cpu_runtime& t = globals->table;
  t.abi_version = KERNELEVAL_CPU_ABI_VERSION;
  t.size = sizeof(kerneleval_cpu_runtime);
  t.run_grid = AbiRunGrid;
  t.next_thread = AbiNextThread;
  t.barrier = AbiBarrier;
  t.warp = AbiWarp;
  t.yield = AbiYield;
  t.dynamic_shared = AbiDynamicShared;
  t.print_budget = AbiPrintBudget;
  t.print = AbiPrint;
  t.heap_alloc = AbiHeapAlloc;
  t.heap_free = AbiHeapFree;
  t.trap = AbiTrap;
  t.interleave = AbiInterleave;
  // Static where this code is the main program's (the runner); a library
  // opened later (the fake CUDA driver) has each thread's block allocated
  // apart, at another offset on every thread.
  const auto code = reinterpret_cast<uintptr_t>(&InstallDeviceRuntime);
  const std::optional<LoadedModule> main_program =
      FindLoadedModule([](const LoadedModule&) { return true; });
  t.thread_state_offset = main_program && main_program->Holds(code)
                              ? reinterpret_cast<char*>(&tls_interleave_state) -
                                    static_cast<char*>(__builtin_thread_pointer())
                              : KERNELEVAL_CPU_NO_THREAD_STATE;
  t.tls_block = AbiTlsBlock;
  return &globals->table;
}

uint64_t DevicePrintedBytes() { return globals ? globals->printed.load() : 0; }

void SetRaceCheckedMemory(const std::vector<RaceCheckedRange>& ranges) {
  if (!globals) return;
  kerneleval_cpu_race_check& race = globals->race;
  if (!race.writes && !ranges.empty()) {
    const size_t bytes = kRaceSlots * KERNELEVAL_CPU_RACE_SLOT_WORDS * sizeof(uint64_t);
    void* table = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (table == MAP_FAILED) Fatal("out of memory for the race check's table");
    race.writes = static_cast<uint64_t*>(table);
    race.slot_mask = kRaceSlots - 1;
    race.slot_bits = kRaceSlotBits;
  }
  race.range_count = 0;
  // One range stays free for the device heap's (RegisterHeapRange).
  for (const RaceCheckedRange& range : ranges) {
    if (race.range_count + 1 == KERNELEVAL_CPU_RACE_RANGES || range.end <= range.begin) continue;
    FillRaceRange(range, race.ranges[race.range_count++]);
  }
  globals->race_checked = race.range_count > 0;
  globals->heap_range_registered.store(false);
  if (globals->heap && globals->heap->ever_allocated()) RegisterHeapRange();
}

bool LastGridRaced() { return globals && globals->race_reported; }

void StartRunAfresh(StackFill stack_fill) {
  if (!globals) return;
  if (globals->heap) globals->heap->Reset();
  globals->printed.store(0);
  ++globals->runs_started;
  DrawSharedFill(globals->fill_chooser(), &globals->shared_fill);
  {
    // The prelude's thread-local state as loaded, in every OS thread: a
    // slot of it that the runner never writes (its copy of the built-in
    // variables) kept a count of the launches across runs, which told the
    // timing runner's many runs of one grid from the correctness cases
    // (sweep 40, e2). Its zero-initialised part (.tbss: every __shared__
    // variable) is filled as each block starts.
    std::lock_guard<std::mutex> lock(globals->tls_blocks_mutex);
    for (const Globals::TlsBlock& block : globals->tls_blocks) {
      std::memcpy(block.begin, block.image, block.initialised_bytes);
    }
  }
  // Zeros, what a page never touched reads: a drawn byte told the pages
  // earlier runs touched from the rest, and a kernel reading one page deeper
  // each run counted its runs by them, the timing runner's passing the
  // correctness runner's (sweep 39, b1).
  if (stack_fill == StackFill::kLeftToTheCaller) return;
  std::lock_guard<std::mutex> lock(BlockExecutor::ArenasMutex());
  for (const Arena& arena : BlockExecutor::Arenas()) arena.stacks->Fill(0);
}

size_t FiberStackRanges(AddressRange* ranges, size_t capacity) {
  std::lock_guard<std::mutex> lock(BlockExecutor::ArenasMutex());
  // The OS threads map their stacks at the same time, so each pool's runs
  // interleave with the others' (a 4-block histogram's 512 stacks came to
  // more than 128 runs): sorted and merged across pools, in place (no
  // allocation, as in StackPool::Fill), they are few.
  size_t count = 0;
  const auto compact = [&] {
    std::sort(ranges, ranges + count,
              [](const AddressRange& a, const AddressRange& b) { return a.begin < b.begin; });
    size_t merged = 0;
    for (size_t k = 0; k < count; ++k) {
      if (merged > 0 && ranges[k].begin <= ranges[merged - 1].end) {
        ranges[merged - 1].end = std::max(ranges[merged - 1].end, ranges[k].end);
      } else {
        ranges[merged++] = ranges[k];
      }
    }
    count = merged;
  };
  bool overflow = false;
  for (const Arena& arena : BlockExecutor::Arenas()) {
    arena.stacks->ForEachRunOfMappings([&](uintptr_t begin, uintptr_t end) {
      if (overflow) return;
      if (count == capacity) compact();
      if (count == capacity) {
        overflow = true;
        return;
      }
      ranges[count++] = {.begin = begin, .end = end};
    });
  }
  compact();
  return overflow ? capacity + 1 : count;
}

void ClearDynamicSharedMemory(uint64_t seed) {
  std::lock_guard<std::mutex> lock(BlockExecutor::ArenasMutex());
  for (const Arena& arena : BlockExecutor::Arenas()) {
    WriteSharedFill(seed, arena.base, arena.accessible / sizeof(uint64_t));
    // The pages the last launch left inaccessible keep their bytes for the
    // next launch that asks for them: dropped, they read as zeros.
    ::madvise(arena.base + arena.accessible, arena.bytes - arena.accessible, MADV_DONTNEED);
  }
}

bool FindDynamicSharedFault(uint64_t address, uint64_t* offset, uint64_t* requested) {
  // From a fault handler: no lock (the process ends after it).
  for (const Arena& arena : BlockExecutor::Arenas()) {
    const auto base = reinterpret_cast<uint64_t>(arena.base);
    if (address < base || address >= base + arena.bytes + PageSize()) continue;
    *offset = address - base;
    *requested = arena.requested;
    return true;
  }
  return false;
}

bool FindStackOverflow(uint64_t address, uint64_t* stack_bytes) {
  // A synchronous fault runs its handler on the faulting OS thread: the
  // stacks are that thread's executor's.
  const BlockExecutor* executor = tls_executor_for_faults;
  if (executor == nullptr || !executor->stacks().GuardPageHolds(address)) return false;
  *stack_bytes = executor->stacks().bytes();
  return true;
}

namespace {

// The schedule of correctness case `case_index` (SetCaseSchedule).
struct CaseSchedule {
  bool store_points = true;
  bool quiet_small_grids = false;          // GridJob::quiet_every_block
  std::optional<ThreadOrder> fixed_order;  // none: drawn per launch
  bool x_slowest = false;
  bool blocks_reversed = false;
  bool blocks_shuffled = false;
  bool shared_left_over = false;  // Globals::shared_left_over
};

CaseSchedule ScheduleOfCase(size_t case_index, size_t thread_schedule) {
  CaseSchedule schedule;
  schedule.store_points = thread_schedule % 2 == 0;
  // Schedules 4, 10, 16, ...: one store-point schedule in three, so that a
  // run of 13 cases over 5 shapes (or 12 over 4) still has one that
  // switches at every point for each shape (DrawThreadSchedules).
  schedule.quiet_small_grids = thread_schedule % 6 == 4;
  schedule.x_slowest = case_index / 2 % 2 == 1;     // cases 2, 3, 6, 7, ...
  schedule.blocks_reversed = case_index % 4 == 1;   // cases 1, 5, 9, ...
  schedule.blocks_shuffled = case_index % 4 == 0;   // cases 0, 4, 8, ...
  schedule.shared_left_over = case_index % 4 == 3;  // cases 3, 7, 11, ...
  if (!schedule.store_points) {
    schedule.fixed_order = static_cast<ThreadOrder>(thread_schedule / 2 % kThreadOrders);
  }
  return schedule;
}

}  // namespace

ThreadScheduleKind KindOfThreadSchedule(size_t thread_schedule) {
  const CaseSchedule schedule = ScheduleOfCase(0, thread_schedule);
  if (!schedule.fixed_order) {
    return schedule.quiet_small_grids ? ThreadScheduleKind::kStorePointsQuietInSmallGrids
                                      : ThreadScheduleKind::kStorePoints;
  }
  switch (*schedule.fixed_order) {
    case ThreadOrder::kForward:
      return ThreadScheduleKind::kForward;
    case ThreadOrder::kReverse:
      return ThreadScheduleKind::kReverse;
    case ThreadOrder::kLanesReversedInWarp:
      break;
  }
  return ThreadScheduleKind::kLanesReversedInWarp;
}

void SetCaseSchedule(size_t case_index, size_t thread_schedule, uint32_t shape) {
  if (!globals) return;
  globals->shape = shape;
  const CaseSchedule schedule = ScheduleOfCase(case_index, thread_schedule);
  globals->store_points = schedule.store_points;
  globals->quiet_small_grids = schedule.quiet_small_grids;
  globals->x_slowest = schedule.x_slowest;
  globals->blocks_reversed = schedule.blocks_reversed;
  globals->blocks_shuffled = schedule.blocks_shuffled;
  globals->shared_left_over = schedule.shared_left_over;
  globals->fixed_order = schedule.fixed_order;
}

std::string DescribeCaseSchedule(size_t case_index, size_t thread_schedule, bool store_points) {
  const CaseSchedule schedule = ScheduleOfCase(case_index, thread_schedule);
  std::string threads;
  if (schedule.store_points && store_points) {
    threads =
        "each block's threads switching at every store of a value they loaded, in an order "
        "drawn per launch (in a grid of 8 blocks or more: at 7 in 8 of those stores, drawn, "
        "and in one block in four only after a drawn number of them";
    threads += schedule.quiet_small_grids
                   ? "; in a smaller grid: in every block only after a drawn number of them)"
                   : ")";
  } else if (!schedule.fixed_order) {
    threads = "each block's threads one after another, in an order drawn per launch";
  } else {
    static constexpr const char* kOrders[kThreadOrders] = {"in index order", "in reverse order",
                                                           "each warp's lanes from the last"};
    threads = std::string("each block's threads one after another, ") +
              kOrders[static_cast<int>(*schedule.fixed_order)] +
              ", a warp running on to its next barrier once its operation completes";
  }
  // Every case takes one of the three block orders (ScheduleOfCase).
  std::string blocks;
  if (schedule.blocks_reversed) {
    blocks =
        "its blocks from the last (a block that reads another block's output without waiting "
        "for it finds it unwritten)";
  } else if (schedule.blocks_shuffled) {
    blocks =
        "its blocks in a shuffled order drawn per launch, block 0 first (a block that reads "
        "another block's output without waiting for it may find it unwritten)";
  } else {
    blocks =
        "its blocks with blockIdx.x slowest (blocks of one blockIdx.x, such as a row's parts, "
        "run side by side; a grid of one row in index order)";
  }
  if (schedule.shared_left_over) {
    blocks +=
        ", each block after the first on an OS thread finding shared memory as the last one "
        "there left it (as the next block on an SM does)";
  }
  return "the CPU backend ran this case with " + threads + ", and " + blocks;
}

}  // namespace kerneleval::cpu
