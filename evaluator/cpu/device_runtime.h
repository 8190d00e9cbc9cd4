// The execution model of the CPU backend, behind the C ABI of
// prelude/kerneleval_cpu_abi.h: it runs inside the runner process that loaded
// a compiled submission.
//
//  - The blocks of a launch run in parallel on a small pool of OS threads;
//    each OS thread runs whole blocks, one at a time, so a thread_local
//    variable of the submission is per-block (__shared__) storage.
//  - The threads of a block are cooperative fibers (Boost.Context) on that OS
//    thread. They are created lazily: one fiber runs the block's threads one
//    after another; only when a thread reaches a barrier or a warp operation
//    does it keep that fiber (suspended) and a new fiber carries on with the
//    next thread. A kernel without barriers or warp operations thus runs as a
//    plain loop on one fiber.
//  - A barrier is released when every thread of the block that has not
//    exited waits at one; a warp operation when every lane named in the
//    waiting lanes' masks that has not exited waits at one (lock-step
//    semantics: all values are in before any result is handed out).
//  - When every live thread waits and nothing can be released (lanes of a
//    warp at a shuffle while others wait at __syncthreads), the run fails with
//    a deadlock message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "evaluator/cpu/prelude/kerneleval_cpu_abi.h"

namespace kerneleval::cpu {

// [bytes] Largest dynamic shared memory of one block (an H100's opt-in limit).
inline constexpr uint32_t kMaxDynamicSharedBytes = 227 * 1024;
// [bytes] Address space for the stacks of GPU threads, and one stack's cap.
inline constexpr size_t kFiberStackBudgetBytes = size_t{512} << 20;
// OS threads running blocks when the host has that many cores or more (the
// worker's default); stacks are sized as if a launch ran on that many, so a
// kernel's stack does not depend on the host's core count.
inline constexpr unsigned kMaxPoolThreads = 16;
inline constexpr size_t kMaxFiberStackBytes = KERNELEVAL_CPU_MAX_FIBER_STACK_BYTES;

struct DeviceRuntimeOptions {
  unsigned threads = 1;  // OS threads running blocks
  // [bytes] Stack of each GPU thread (plus a guard page): the larger of this
  // and an equal share of kFiberStackBudgetBytes among the fibers a launch
  // could have at once on the largest pool (threads per block x the fewer
  // of its blocks and kMaxPoolThreads), at most kMaxFiberStackBytes. Pages
  // are committed only when touched.
  size_t fiber_stack_bytes = size_t{64} << 10;
  size_t print_budget_bytes = size_t{1} << 20;  // [bytes] device printf output, then dropped
  size_t heap_bytes = size_t{8} << 20;          // [bytes] device malloc (CUDA's default)
  // Each block's dynamic shared memory starts filled as its static shared
  // memory (the run's drawn pattern, or 0xff before any StartRunAfresh:
  // what it reads before writing is NaN, or an int never 0). Off: it holds
  // what the last block on
  // the thread left, as an SM's (the test CUDA driver, which checks that the
  // GPU worker clears it between programs).
  bool poison_shared_per_block = true;
};

// Receives fatal errors of kernel code (trap, failed assert, deadlock,
// exhausted fiber stacks). Must not return: it ends the process.
using FatalErrorHandler = void (*)(const char* message);

// Installs the runtime of this process (there is one: the ABI has no context
// pointer) and returns the table to hand to kerneleval_cpu_init(). Starts
// the pool's threads (options.threads - 1) on the first call: none are
// started later, so the caller may forbid new threads afterwards.
const kerneleval_cpu_runtime* InstallDeviceRuntime(const DeviceRuntimeOptions& options,
                                                   FatalErrorHandler on_fatal);

// [bytes] Device printf output produced so far (counted, not kept).
uint64_t DevicePrintedBytes();

// Fills the dynamic shared memory of every OS thread that runs blocks with
// `seed`'s pattern (data/shared_fill.h, as the GPU worker's ke_clear_shared
// does every SM's): like a GPU's, it is not cleared between launches, so a
// block finds what the last block on its thread left there. Call between
// grids, never during one. (The CPU backend gives every program a process
// of its own; the test CUDA driver, which runs every program in one, calls
// this where the GPU worker clears shared memory.)
void ClearDynamicSharedMemory(uint64_t seed);

// Whether `address` (of a fault) lies in an OS thread's dynamic shared
// memory, and where: its byte `offset`, beyond the `requested` bytes of the
// last launch that ran there (only those are accessible, in whole pages).
// Safe enough in a fault handler (no lock, no allocation).
bool FindDynamicSharedFault(uint64_t address, uint64_t* offset, uint64_t* requested);

// Whether `address` (of a fault on this OS thread) lies in the guard page of
// one of its GPU threads' stacks, of `stack_bytes` each: a stack overflow.
// Safe enough in a fault handler (no lock, no allocation).
bool FindStackOverflow(uint64_t address, uint64_t* stack_bytes);

// Sets how the launches of a correctness case schedule a block's threads
// (as case `thread_schedule` of a run: internal::Case::thread_schedule) and
// its blocks (as case `case_index`: internal::Case::block_schedule); the
// worker draws both per run. Even cases: an interleaved build's store points yield
// (a thread about to store what the block loaded lets the others run
// first), in a thread order drawn per launch. Odd cases: store points do
// not yield, the threads start in order, reversed, then lanes of each warp
// reversed (cases 1, 3, 5; then again), and a warp whose operation
// completes runs on to its next barrier before the others resume. Neither schedule alone catches
// every race a GPU shows: with store points every thread loads before any
// stores, which an in-place scan step `s[t] += s[t - offset]` needs; without
// them a histogram without atomics loses no update. A run of one case has
// no odd one, and the reversed orders need four and six. Timing runs keep
// the default (store points, drawn order); call between grids. Cases 2, 3,
// 6, 7, ... take a grid's blocks with blockIdx.x slowest, so blocks of one
// x (a split-K row's parts) run side by side and their plain `+=` on one
// output races as on a GPU (sweep 6). Cases 1, 5, 9, ... take them from the
// last block (a block reading another's output without waiting reads it
// unwritten; one waiting for a lower block is run to the end by the pool's
// rescuer). Cases 0, 4, 8, ... take them in a shuffled order drawn per
// launch after the first 1, 2, 4, ... (at most a quarter of the grid) in
// index order, block 0 first (rescued likewise). Store-point cases 4, 10,
// 16, ...: in a grid of under 8 blocks every block first lets a drawn
// number of its store and spin points pass (kStorePointsQuietInSmallGrids);
// the draw follows the points a block of the same kernel had in the
// earlier cases of `shape` (internal::Case::shape_index).
void SetCaseSchedule(size_t case_index, size_t thread_schedule, uint32_t shape = 0);

// What the thread schedule `thread_schedule` (SetCaseSchedule) lets a
// block's threads show: kStorePoints loses the updates of a plain
// read-modify-write that two threads make at once; the orders without store
// points show an in-place step that reads what another thread updates in
// the same step: kForward one reading a lower thread (`s[t] += s[t - k]`),
// kReverse one reading a higher thread, kLanesReversedInWarp both in part
// (a higher lane of its warp, a lower warp). kStorePointsQuietInSmallGrids
// is kStorePoints where, in a grid of under 8 blocks, every block first
// lets a drawn number of its store points pass without a switch (schedules
// 4, 10, 16, ...): a kernel probing whether its threads interleave then
// finds them apart and its racy work after the probe loses updates; a race
// early in a small grid's blocks may pass there, so each shape needs a
// kStorePoints case too.
enum class ThreadScheduleKind : uint8_t {
  kStorePoints,
  kStorePointsQuietInSmallGrids,
  kForward,
  kReverse,
  kLanesReversedInWarp,
};
ThreadScheduleKind KindOfThreadSchedule(size_t thread_schedule);

// SetCaseSchedule(case_index, thread_schedule)'s schedule in words, for the
// verdict of a kernel that fails in that case only ("the CPU backend ran
// this case with its blocks from the last (...)"); `store_points`: the
// interleaved build.
std::string DescribeCaseSchedule(size_t case_index, size_t thread_schedule, bool store_points);

// Memory the cross-block race check of an interleaved build covers: a device
// buffer (`element_bytes` its element's size, for "y[12]" in a verdict) or
// the program's writable data (`__device__` variables; element_bytes 0).
struct RaceCheckedRange {
  uint64_t begin = 0;  // [address]
  uint64_t end = 0;    // [address] one past the last byte
  uint32_t element_bytes = 0;
  std::string name;
};

// From the next grid on, the blocks of every grid of more than one block
// check `ranges` (at most KERNELEVAL_CPU_RACE_RANGES - 1; empty: no check)
// and the device malloc() heap: a plain load of bytes another block of the
// grid stored there, with no synchronising operation of the loading block
// since (an atomic, a volatile or __ldcg load; a fence waits for no one),
// or a store completing an update split into such a synchronising load and
// a store, makes the grid fail with a message naming both blocks and the
// element (kerneleval_cpu_race_check). Only an interleaved build's hooks
// record and check; call between grids.
void SetRaceCheckedMemory(const std::vector<RaceCheckedRange>& ranges);

// Whether the last grid failed for a race between its blocks.
bool LastGridRaced();

// Before each run (a correctness case, a timed run), so that nothing one
// run left in this process reaches the next, as the device globals are
// restored between them (the runner's caller does that):
// - empties the device malloc() heap (DeviceHeap::Reset): a result keyed by
//   its inputs, kept in memory a run never freed or next to what it freed;
// - restarts the printf budget (bytes per run): a printf that stopped
//   printing had told the timed runs, many in one process, from the cases;
// - fills every page of the fiber stacks that a kernel touched with zeros,
//   what an untouched page reads: an uninitialised local array kept a
//   lookup table, or a count of the runs, from one run to the next (sweep
//   38), and a drawn byte told the touched pages from the rest, which
//   counted the runs too (sweep 39, b1);
// - draws the pattern every block's shared memory starts as
//   (kerneleval_cpu_block_info::shared_fill): a fixed 0xff was taken as a
//   histogram's initial -1 (s38d);
// - puts every OS thread's thread-local .tdata (the prelude's state) back
//   as loaded: a slot of it counted one grid's launches across runs (sweep
//   40, e2).
// Call between runs, never during one. The fill leaves the pages committed
// (no fault in the next run). It costs ~1-1.4 ms for 512 fibers' stacks, as
// much as a small kernel's run, so the timing runner leaves it to its worker
// (kLeftToTheCaller, FiberStackRanges), which zeros the same pages from
// outside while the runner stands still: everything the runner itself does
// is in the run's sample, since kernel code can hook into any of it (sweep
// 41: a GOT slot or a signal handler made the runner's preparation, once
// left out of the sample, do the kernel's work).
enum class StackFill { kHere, kLeftToTheCaller };
void StartRunAfresh(StackFill stack_fill = StackFill::kHere);

// [begin, end) of memory, as addresses.
struct AddressRange {
  uint64_t begin = 0;
  uint64_t end = 0;
};
// Every run of adjacent fiber stack mappings of this process (guard pages
// included; StartRunAfresh's fill zeros what a fiber touched in them),
// sorted and merged across the OS threads' pools, into `ranges`. Returns how
// many there are, or more than `capacity` where they do not fit. Call
// between runs.
size_t FiberStackRanges(AddressRange* ranges, size_t capacity);

}  // namespace kerneleval::cpu
