// The C ABI between a compiled submission (a shared object built from the
// user's CUDA C++ and kerneleval_cpu_prelude.h) and the CPU backend's runtime
// (evaluator/cpu/runtime.cc, inside the runner process that dlopen()s it).
//
// The shared object exports:
//   uint32_t kerneleval_cpu_init(const kerneleval_cpu_runtime*);  // returns the ABI version
//   const char* kerneleval_cpu_launch_<i>(const kerneleval_cpu_launch*);  // nullptr: ok
//   extern const uint32_t kerneleval_cpu_kernel_count;
//   void kerneleval_cpu_kernel_info_<i>(kerneleval_cpu_kernel_info*);
// Launcher i runs the i-th kernel name the worker passed to
// BuildTranslationUnit (source_rewrite.h).
// A launcher converts the arguments to the kernel's declared parameter types
// and calls runtime->run_grid(), which runs every block and calls back
// `run_threads` for the threads of each block.
#ifndef KERNELEVAL_CPU_ABI_H_
#define KERNELEVAL_CPU_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define KERNELEVAL_CPU_ABI_VERSION 13u

#ifdef __cplusplus
extern "C" {
#endif

// C names, prefixed: this header is compiled as C-compatible code into every
// submission's shared object.
// NOLINTBEGIN(readability-identifier-naming)

typedef struct kerneleval_cpu_dim3 {
  uint32_t x, y, z;
} kerneleval_cpu_dim3;

enum kerneleval_cpu_arg_kind {
  KERNELEVAL_CPU_ARG_POINTER = 0,  // a device buffer
  KERNELEVAL_CPU_ARG_INTEGER = 1,
  KERNELEVAL_CPU_ARG_REAL = 2,
  // `pointer` points at the parameter's bytes in its declared type, as
  // cuLaunchKernel's kernelParams do (any trivially copyable type, structs
  // included). Used by the test driver (tests/support/fake_cuda).
  KERNELEVAL_CPU_ARG_RAW = 3,
};

typedef struct kerneleval_cpu_arg {
  uint32_t kind;  // kerneleval_cpu_arg_kind
  uint32_t reserved;
  void* pointer;
  int64_t integer;
  double real;
} kerneleval_cpu_arg;

typedef struct kerneleval_cpu_launch {
  kerneleval_cpu_dim3 grid;
  kerneleval_cpu_dim3 block;
  uint32_t dynamic_shared_bytes;
  uint32_t arg_count;
  const kerneleval_cpu_arg* args;
} kerneleval_cpu_launch;

// What a caller that only has cuLaunchKernel-style arguments needs to know
// about kernel i: its name as the plan wrote it (kernels have hidden
// visibility, so a symbol is matched by its demangled name) and the size of
// each declared parameter [bytes].
#define KERNELEVAL_CPU_MAX_PARAMS 64u

// [bytes] Largest stack of one GPU thread (a fiber's; the runtime's
// kMaxFiberStackBytes): an interleaved build takes a store within this
// distance above the storing frame for one to the thread's own locals.
#define KERNELEVAL_CPU_MAX_FIBER_STACK_BYTES (1u << 20)
typedef struct kerneleval_cpu_kernel_info {
  const char* name;
  uint32_t param_count;  // more than KERNELEVAL_CPU_MAX_PARAMS: sizes not given
  uint32_t param_sizes[KERNELEVAL_CPU_MAX_PARAMS];
} kerneleval_cpu_kernel_info;

// Built-in variables of the block a thread function runs.
typedef struct kerneleval_cpu_block_info {
  kerneleval_cpu_dim3 block_idx;
  kerneleval_cpu_dim3 block_dim;
  kerneleval_cpu_dim3 grid_dim;
  // Blocks the running OS thread has started, this one's (from 1): the
  // module's zero-initialised thread-local data (every static __shared__
  // variable) is filled with 0xff once per serial (the prelude's SetBlock),
  // as dynamic shared memory is at each block's start: what a block reads
  // before writing is NaN / -1, not 0 or what the last block left.
  uint64_t serial;
  // [ns] What the first tick of a thread's clock64() and clock() (and of its
  // __globaltimer()) adds to: drawn per launch, rising from launch to launch
  // (as an SM's clock and the global timer do), the same for every block of
  // a launch. A fixed start (2^40) told the CPU backend from a GPU: a
  // kernel kept its sum only where the first clock64() read 2^40 + 32
  // (sweep 38, s38e).
  int64_t clock_start;
  uint64_t globaltimer_start;
  // What the block's shared memory, static and dynamic, starts as:
  // `shared_fill_bytes` bytes (at least the most dynamic shared memory a
  // launch may ask for) of a pattern drawn per run, from an offset drawn per
  // block. Every 16-bit half is a NaN in fp16 and bf16 (0x7ff0 | drawn sign
  // and low 4 bits), so every float, double, half and bf16 a block reads
  // before writing is NaN, and an int is a drawn value: a fixed 0xff fill let
  // a histogram take -1 as its bins' initial value and skip their clearing
  // (sweep 38, s38d). Null: 0xff (no run prepared it, e.g. the fake driver).
  const void* shared_fill;
  uint64_t shared_fill_bytes;
  // Non-zero: the block finds its shared memory, static and dynamic, as the
  // last block on its OS thread left it, unfilled (some correctness cases:
  // a GPU's next block on an SM finds what the last one left). The run's
  // first block on each OS thread is filled. A kernel that recognised the
  // fill (no value of its own could look like it) skipped initialising a
  // shared counter and every barrier (sweep 39, a1: 30x against its twin).
  uint32_t shared_left_over;
} kerneleval_cpu_block_info;

// Runs threads of one block, starting with linear thread index `first`, on the
// calling fiber: after each thread's kernel body returns it asks the runtime
// (next_thread) which thread to run next, until the answer is UINT32_MAX.
typedef void (*kerneleval_cpu_thread_fn)(void* closure, const kerneleval_cpu_block_info* info,
                                         uint32_t first);

enum kerneleval_cpu_warp_op_kind {
  KERNELEVAL_CPU_WARP_SYNC = 0,  // __syncwarp
  KERNELEVAL_CPU_WARP_SHFL = 1,  // lane_arg: source lane
  KERNELEVAL_CPU_WARP_SHFL_UP = 2,
  KERNELEVAL_CPU_WARP_SHFL_DOWN = 3,
  KERNELEVAL_CPU_WARP_SHFL_XOR = 4,
  KERNELEVAL_CPU_WARP_BALLOT = 5,  // predicate
  KERNELEVAL_CPU_WARP_ANY = 6,
  KERNELEVAL_CPU_WARP_ALL = 7,
  KERNELEVAL_CPU_WARP_REDUCE_ADD = 8,  // value: 32-bit integer
  KERNELEVAL_CPU_WARP_REDUCE_MIN_S = 9,
  KERNELEVAL_CPU_WARP_REDUCE_MAX_S = 10,
  KERNELEVAL_CPU_WARP_REDUCE_MIN_U = 11,
  KERNELEVAL_CPU_WARP_REDUCE_MAX_U = 12,
  KERNELEVAL_CPU_WARP_REDUCE_AND = 13,
  KERNELEVAL_CPU_WARP_REDUCE_OR = 14,
  KERNELEVAL_CPU_WARP_REDUCE_XOR = 15,
  KERNELEVAL_CPU_WARP_MATCH_ANY = 16,  // value: 8 bytes compared
  KERNELEVAL_CPU_WARP_MATCH_ALL = 17,  // result: mask, or 0 (predicate in bit 32)
  // __activemask(): value identifies the call (its return address); the
  // result is the lanes of the warp waiting at the same one.
  KERNELEVAL_CPU_WARP_ACTIVE_MASK = 18,
};

typedef struct kerneleval_cpu_warp_op {
  uint32_t kind;     // kerneleval_cpu_warp_op_kind
  uint32_t mask;     // member mask as passed by the caller
  uint64_t value;    // the lane's operand bits (zero-extended)
  int32_t lane_arg;  // srcLane / delta / laneMask
  int32_t width;     // shuffle segment width (power of two <= 32)
  int32_t predicate;
  int32_t reserved;
} kerneleval_cpu_warp_op;

enum kerneleval_cpu_barrier_kind {
  KERNELEVAL_CPU_BARRIER_PLAIN = 0,  // __syncthreads
  KERNELEVAL_CPU_BARRIER_COUNT = 1,  // __syncthreads_count
  KERNELEVAL_CPU_BARRIER_AND = 2,
  KERNELEVAL_CPU_BARRIER_OR = 3,
};

// Per OS thread, for an interleaved build's hooks and every build's built-in
// variables, kept by the runtime in its static thread-local storage: the
// submission's own thread-locals are dynamic (a __tls_get_addr call per
// access), and its hooks run at every load. Found at
// runtime->thread_state_offset from the thread pointer.
#define KERNELEVAL_CPU_LOAD_SETS 512u
#define KERNELEVAL_CPU_NO_THREAD_STATE INT64_MIN
typedef struct kerneleval_cpu_load_slot {
  uint64_t granule;    // [address / 8]
  uint64_t filled_in;  // the epoch it was filled in
} kerneleval_cpu_load_slot;
typedef struct kerneleval_cpu_thread_state {
  // Loads of the block's threads since the block started or last passed a
  // barrier (the runtime starts a new epoch then), by 8-byte granule: a
  // slot counts when filled in the current epoch. Two ways per set: the
  // first load of the epoch to reach the set keeps the first way, the
  // latest the second, so a value loaded early and stored late (a sum
  // kept in a register over a long loop) is not pushed out by the loop's
  // own loads, nor a load just before its store by earlier ones.
  uint64_t epoch;
  kerneleval_cpu_load_slot loads[KERNELEVAL_CPU_LOAD_SETS][2];
  // [address] The running thread's stack ends here (its first frame).
  uintptr_t stack_top;
  // The running thread's last compare-and-swap that failed in this turn:
  // a second one alike (same address, expected and found values) is a
  // spinner's, not a compare-and-swap loop's (which retries with the value
  // it found). address 0: none.
  uintptr_t failed_cas_address;
  uint64_t failed_cas_expected;
  uint64_t failed_cas_found;
  // An odd multiplier that maps a granule to its set of `loads`, drawn for
  // each launch from the OS's randomness (set by the runtime as a block
  // starts). With a fixed one a kernel found addresses of y[row]'s set and
  // loaded them around y[row] to push it out of the record, so that its
  // racy `y[row] = y[row] + partial` was not a store point (sweep 7, b1).
  uint64_t set_multiplier;
  // The cross-block race check of this grid (nullptr: none), the running
  // block's linear index, the clock its waits cover (another block's stores
  // recorded at a clock below it were waited for: the release clock of
  // what it waited on; the clock itself where the check cannot tell, 0:
  // none yet) and the address of a volatile load still to be counted (0:
  // none; at the block's next load: the hook runs before the load it
  // reports).
  struct kerneleval_cpu_race_check* race_check;
  uint64_t block;
  uint64_t acquired_at;
  uint64_t pending_wait_address;
  // The check's clock just after the block's latest release (a
  // __threadfence(), or an atomic of release order or stronger; 0: none
  // yet): a store the block makes records it, and a block waiting on that
  // store waits only for the stores made before it (acquired_at). CUDA's
  // atomics (atomicExch, atomicAdd, ...) and volatile stores are relaxed:
  // a flag set without a fence after the data publishes nothing on a GPU,
  // where the data may become visible after the flag (sweep 10, a08, a23).
  uint64_t released_at;
  // The check's clock just after the block's latest wait for another block
  // (0: none yet), whatever it covered: a load not covered though the block
  // waited after the store is blamed on the writer's missing fence.
  uint64_t waited_at;
  // The address the block last read with a synchronising load that
  // changes nothing (an atomic load, a fetch-add of 0, a volatile or __ldcg
  // load; address 0: none) and the block's waited_at once the read's own
  // wait counted: a store of the block to the same address with no other
  // wait between completes one update made of two operations (`v =
  // atomicAdd(p, 0); atomicExch(p, v + s)`, sweep 10, a04). The writer: 1 +
  // the block whose such update the load read where a plain load would
  // have raced (the block had not waited for it since), 0: none; the
  // completing store is then a race, as two blocks updating one address
  // that way lose updates on a GPU.
  uint64_t split_read_address;
  uint64_t split_read_writer;
  uint64_t split_read_waited_at;
  // [address, bytes] The running block's shared memory on this OS thread
  // (both builds; set by the library as each block starts): its static
  // __shared__ variables (the library's thread-local block) and its dynamic
  // shared arena. The plain build's atomics on it are plain updates.
  uintptr_t shared_static_begin;
  uint64_t shared_static_bytes;
  uintptr_t shared_dynamic_begin;
  // The running GPU thread's built-in variables (both builds; the library
  // sets them as a block starts and as its threads switch): threadIdx,
  // blockIdx, blockDim and gridDim. Here, a read costs a load or two; in the
  // library's own thread-local data it cost a call to __tls_get_addr, which
  // g++ repeated after every store it could not prove apart (a grid-stride
  // loop reloaded gridDim once per iteration).
  kerneleval_cpu_dim3 thread_idx;
  kerneleval_cpu_dim3 block_idx;
  kerneleval_cpu_dim3 block_dim;
  kerneleval_cpu_dim3 grid_dim;
} kerneleval_cpu_thread_state;

// The cross-block race check of an interleaved build (one per runtime,
// shared by the OS threads running a grid's blocks). A plain store of a
// block to checked memory (device buffers, __device__ variables) is
// recorded by 4-byte granule in `writes` (direct-mapped, four words a slot:
// granule << 19 | byte mask << 11 | grid, bit 18 set while a store rewrites
// the slot; block << 32 | clock; the writer's release clock, the latest of
// every writer's for a read-modify-write (a release sequence); 1 where the
// store completed an update made of two operations, else 0); a plain load
// by another block of bytes recorded in the same grid is a race unless the
// loading block waited after the store (an atomic operation, a volatile
// or __ldcg load of memory another block stored to in the grid: each such
// wait ticks `clock`). A block reading what
// another wrote without waiting for it reads whatever is there on a GPU,
// where blocks run in any order or at once.
#define KERNELEVAL_CPU_RACE_RANGES 32u
#define KERNELEVAL_CPU_RACE_NAME_BYTES 40u
typedef struct kerneleval_cpu_race_range {
  uint64_t begin;          // [address]
  uint64_t end;            // [address] one past the last byte
  uint64_t written_in;     // the grid tag that last recorded a store here
  uint32_t element_bytes;  // the buffer's element size (0: not an array)
  char name[KERNELEVAL_CPU_RACE_NAME_BYTES];
} kerneleval_cpu_race_range;
typedef struct kerneleval_cpu_race_check {
  uint64_t* writes;
  uint64_t slot_mask;  // slots - 1 (2^slot_bits - 1)
  uint64_t slot_bits;
  // Odd, drawn per grid: granules a multiple of the table's span apart go
  // to slots no kernel can tell in advance (with a plain index, a store
  // 2 MiB away from y[row] replaced y[row]'s record and hid a race).
  uint64_t slot_multiplier;
  uint64_t grid;   // the running grid's tag, 1..2047
  uint64_t clock;  // synchronising operations in this grid (atomic)
  uint32_t range_count;
  kerneleval_cpu_race_range ranges[KERNELEVAL_CPU_RACE_RANGES];
  // The first race of the grid: set once (found 0 -> 1) by its reader.
  uint32_t found;
  uint32_t bytes;
  uint64_t reader;   // the loading block
  uint64_t writer;   // the block whose store it read (low 32 bits)
  uint64_t address;  // of the load
  uint32_t kind;     // kerneleval_cpu_race_kind
} kerneleval_cpu_race_check;
enum kerneleval_cpu_race_kind {
  // A plain load of another block's store with no wait since.
  KERNELEVAL_CPU_RACE_PLAIN_LOAD = 0,
  // An __ldg (ld.global.nc) of another block's store: a race whether the
  // loading block waited or not (the read-only cache is not kept coherent
  // with stores made during the kernel).
  KERNELEVAL_CPU_RACE_NON_COHERENT_LOAD = 1,
  // A store completing an update split in two (split_read_address): the
  // block read the address with a synchronising load where a plain one
  // would have raced, finding another block's update split alike, then
  // stored to it with no other wait between.
  KERNELEVAL_CPU_RACE_SPLIT_UPDATE = 2,
  // A plain load of another block's store that the loading block waited
  // for no release covering: it waited after the store, on something the
  // writer set with no fence between the two.
  KERNELEVAL_CPU_RACE_UNFENCED_STORE = 3,
};
#define KERNELEVAL_CPU_RACE_SLOT_WORDS 4u
#define KERNELEVAL_CPU_RACE_GRID_BITS 11u
#define KERNELEVAL_CPU_RACE_MASK_SHIFT 11u
#define KERNELEVAL_CPU_RACE_GRANULE_SHIFT 19u
enum kerneleval_cpu_interleave_kind {
  // The others run up to their own next point, all in turn.
  KERNELEVAL_CPU_INTERLEAVE_STORE = 0,
  // Runs again once nothing else can, one spinner at a time (a lock's
  // waiters let its holder finish first).
  KERNELEVAL_CPU_INTERLEAVE_SPIN = 1,
};
typedef struct kerneleval_cpu_runtime {
  uint32_t abi_version;  // KERNELEVAL_CPU_ABI_VERSION
  uint32_t size;         // sizeof(kerneleval_cpu_runtime)
  // Runs a grid; returns nullptr when every block finished, else a message
  // (invalid configuration). Faults in kernel code end the process.
  const char* (*run_grid)(const kerneleval_cpu_launch* launch, kerneleval_cpu_thread_fn fn,
                          void* closure);
  uint32_t (*next_thread)(void);
  // Block-wide barrier; returns the count / and / or of the predicates.
  int32_t (*barrier)(uint32_t kind, int32_t predicate);
  // Warp rendezvous: all lanes of op->mask that have not exited arrive, then
  // every lane gets its result (shuffled value bits, ballot mask, ...).
  uint64_t (*warp)(const kerneleval_cpu_warp_op* op);
  void (*yield)(void);            // __nanosleep: let the block's other threads run
  void* (*dynamic_shared)(void);  // this OS thread's dynamic shared memory
  // Device printf: bytes still allowed (0: stop formatting), then consume.
  size_t (*print_budget)(void);
  void (*print)(const char* text, size_t length);
  void* (*heap_alloc)(size_t bytes);  // device malloc, bounded; nullptr when full
  void (*heap_free)(void* pointer);
  void (*trap)(const char* message);  // __trap, assert: ends the run (does not return)
  // A store or spin point of an interleaved build (the prelude's "Store
  // points"; kerneleval_cpu_interleave_kind): the block's other threads run
  // before this one goes on. Nothing outside a block's thread (static
  // initialisers, launchers).
  void (*interleave)(uint32_t kind);
  // [bytes] This OS thread's kerneleval_cpu_thread_state lies this far from
  // the thread pointer (__builtin_thread_pointer()), the same on every
  // thread (static TLS). KERNELEVAL_CPU_NO_THREAD_STATE where the runtime's
  // thread-local data is not static (a runtime in a library opened after
  // start-up, such as the tests' fake CUDA driver, which runs plain builds
  // only): each thread's block lies apart there, and the offset taken on one
  // thread pointed elsewhere on the others.
  int64_t thread_state_offset;
  // The calling OS thread's instance of the TLS block of the module whose
  // code holds `code` (the library: its static __shared__ variables among
  // its thread-local data), its size [bytes] and how many of its first
  // bytes have initial values (.tdata; the rest, .tbss, starts as zeros);
  // 0, 0 and 0 if none. For __cvta_generic_to_shared's offsets, and each
  // block's fill of the .tbss part, where every __shared__ variable lives.
  void (*tls_block)(const void* code, uint64_t* begin, uint64_t* bytes,
                    uint64_t* initialised_bytes);
} kerneleval_cpu_runtime;

// NOLINTEND(readability-identifier-naming)

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // KERNELEVAL_CPU_ABI_H_
