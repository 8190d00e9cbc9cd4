// CUDA's device programming model on the host, for the CPU backend.
//
// Every submission is compiled by the host C++ compiler (g++ -std=c++20) as
//   #include "kerneleval_cpu_prelude.h"
//   #line 1 "kernel.cu"
//   <the submission, with `extern __shared__` declarations rewritten>
//   <one launcher per kernel named in the plan>
// into a shared object that the runner process dlopen()s. This header maps
// CUDA's keywords, built-in variables and intrinsics onto host C++; the
// execution model (blocks on OS threads, threads of a block as fibers) lives
// in the runtime (evaluator/cpu/runtime.cc) behind kerneleval_cpu_abi.h.
//
// Not a GPU: timings of code compiled with this header are CPU times.
#ifndef KERNELEVAL_CPU_PRELUDE_H_
#define KERNELEVAL_CPU_PRELUDE_H_

// ---- 1. Standard headers, all before any keyword macro below (libstdc++
// itself spells __attribute__((__noinline__)), and printf/malloc/free become
// function-like macros for device code).
#include <alloca.h>
#include <float.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cassert>
#include <cfenv>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <limits>
#include <memory>
#include <new>
#include <numeric>
#include <tuple>
#include <type_traits>
#include <utility>

// ---- 2. The toolkit's host-compatible headers: vector types with CUDA's
// alignment (float4 is 16-byte aligned), make_float4 & co., dim3, and
// __half / __nv_bfloat16 with their host arithmetic.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "kerneleval_cpu_abi.h"

// Headers a submission may include that have no host meaning: their include
// guards are taken so that including them is harmless (support for what they
// declare, where there is any, is below).
#define _COOPERATIVE_GROUPS_H_
#define _COOPERATIVE_GROUPS_REDUCE_H
#define _COOPERATIVE_GROUPS_SCAN_H
#define _COOPERATIVE_GROUPS_MEMCPY_ASYNC
#define _CUDA_PIPELINE_PRIMITIVES_H_    // __pipeline_memcpy_async & co. are below
#define _CUDA_PIPELINE_H_               // (its nvcuda::experimental::pipeline is not)
#define __DEVICE_LAUNCH_PARAMETERS_H__  // threadIdx & co. are below

// ---- 3. Keywords.
#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __constant__
#undef __managed__
#undef __forceinline__
#undef __noinline__
#undef __grid_constant__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
// One block runs on one OS thread at a time (its threads are fibers of that
// OS thread), so a thread-local variable is exactly per-block storage. At
// block scope thread_local implies static. `used`: g++ folded a block-scope
// variable that no code writes and whose address never escapes to its zero
// initial value (read 0, where the block's drawn fill gives a value drawn per run).
#define __shared__ __attribute__((used)) thread_local
#define __constant__
#define __managed__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __grid_constant__
#define __launch_bounds__(...)
#define __maxnreg__(...)
#define __cluster_dims__(...)
// NVRTC's (clang's) optimisation hint; g++ has none by that name. Not
// evaluated, as there.
#define __builtin_assume(...) static_cast<void>(0)
#ifndef __restrict__
#define __restrict__ __restrict
#endif

// ---- 4. Built-in variables: threadIdx, blockIdx, blockDim and gridDim are
// read, by value, from this OS thread's state in the runner (BuiltIns()
// below; the fiber switch code restores threadIdx after every suspension).
// Prelude state of its own lies in the library's thread-local data, in the
// default TLS model: one initial-exec variable would put the whole module's
// thread-local storage, __shared__ arrays included, into the small static
// TLS block, and dlopen() would fail with "cannot allocate memory in static
// TLS block".
// The prelude's own thread-local state goes with the initialised data
// (.tdata), whatever its initial value: each block starts with the rest of
// the library's thread-local block (.tbss, where every __shared__ variable
// lies, however its declaration was spelt) filled with a pattern drawn per run
// (FillThreadLocalZeros).
// A section of its own for each (a local static of an inline function is
// in a COMDAT group, and one section cannot hold both kinds).
#define KERNELEVAL_CPU_TDATA(name) __attribute__((section(".tdata.kerneleval." #name)))
// The running GPU thread's virtual clock [ns] (section 10): ticks since the
// thread started, to which clock64() and __globaltimer() add the launch's
// drawn starts (kerneleval_cpu_block_info).
static thread_local long long kerneleval_cpu_virtual_clock KERNELEVAL_CPU_TDATA(virtual_clock);
static thread_local long long kerneleval_cpu_clock_start KERNELEVAL_CPU_TDATA(clock_start);
static thread_local unsigned long long kerneleval_cpu_globaltimer_start
    KERNELEVAL_CPU_TDATA(globaltimer_start);
static constexpr int warpSize = 32;

namespace kerneleval_cpu::detail {

inline const kerneleval_cpu_runtime* runtime = nullptr;

inline const kerneleval_cpu_runtime& rt() { return *runtime; }

// The prelude's own code: neither instrumented for store points (section
// 5b) nor checked for undefined behaviour (section 10b); both are for the
// submission's code. Checks in the store-point bookkeeping, which runs at
// every load and store, cost the correctness stage 10-18 %. In the timed
// build, which has no store points and only the shift and conversion
// checks (HostCompiler), nothing: g++ never inlines a function whose
// sanitizers differ from its caller's, and atomicAdd's test of the address
// (IsBlockShared) became a call there, a shared-memory histogram's
// atomicAdd 1.4x its plain `+= 1` (cpu_backend_bench).
#if defined(__SANITIZE_THREAD__)
#define KERNELEVAL_CPU_UNCHECKED \
  __attribute__((no_sanitize_thread, no_sanitize("undefined,float-cast-overflow")))
#else
#define KERNELEVAL_CPU_UNCHECKED
#endif

// This OS thread's state (kerneleval_cpu_abi.h), in the runner's static TLS
// (one add to the thread pointer, where the library's own thread-local
// data takes a call to __tls_get_addr): the running block's shared memory
// and, for the store hooks, the block's loads since its last barrier (a
// store or an atomic to one of them may be the write of a read-modify-write)
// and the running thread's stack top. nullptr before kerneleval_cpu_init
// (static initialisers), and where the runtime has none (its
// thread_state_offset).
// thread_state_offset is the runtime's, copied by InitRuntime: one load
// fewer on every hook and every read of a built-in variable.
inline int64_t thread_state_offset = KERNELEVAL_CPU_NO_THREAD_STATE;
KERNELEVAL_CPU_UNCHECKED inline kerneleval_cpu_thread_state* ThreadState() {
  if (__builtin_expect(thread_state_offset == KERNELEVAL_CPU_NO_THREAD_STATE, 0)) return nullptr;
  return reinterpret_cast<kerneleval_cpu_thread_state*>(
      static_cast<char*>(__builtin_thread_pointer()) + thread_state_offset);
}
// The prelude's own accesses to the built-in variables are not instrumented
// in an interleaved build (see "Store points" below): they are this OS
// thread's bookkeeping, not memory of the kernel's.
#if defined(__SANITIZE_THREAD__)
#define KERNELEVAL_CPU_BOOKKEEPING KERNELEVAL_CPU_UNCHECKED __attribute__((noinline)) inline
#else
#define KERNELEVAL_CPU_BOOKKEEPING inline
#endif

// The built-in variables, laid out as kerneleval_cpu_thread_state keeps them
// (from its thread_idx on).
struct BuiltInVariables {
  uint3 thread_idx;
  uint3 block_idx;
  dim3 block_dim;
  dim3 grid_dim;
};
static_assert(sizeof(uint3) == sizeof(kerneleval_cpu_dim3) &&
              sizeof(dim3) == sizeof(kerneleval_cpu_dim3));
static_assert(offsetof(BuiltInVariables, grid_dim) ==
              offsetof(kerneleval_cpu_thread_state, grid_dim) -
                  offsetof(kerneleval_cpu_thread_state, thread_idx));
static_assert(offsetof(BuiltInVariables, block_dim) ==
              offsetof(kerneleval_cpu_thread_state, block_dim) -
                  offsetof(kerneleval_cpu_thread_state, thread_idx));
static_assert(offsetof(BuiltInVariables, block_idx) ==
              offsetof(kerneleval_cpu_thread_state, block_idx) -
                  offsetof(kerneleval_cpu_thread_state, thread_idx));

// Where the runtime keeps no state of ours (and before
// kerneleval_cpu_init): this library's thread-local copy.
static thread_local BuiltInVariables tls_built_ins KERNELEVAL_CPU_TDATA(built_ins);

// A read is a load of thread_state_offset and one relative to the thread
// pointer: no call, so g++ keeps blockDim.x and gridDim.x cheap in a loop
// even where it must reload them after each store.
KERNELEVAL_CPU_UNCHECKED inline BuiltInVariables& BuiltIns() {
  if (kerneleval_cpu_thread_state* state = ThreadState()) {
    return *reinterpret_cast<BuiltInVariables*>(&state->thread_idx);
  }
  return tls_built_ins;
}

// What the kernel's threadIdx, blockIdx, blockDim and gridDim expand to: a
// const value, read-only as on a GPU (`auto& t = threadIdx;` still binds).
// An interleaved build calls them, uninstrumented: this OS thread's
// bookkeeping is not the kernel's memory.
#if defined(__SANITIZE_THREAD__)
#define KERNELEVAL_CPU_BUILT_IN_READ KERNELEVAL_CPU_BOOKKEEPING
#else
#define KERNELEVAL_CPU_BUILT_IN_READ __attribute__((always_inline)) inline
#endif
KERNELEVAL_CPU_BUILT_IN_READ const uint3 ThreadIdx() { return BuiltIns().thread_idx; }
KERNELEVAL_CPU_BUILT_IN_READ const uint3 BlockIdx() { return BuiltIns().block_idx; }
KERNELEVAL_CPU_BUILT_IN_READ const dim3 BlockDim() { return BuiltIns().block_dim; }
KERNELEVAL_CPU_BUILT_IN_READ const dim3 GridDim() { return BuiltIns().grid_dim; }
#define threadIdx (::kerneleval_cpu::detail::ThreadIdx())
#define blockIdx (::kerneleval_cpu::detail::BlockIdx())
#define blockDim (::kerneleval_cpu::detail::BlockDim())
#define gridDim (::kerneleval_cpu::detail::GridDim())

// Another thread starts or resumes on this OS thread.
KERNELEVAL_CPU_BOOKKEEPING void SetThreadIdx(uint3 index) {
  BuiltIns().thread_idx = index;
#if defined(__SANITIZE_THREAD__)
  if (kerneleval_cpu_thread_state* state = ThreadState()) state->failed_cas_address = 0;
#endif
}

// What a fiber switch overwrites: the running thread's built-in index (and
// its stack top in an interleaved build).
struct SwitchState {
  uint3 thread_idx;
  uintptr_t stack_top;
  long long clock;  // its virtual clock [ns]
};

KERNELEVAL_CPU_BOOKKEEPING SwitchState SaveSwitchState() {
#if defined(__SANITIZE_THREAD__)
  const kerneleval_cpu_thread_state* state = ThreadState();
  return {BuiltIns().thread_idx, state ? state->stack_top : 0, kerneleval_cpu_virtual_clock};
#else
  return {BuiltIns().thread_idx, 0, kerneleval_cpu_virtual_clock};
#endif
}

KERNELEVAL_CPU_BOOKKEEPING void RestoreSwitchState(const SwitchState& saved) {
  SetThreadIdx(saved.thread_idx);
  kerneleval_cpu_virtual_clock = saved.clock;
#if defined(__SANITIZE_THREAD__)
  if (kerneleval_cpu_thread_state* state = ThreadState()) state->stack_top = saved.stack_top;
#endif
}

// This OS thread's instance of the library's thread-local block (static
// __shared__ variables among its data): where it begins, its size and how
// much of it has initial values (.tdata; the rest, .tbss, starts as zeros)
// [bytes]. Found once per OS thread, once allocated (a module's block is
// allocated at the thread's first use of its thread-local data).
struct SharedWindow {
  uintptr_t static_begin = 0;
  size_t static_bytes = 0;
  size_t initialised_bytes = 0;
};
inline const SharedWindow& ThisThreadsSharedWindow() {
  static thread_local SharedWindow window KERNELEVAL_CPU_TDATA(shared_window);
  if (window.static_begin == 0 && runtime != nullptr) {
    uint64_t begin = 0, bytes = 0, initialised = 0;
    rt().tls_block(reinterpret_cast<const void*>(&ThisThreadsSharedWindow), &begin, &bytes,
                   &initialised);
    window = {static_cast<uintptr_t>(begin), static_cast<size_t>(bytes),
              static_cast<size_t>(initialised)};
  }
  return window;
}

// [bytes] Each OS thread's dynamic shared memory arena (the runtime's).
constexpr size_t kDynamicSharedWindowBytes = size_t{227} << 10;

// Whether `p` is the running block's shared memory, static or dynamic (as
// SetBlock noted it in this OS thread's state).
KERNELEVAL_CPU_UNCHECKED inline bool IsBlockShared(const volatile void* p) {
  const kerneleval_cpu_thread_state* state = ThreadState();
  if (!state) return false;
  const auto a = reinterpret_cast<uintptr_t>(p);
  return a - state->shared_static_begin < state->shared_static_bytes ||
         (state->shared_dynamic_begin != 0 &&
          a - state->shared_dynamic_begin < kDynamicSharedWindowBytes);
}

// As a block starts on this OS thread: its zero-initialised thread-local
// storage (every __shared__ variable, none of the prelude's state) filled
// with the run's drawn pattern (kerneleval_cpu_block_info::shared_fill: NaN
// in every float type, a drawn value in an int). Unfilled, a block
// read what the last block on the OS thread wrote (a reduction over slots
// no thread wrote passed), and a table built once per thread served later
// blocks and timed runs. However the variable is declared (a macro of any
// kind, a name pasted from two halves, a header's template), it lies here.
KERNELEVAL_CPU_UNCHECKED inline void FillThreadLocalZeros(const kerneleval_cpu_block_info* info) {
  const SharedWindow& window = ThisThreadsSharedWindow();
  if (window.static_begin == 0 || window.initialised_bytes >= window.static_bytes) return;
  auto* begin = reinterpret_cast<unsigned char*>(window.static_begin + window.initialised_bytes);
  size_t bytes = window.static_bytes - window.initialised_bytes;
  if (info->shared_fill != nullptr) {
    const size_t patterned = bytes < info->shared_fill_bytes ? bytes : info->shared_fill_bytes;
    __builtin_memcpy(begin, info->shared_fill, patterned);
    begin += patterned;
    bytes -= patterned;
  }
  __builtin_memset(begin, 0xff, bytes);
}

// The running block's kerneleval_cpu_block_info::serial: SetBlock fills once
// per block; the block's asynchronous copies are its own (BlockAsyncCopies).
static thread_local uint64_t tls_block_serial KERNELEVAL_CPU_TDATA(block_serial) = 0;

// A namespace-scope `extern __shared__` array, as rewritten (source_rewrite's
// RewriteExternShared): a thread-local pointer among the prelude's data
// and, after it, KERNELEVAL_CPU_DYNAMIC_SHARED(name): a constant-initialised
// pointer to a setter, placed in the section kerneleval_cpu_dynamic_shared,
// every one of which SetBlock calls as each block starts (this OS thread's
// dynamic shared memory), between the linker's __start_ and __stop_ symbols
// of the section. Nothing runs when the library loads (before, a static
// object's constructor linked each setter into a list; the host build now
// refuses any load-time code, elf_symbols.h). The prelude's own no-op
// entry keeps the section, and so both symbols, in every library.
using DynamicSharedSetter = void (*)(void* arena);
inline void NoDynamicSharedPointer(void* /*arena*/) {}
[[gnu::used, gnu::section("kerneleval_cpu_dynamic_shared")]] constinit static DynamicSharedSetter
    kerneleval_cpu_dynamic_shared_none = &NoDynamicSharedPointer;
extern "C" [[gnu::visibility("hidden")]] DynamicSharedSetter
    __start_kerneleval_cpu_dynamic_shared[];  // NOLINT(bugprone-reserved-identifier): the linker's
extern "C" [[gnu::visibility("hidden")]] DynamicSharedSetter
    __stop_kerneleval_cpu_dynamic_shared[];  // NOLINT(bugprone-reserved-identifier): the linker's
#define KERNELEVAL_CPU_DYNAMIC_SHARED(variable) \
  KERNELEVAL_CPU_DYNAMIC_SHARED_AS(variable, __COUNTER__)
#define KERNELEVAL_CPU_DYNAMIC_SHARED_AS(variable, n) KERNELEVAL_CPU_DYNAMIC_SHARED_AS_(variable, n)
#define KERNELEVAL_CPU_DYNAMIC_SHARED_AS_(variable, n)                                           \
  [[maybe_unused, gnu::used, gnu::section("kerneleval_cpu_dynamic_shared")]] constinit static :: \
      kerneleval_cpu::detail::DynamicSharedSetter kerneleval_cpu_dynamic_shared_##n =            \
          +[](void* arena) { variable = reinterpret_cast<decltype(variable)>(arena); }

KERNELEVAL_CPU_BOOKKEEPING void SetBlock(const kerneleval_cpu_block_info* info) {
  // First: the first look-up of this thread's thread-local block (through
  // the dynamic linker, AbiTlsBlock) was seen to set the block's data back
  // to its initial values; done after the fill, it undid the fill of the
  // thread's first block and this function's bookkeeping with it.
  ThisThreadsSharedWindow();
  // SetBlock runs each time a fiber takes up the block's threads: fill once.
  if (tls_block_serial != info->serial) {
    tls_block_serial = info->serial;
    kerneleval_cpu_clock_start = info->clock_start;
    kerneleval_cpu_globaltimer_start = info->globaltimer_start;
    if (info->shared_left_over == 0) FillThreadLocalZeros(info);
    void* const dynamic_arena = rt().dynamic_shared();
    if (kerneleval_cpu_thread_state* state = ThreadState()) {
      const SharedWindow& window = ThisThreadsSharedWindow();
      state->shared_static_begin = window.static_begin;
      state->shared_static_bytes = window.static_bytes;
      state->shared_dynamic_begin = reinterpret_cast<uintptr_t>(dynamic_arena);
    }
    for (uintptr_t p = reinterpret_cast<uintptr_t>(__start_kerneleval_cpu_dynamic_shared);
         p < reinterpret_cast<uintptr_t>(__stop_kerneleval_cpu_dynamic_shared);
         p += sizeof(DynamicSharedSetter)) {
      (*reinterpret_cast<const DynamicSharedSetter*>(p))(dynamic_arena);
    }
  }
  BuiltInVariables& built_ins = BuiltIns();
  built_ins.block_idx = uint3{info->block_idx.x, info->block_idx.y, info->block_idx.z};
  built_ins.block_dim = dim3(info->block_dim.x, info->block_dim.y, info->block_dim.z);
  built_ins.grid_dim = dim3(info->grid_dim.x, info->grid_dim.y, info->grid_dim.z);
}

// Every call that may switch fibers goes through this: the other fibers of the
// block overwrite threadIdx while this one waits.
template <class F>
__attribute__((always_inline)) inline auto Suspending(F&& call) {
  const SwitchState saved = SaveSwitchState();
  auto result = call();
  RestoreSwitchState(saved);
  return result;
}

inline uint32_t LinearThreadIndex() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

// The lanes of the caller's tile of `tile_size` (1, 2, 4, ..., 32) threads.
inline unsigned TileMask(unsigned tile_size) {
  const unsigned base = LinearThreadIndex() & 31u & ~(tile_size - 1);
  return (tile_size == 32 ? 0xffffffffu : ((1u << tile_size) - 1u)) << base;
}

// A shuffled value's bytes. Trivially destructible, not trivially
// copyable: the host's __half2 and __nv_bfloat162 have copy assignments of
// their own (their bytes are all they hold; CUDA shuffles them).
template <class T>
inline uint64_t ToBits(const T& value) {
  static_assert(std::is_trivially_destructible_v<T> && sizeof(T) <= 8,
                "warp shuffles take a value of at most 8 bytes");
  uint64_t bits = 0;
  __builtin_memcpy(&bits, static_cast<const void*>(&value), sizeof(T));
  return bits;
}

template <class T>
inline T FromBits(uint64_t bits) {
  T value;
  __builtin_memcpy(static_cast<void*>(&value), &bits, sizeof(T));
  return value;
}

inline uint64_t Warp(uint32_t kind, unsigned mask, uint64_t value, int lane_arg, int width,
                     int predicate) {
  const kerneleval_cpu_warp_op op{kind, mask, value, lane_arg, width, predicate, 0};
  return Suspending([&] { return rt().warp(&op); });
}

inline int32_t Barrier(uint32_t kind, int32_t predicate) {
  return Suspending([&] { return rt().barrier(kind, predicate); });
}

}  // namespace kerneleval_cpu::detail

// ---- 5. Synchronisation and warp operations.
inline void __syncthreads() { kerneleval_cpu::detail::Barrier(KERNELEVAL_CPU_BARRIER_PLAIN, 1); }
inline int __syncthreads_count(int predicate) {
  return kerneleval_cpu::detail::Barrier(KERNELEVAL_CPU_BARRIER_COUNT, predicate != 0);
}
inline int __syncthreads_and(int predicate) {
  return kerneleval_cpu::detail::Barrier(KERNELEVAL_CPU_BARRIER_AND, predicate != 0);
}
inline int __syncthreads_or(int predicate) {
  return kerneleval_cpu::detail::Barrier(KERNELEVAL_CPU_BARRIER_OR, predicate != 0);
}
inline void __syncwarp(unsigned mask = 0xffffffffu) {
  kerneleval_cpu::detail::Warp(KERNELEVAL_CPU_WARP_SYNC, mask, 0, 0, 32, 0);
}

template <class T>
inline T __shfl_sync(unsigned mask, T value, int src_lane, int width = warpSize) {
  using namespace kerneleval_cpu::detail;
  return FromBits<T>(Warp(KERNELEVAL_CPU_WARP_SHFL, mask, ToBits(value), src_lane, width, 0));
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = warpSize) {
  using namespace kerneleval_cpu::detail;
  return FromBits<T>(
      Warp(KERNELEVAL_CPU_WARP_SHFL_UP, mask, ToBits(value), static_cast<int>(delta), width, 0));
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = warpSize) {
  using namespace kerneleval_cpu::detail;
  return FromBits<T>(
      Warp(KERNELEVAL_CPU_WARP_SHFL_DOWN, mask, ToBits(value), static_cast<int>(delta), width, 0));
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = warpSize) {
  using namespace kerneleval_cpu::detail;
  return FromBits<T>(Warp(KERNELEVAL_CPU_WARP_SHFL_XOR, mask, ToBits(value), lane_mask, width, 0));
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return static_cast<unsigned>(
      kerneleval_cpu::detail::Warp(KERNELEVAL_CPU_WARP_BALLOT, mask, 0, 0, 32, predicate != 0));
}
inline int __any_sync(unsigned mask, int predicate) {
  return static_cast<int>(
      kerneleval_cpu::detail::Warp(KERNELEVAL_CPU_WARP_ANY, mask, 0, 0, 32, predicate != 0));
}
inline int __all_sync(unsigned mask, int predicate) {
  return static_cast<int>(
      kerneleval_cpu::detail::Warp(KERNELEVAL_CPU_WARP_ALL, mask, 0, 0, 32, predicate != 0));
}
inline int __uni_sync(unsigned mask, int predicate) {
  const unsigned votes = __ballot_sync(mask, predicate);
  return votes == 0 || votes == (mask & __ballot_sync(mask, 1));
}
// The lanes of the caller's warp in its branch: those that reach this same
// call (its return address) together: the runtime answers once the warp's
// other lanes wait elsewhere (a warp operation, a barrier) or have exited,
// or, when some of them only spin or sleep, after a round of those in which
// no thread arrived anywhere.
// Every lane that has not exited would count lanes waiting at the barrier
// after a loop the others are still in, and a __match_any_sync(
// __activemask(), v) waited for them forever. A device function that calls
// it and is not inlined makes one call of its callers' (their lanes count
// together).
__attribute__((noinline)) inline unsigned __activemask() {
  return static_cast<unsigned>(kerneleval_cpu::detail::Warp(
      KERNELEVAL_CPU_WARP_ACTIVE_MASK, 0, reinterpret_cast<uintptr_t>(__builtin_return_address(0)),
      0, 32, 0));
}

#define KERNELEVAL_CPU_WARP_REDUCE(name, type, kind)                                        \
  inline type name(unsigned mask, type value) {                                             \
    return static_cast<type>(static_cast<uint32_t>(                                         \
        kerneleval_cpu::detail::Warp(kind, mask, static_cast<uint32_t>(value), 0, 32, 0))); \
  }
KERNELEVAL_CPU_WARP_REDUCE(__reduce_add_sync, unsigned, KERNELEVAL_CPU_WARP_REDUCE_ADD)
KERNELEVAL_CPU_WARP_REDUCE(__reduce_add_sync, int, KERNELEVAL_CPU_WARP_REDUCE_ADD)
KERNELEVAL_CPU_WARP_REDUCE(__reduce_min_sync, unsigned, KERNELEVAL_CPU_WARP_REDUCE_MIN_U)
KERNELEVAL_CPU_WARP_REDUCE(__reduce_min_sync, int, KERNELEVAL_CPU_WARP_REDUCE_MIN_S)
KERNELEVAL_CPU_WARP_REDUCE(__reduce_max_sync, unsigned, KERNELEVAL_CPU_WARP_REDUCE_MAX_U)
KERNELEVAL_CPU_WARP_REDUCE(__reduce_max_sync, int, KERNELEVAL_CPU_WARP_REDUCE_MAX_S)
KERNELEVAL_CPU_WARP_REDUCE(__reduce_and_sync, unsigned, KERNELEVAL_CPU_WARP_REDUCE_AND)
KERNELEVAL_CPU_WARP_REDUCE(__reduce_or_sync, unsigned, KERNELEVAL_CPU_WARP_REDUCE_OR)
KERNELEVAL_CPU_WARP_REDUCE(__reduce_xor_sync, unsigned, KERNELEVAL_CPU_WARP_REDUCE_XOR)
#undef KERNELEVAL_CPU_WARP_REDUCE

template <class T>
inline unsigned __match_any_sync(unsigned mask, T value) {
  using namespace kerneleval_cpu::detail;
  return static_cast<unsigned>(Warp(KERNELEVAL_CPU_WARP_MATCH_ANY, mask, ToBits(value), 0, 32, 0));
}
template <class T>
inline unsigned __match_all_sync(unsigned mask, T value, int* predicate) {
  using namespace kerneleval_cpu::detail;
  const uint64_t r = Warp(KERNELEVAL_CPU_WARP_MATCH_ALL, mask, ToBits(value), 0, 32, 0);
  *predicate = static_cast<int>((r >> 32) & 1);
  return static_cast<unsigned>(r);
}

KERNELEVAL_CPU_UNCHECKED inline void __nanosleep(unsigned nanoseconds) {
  kerneleval_cpu_virtual_clock += nanoseconds;  // section 10
  kerneleval_cpu::detail::Suspending([] {
    kerneleval_cpu::detail::rt().yield();
    return 0;
  });
}

// Memory fences: blocks run in parallel on OS threads; the threads of one
// block share an OS thread.
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_system() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_signal_fence(std::memory_order_seq_cst); }

// ---- 5b. Store points (the interleaved build). The threads of a block run
// one after another between barriers, so a plain read-modify-write of memory
// other threads share (a histogram without atomics) loses no update here,
// where on a GPU concurrent lanes load the same value and overwrite each
// other's. The build that runs correctness cases is therefore compiled with
// -fsanitize=thread for its instrumentation alone: g++ calls
// __tsan_read4(address) before every load, __tsan_write4(address) before
// every store and __tsan_atomic32_fetch_add(...) for every atomic, and the
// definitions below stand in for ThreadSanitizer's runtime, which is never
// linked. A store (or an atomic) to memory that a thread of the block loaded
// since the block started or last passed a barrier, other than the storing
// thread's own stack, is a store point: first the block's other threads run
// up to their own next one, so a racy update is lost as on a GPU (also one
// whose load and store lie on either side of a warp operation, after which
// a warp goes on before the next one starts). A plain store without such a
// load is not (outputs, and initialisers that publish a value after setting
// their guard, run as before). Spin points let the others run too, at a
// lower priority (one spinner at a time, when nothing else can run), so a
// lock's holder held at a store point finishes before every waiter
// retries: a volatile load, a compare-and-swap that fails twice alike
// (FailedCas), an atomic that changes nothing.
#if defined(__SANITIZE_THREAD__)
namespace kerneleval_cpu::detail {

KERNELEVAL_CPU_BOOKKEEPING void SetFiberStackTop(uintptr_t top) {
  if (kerneleval_cpu_thread_state* state = ThreadState()) state->stack_top = top;
}

KERNELEVAL_CPU_UNCHECKED inline kerneleval_cpu_load_slot* LoadSet(
    kerneleval_cpu_thread_state* state, uint64_t granule) {
  static_assert(KERNELEVAL_CPU_LOAD_SETS == 512);
  return state->loads[(granule * state->set_multiplier) >> 55];
}

KERNELEVAL_CPU_UNCHECKED inline void NoteLoad(const volatile void* address) {
  kerneleval_cpu_thread_state* state = ThreadState();
  if (!state) return;
  const uint64_t granule = reinterpret_cast<uintptr_t>(address) >> 3;
  kerneleval_cpu_load_slot* set = LoadSet(state, granule);
  if (set[0].filled_in != state->epoch) {
    set[0] = {granule, state->epoch};
  } else if (set[0].granule != granule) {
    set[1] = {granule, state->epoch};
  }
}

// A load of `bytes` from `address`: its first and last granule (a float4
// load covers two).
KERNELEVAL_CPU_UNCHECKED inline void NoteLoads(const volatile void* address, unsigned long bytes) {
  NoteLoad(address);
  if (bytes > 8) NoteLoad(static_cast<const volatile char*>(address) + bytes - 1);
}

KERNELEVAL_CPU_UNCHECKED inline bool LoadedSinceBarrier(const volatile void* address) {
  kerneleval_cpu_thread_state* state = ThreadState();
  if (!state) return false;
  const uint64_t granule = reinterpret_cast<uintptr_t>(address) >> 3;
  const kerneleval_cpu_load_slot* set = LoadSet(state, granule);
  return (set[0].granule == granule && set[0].filled_in == state->epoch) ||
         (set[1].granule == granule && set[1].filled_in == state->epoch);
}

KERNELEVAL_CPU_UNCHECKED __attribute__((noinline)) inline void Interleave(uint32_t kind) {
  if (!runtime) return;  // a static initialiser, before kerneleval_cpu_init
  const SwitchState saved = SaveSwitchState();
  runtime->interleave(kind);
  RestoreSwitchState(saved);
}

KERNELEVAL_CPU_UNCHECKED __attribute__((noinline)) inline void StorePoint(
    const volatile void* address) {
  if (!LoadedSinceBarrier(address)) return;
  // The thread's own locals lie between this frame and its stack's top.
  const auto a = reinterpret_cast<uintptr_t>(address);
  if (a >= reinterpret_cast<uintptr_t>(__builtin_frame_address(0)) &&
      a < ThreadState()->stack_top) {
    return;
  }
  Interleave(KERNELEVAL_CPU_INTERLEAVE_STORE);
}

KERNELEVAL_CPU_UNCHECKED inline void AtomicPoint(const volatile void* address) {
  if (LoadedSinceBarrier(address)) Interleave(KERNELEVAL_CPU_INTERLEAVE_STORE);
}

KERNELEVAL_CPU_UNCHECKED inline void SpinPoint() { Interleave(KERNELEVAL_CPU_INTERLEAVE_SPIN); }

// A failed compare-and-swap is a spin point only when it repeats the
// thread's last one in this turn: a lock's waiter tries the same swap
// again, while a compare-and-swap loop retries at once with the value it
// found and succeeds (with every failure a spin point, 1,024 threads in
// such loops on one word failed ~n^2/2 times, 5-7x the plain build).
KERNELEVAL_CPU_UNCHECKED inline void FailedCas(const volatile void* address, uint64_t expected,
                                               uint64_t found) {
  kerneleval_cpu_thread_state* state = ThreadState();
  if (!state) return;
  const auto a = reinterpret_cast<uintptr_t>(address);
  if (state->failed_cas_address == a && state->failed_cas_expected == expected &&
      state->failed_cas_found == found) {
    SpinPoint();
    return;
  }
  state->failed_cas_address = a;
  state->failed_cas_expected = expected;
  state->failed_cas_found = found;
}

// A thread's atomic or __ldcg load that repeats its last such operation in
// this turn (same address, same value) is a spin point too: a thread
// polling a flag that another thread of its block sets (right on a GPU
// with independent thread scheduling, sm_70 on) spun for ever, the block's
// threads running one at a time and such loads never yielding. Kept in
// FailedCas's fields: a failed compare-and-swap never found its expected
// value, so neither kind repeats the other.
template <class T>
KERNELEVAL_CPU_UNCHECKED inline void RepeatedLoad(const volatile void* address, const T& value) {
  uint64_t bits = 0;
  __builtin_memcpy(&bits, &value, sizeof(T) < 8 ? sizeof(T) : 8);
  if constexpr (sizeof(T) > 8) {
    uint64_t rest = 0;
    __builtin_memcpy(&rest, reinterpret_cast<const char*>(&value) + 8,
                     sizeof(T) - 8 < 8 ? sizeof(T) - 8 : 8);
    bits ^= rest * 0x9E3779B97F4A7C15ull;
  }
  FailedCas(address, bits, bits);
}

// ---- 5c. The cross-block race check (kerneleval_cpu_race_check). A plain
// load of what another block stored in the same grid, with no synchronising
// operation of the loading block since that store, is a race: right here
// only because the writer happened to run first (a row's partial sums added
// with a plain `y[row] += s` by blocks far apart in the grid lose updates on
// a GPU, and passed here wherever those blocks did not overlap). Waiting
// for the writer properly (an atomic, volatile or __ldcg load of a flag
// that another block stored after a release: a __threadfence() or a
// release atomic) covers the stores recorded before that release and
// passes; a flag set with no fence after the data covers nothing (CUDA's
// atomics and volatile stores are relaxed). An operation on memory no
// other block stored in the grid waits for no one, nor does a fence
// (`atomicAdd(&unused, 0); y[row] += s;` and `__threadfence(); y[row] +=
// s;` would have passed).
KERNELEVAL_CPU_UNCHECKED inline kerneleval_cpu_race_range* RaceRange(
    kerneleval_cpu_race_check* race, uintptr_t a) {
  for (uint32_t i = 0; i < race->range_count; ++i) {
    kerneleval_cpu_race_range& r = race->ranges[i];
    if (a - r.begin < r.end - r.begin) return &r;
  }
  return nullptr;
}

// The race check of the running grid when `a` is checked memory.
KERNELEVAL_CPU_UNCHECKED inline kerneleval_cpu_race_check* CheckedAt(
    kerneleval_cpu_thread_state* state, uintptr_t a) {
  if (!state || !state->race_check || !RaceRange(state->race_check, a)) return nullptr;
  return state->race_check;
}

// A wait for another block covering every store recorded so far: where the
// check cannot tell what the wait covers (a slot another granule took, a
// slot being rewritten), a wait taken for all, never one missed.
KERNELEVAL_CPU_UNCHECKED inline void Acquired(kerneleval_cpu_thread_state* state) {
  state->waited_at = __atomic_add_fetch(&state->race_check->clock, 1, __ATOMIC_SEQ_CST);
  state->acquired_at = state->waited_at;
}

// A wait on a store whose writer(s) last released at clock `release`: it
// covers the stores recorded before that release (at a lower clock), not
// those made after it (a flag set with no fence after the data).
KERNELEVAL_CPU_UNCHECKED inline void AcquiredUpTo(kerneleval_cpu_thread_state* state,
                                                  uint64_t release) {
  state->waited_at = __atomic_add_fetch(&state->race_check->clock, 1, __ATOMIC_SEQ_CST);
  if (release > state->acquired_at) state->acquired_at = release;
}

// A release of the block (a __threadfence(), an atomic of release order or
// stronger): its stores so far are covered for whoever waits on a later one.
KERNELEVAL_CPU_UNCHECKED inline void Released() {
  kerneleval_cpu_thread_state* state = ThreadState();
  if (!state || !state->race_check) return;
  state->released_at = __atomic_add_fetch(&state->race_check->clock, 1, __ATOMIC_SEQ_CST);
}

// The bytes of 4-byte granule `g` that an access at `a` of `bytes` covers,
// as a mask of 4 bits. (One element of a 32-bit type per granule: with 8
// bytes, a block storing y[1] replaced the record of y[0]'s store.)
KERNELEVAL_CPU_UNCHECKED inline uint64_t GranuleMask(uintptr_t a, unsigned long bytes, uint64_t g) {
  const uintptr_t begin = a > (g << 2) ? a : (g << 2);
  const uintptr_t end = a + bytes < ((g + 1) << 2) ? a + bytes : ((g + 1) << 2);
  return ((uint64_t{1} << (end - begin)) - 1) << (begin & 3);
}

// Granule `g`'s slot: its low bits, xor a drawn function of the others
// (neighbouring granules keep neighbouring slots, for the cache).
KERNELEVAL_CPU_UNCHECKED inline uint64_t* RaceSlot(kerneleval_cpu_race_check* race, uint64_t g) {
  const uint64_t high = ((g >> race->slot_bits) * race->slot_multiplier) >> (64 - race->slot_bits);
  return race->writes + KERNELEVAL_CPU_RACE_SLOT_WORDS * ((g ^ high) & race->slot_mask);
}

// A slot's first word while a store rewrites it: blocks on two OS threads
// storing bytes of one word (z[18] and z[19] of an 8-bit output) wrote a
// slot's two words interleaved, one block's mask with the other's index,
// and a block loading its own byte was told another had stored it.
constexpr uint64_t kRaceSlotLocked = uint64_t{1} << 18;
constexpr uint64_t kRaceMaskBits = 0xf;  // 4 bytes a granule
constexpr uint64_t kRaceGridBits = (uint64_t{1} << KERNELEVAL_CPU_RACE_GRID_BITS) - 1;
// A slot's fourth word: the store completed an update made of two
// operations, a synchronising load that changed nothing and this store, by
// one block with no wait between (EndSplitUpdate).
constexpr uint64_t kRaceTwoOpUpdate = 1;

// Whether a slot's second word `stamp` records a store of the running block
// (block indices are kept in 32 bits).
KERNELEVAL_CPU_UNCHECKED inline bool StoredByRunningBlock(const kerneleval_cpu_thread_state* state,
                                                          uint64_t stamp) {
  return (stamp >> 32) == (state->block & 0xffffffffu);
}

// Whether slot word `word` (with `stamp`) may record a store of another
// block than the running one to granule `g` in this grid: a record of
// another granule of this grid may have replaced it (a wait taken for
// one, never one missed). No record of this grid: no store landed there.
KERNELEVAL_CPU_UNCHECKED inline bool MayBeAnotherBlocks(const kerneleval_cpu_thread_state* state,
                                                        const kerneleval_cpu_race_check* race,
                                                        uint64_t g, uint64_t word, uint64_t stamp) {
  if ((word & kRaceGridBits) != race->grid) return false;
  if ((word >> KERNELEVAL_CPU_RACE_GRANULE_SHIFT) != g) return true;
  return !StoredByRunningBlock(state, stamp);
}

// After a synchronising load of `a` (it has happened): a wait for another
// block when that block stored there in this grid, covering what the store
// released (its record's release clock).
KERNELEVAL_CPU_UNCHECKED inline void WaitedAt(kerneleval_cpu_thread_state* state, uintptr_t a) {
  kerneleval_cpu_race_check* race = CheckedAt(state, a);
  if (!race) return;
  const uint64_t g = a >> 2;
  const uint64_t* slot = RaceSlot(race, g);
  const uint64_t word = __atomic_load_n(&slot[0], __ATOMIC_ACQUIRE);
  if ((word & kRaceSlotLocked) != 0) return Acquired(state);
  if ((word & kRaceGridBits) != race->grid) return;
  if ((word >> KERNELEVAL_CPU_RACE_GRANULE_SHIFT) != g) return Acquired(state);
  const uint64_t stamp = __atomic_load_n(&slot[1], __ATOMIC_RELAXED);
  const uint64_t release = __atomic_load_n(&slot[2], __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (__atomic_load_n(&slot[0], __ATOMIC_RELAXED) != word) return Acquired(state);
  if (!StoredByRunningBlock(state, stamp)) AcquiredUpTo(state, release);
}

// WaitedAt for a synchronising load that changes nothing: a wait that the
// load of a split update (kerneleval_cpu_thread_state::split_read_address)
// takes itself does not end the update.
KERNELEVAL_CPU_UNCHECKED inline void CountWait(kerneleval_cpu_thread_state* state, uintptr_t a) {
  const bool splitting =
      state->split_read_address == a && state->split_read_waited_at == state->waited_at;
  WaitedAt(state, a);
  if (splitting) state->split_read_waited_at = state->waited_at;
}

// A volatile load counts once it has happened: at the block's next plain or
// volatile load (the hooks run before their loads).
KERNELEVAL_CPU_UNCHECKED inline void SettlePendingWait(kerneleval_cpu_thread_state* state) {
  if (state->pending_wait_address == 0) return;
  const uintptr_t a = state->pending_wait_address;
  state->pending_wait_address = 0;
  CountWait(state, a);
}

// Records the grid's first race (set once, by the block that found it).
KERNELEVAL_CPU_UNCHECKED inline void ReportRace(kerneleval_cpu_race_check* race, uint32_t kind,
                                                uint64_t reader, uint64_t writer, uintptr_t a,
                                                unsigned long bytes) {
  uint32_t none = 0;
  if (__atomic_compare_exchange_n(&race->found, &none, 1u, false, __ATOMIC_SEQ_CST,
                                  __ATOMIC_SEQ_CST)) {
    race->kind = kind;
    race->reader = reader;
    race->writer = writer;
    race->address = a;
    race->bytes = static_cast<uint32_t>(bytes);
  }
}

// Whether bytes [a, a + bytes) hold another block's store of this grid that
// the running block has not waited for since (any, with `even_if_waited`):
// a plain load of them races; its block in *writer.
// Its clock in *stored_at, when asked; in *two_op, when asked, whether it
// completed an update made of two operations (kRaceTwoOpUpdate).
KERNELEVAL_CPU_UNCHECKED inline bool UnwaitedStoreAt(const kerneleval_cpu_thread_state* state,
                                                     kerneleval_cpu_race_check* race, uintptr_t a,
                                                     unsigned long bytes, bool even_if_waited,
                                                     uint64_t* writer,
                                                     uint64_t* stored_at = nullptr,
                                                     bool* two_op = nullptr) {
  kerneleval_cpu_race_range* range = RaceRange(race, a);
  if (!range || __atomic_load_n(&range->written_in, __ATOMIC_RELAXED) != race->grid) return false;
  for (uint64_t g = a >> 2; g <= (a + bytes - 1) >> 2; ++g) {
    const uint64_t* slot = RaceSlot(race, g);
    const uint64_t word = __atomic_load_n(&slot[0], __ATOMIC_ACQUIRE);
    if ((word >> KERNELEVAL_CPU_RACE_GRANULE_SHIFT) != g || (word & kRaceGridBits) != race->grid ||
        (word & kRaceSlotLocked) != 0 ||
        ((word >> KERNELEVAL_CPU_RACE_MASK_SHIFT) & kRaceMaskBits & GranuleMask(a, bytes, g)) ==
            0) {
      continue;
    }
    const uint64_t stamp = __atomic_load_n(&slot[1], __ATOMIC_RELAXED);
    const uint64_t kinds = __atomic_load_n(&slot[3], __ATOMIC_RELAXED);
    // A store rewrote the slot meanwhile: its words may not belong
    // together (a race missed, never one made up).
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&slot[0], __ATOMIC_RELAXED) != word) continue;
    if (StoredByRunningBlock(state, stamp)) continue;
    if (!even_if_waited && state->acquired_at > (stamp & 0xffffffffu)) continue;
    *writer = stamp >> 32;
    if (stored_at) *stored_at = stamp & 0xffffffffu;
    if (two_op) *two_op = (kinds & kRaceTwoOpUpdate) != 0;
    return true;
  }
  return false;
}

// Before a synchronising load of `bytes` at `address` that changes nothing
// (an atomic load, an atomic that leaves the memory as it was, a volatile
// or __ldcg load): it may be the first half of an update made of two
// operations, which a store of the block to the same address completes
// unless the block waits for another block in between. Where the load
// reads another block's such update, not waited for (a plain load would
// race), the completing store is a race: `v = atomicAdd(p, 0);
// atomicExch(p, v + s)` from blocks that run at once on a GPU loses
// updates; each half is atomic, the pair is not (sweep 10, a04). One block
// reading a flag another block set and resetting it (`while
// (atomicAdd(&f, 0) == 0) {} atomicExch(&f, 0)`) reads a plain store, not
// such an update, and is not one.
KERNELEVAL_CPU_UNCHECKED inline void NoteSynchronisingRead(const volatile void* address,
                                                           unsigned long bytes) {
  kerneleval_cpu_thread_state* state = ThreadState();
  const auto a = reinterpret_cast<uintptr_t>(address);
  if (!state || !state->race_check) return;
  SettlePendingWait(state);
  kerneleval_cpu_race_check* race = CheckedAt(state, a);
  if (!race) return;
  uint64_t writer = 0;
  bool two_op = false;
  const bool raced = UnwaitedStoreAt(state, race, a, bytes, /*even_if_waited=*/false, &writer,
                                     /*stored_at=*/nullptr, &two_op);
  state->split_read_address = a;
  state->split_read_writer = raced && two_op ? writer + 1 : 0;
  state->split_read_waited_at = state->waited_at;
}

// Before a store of `bytes` at `a` that replaces what is there whatever it
// is (`unconditional`: a plain, volatile or atomic store, an exchange; not
// a compare-and-swap or a fetch-and-op, each one read-modify-write):
// whether it completes an update made of two operations
// (NoteSynchronisingRead), a race when that update read another's. Any
// store there ends the update.
KERNELEVAL_CPU_UNCHECKED inline bool EndSplitUpdate(kerneleval_cpu_thread_state* state,
                                                    kerneleval_cpu_race_check* race, uintptr_t a,
                                                    unsigned long bytes, bool unconditional) {
  const uintptr_t read = state->split_read_address;
  if (read == 0 || (read >> 2) < (a >> 2) || (read >> 2) > ((a + bytes - 1) >> 2)) return false;
  state->split_read_address = 0;
  if (!unconditional || state->split_read_waited_at != state->waited_at) return false;
  if (state->split_read_writer != 0) {
    ReportRace(race, KERNELEVAL_CPU_RACE_SPLIT_UPDATE, state->block, state->split_read_writer - 1,
               a, bytes);
  }
  return true;
}

// How a store replaces what is there: kStore unconditionally (a plain,
// volatile or atomic store, a copy, a fill), kExchange unconditionally and
// as a read-modify-write (it continues the release sequence of what it
// replaces), kReadModifyWrite by what it found (a fetch-and-op, a
// compare-and-swap: never the second half of a split update).
enum class StoreKind { kStore, kExchange, kReadModifyWrite };

// What a store found in its first granule's slot: whether it may be
// another block's store of this grid (MayBeAnotherBlocks: an atomic
// replacing it waited for that block) and, where the slot held that
// granule's record, the release clock it carried.
// `held_slot`: the first granule's slot, still locked (RecordStore's
// `hold`), its new first word `held_word`.
struct StoreFound {
  bool another = false;
  bool release_known = false;
  uint64_t release = 0;
  uint64_t* held_slot = nullptr;
  uint64_t held_word = 0;
};

// Unlocks a slot RecordStore held (no-op without one).
KERNELEVAL_CPU_UNCHECKED inline void ReleaseHeldSlot(const StoreFound& found) {
  if (found.held_slot) __atomic_store_n(&found.held_slot[0], found.held_word, __ATOMIC_RELEASE);
}

// Records a store of `bytes` at `address` with the block's release clock
// (for a read-modify-write, the latest of it and the replaced record's).
// With `hold`, the first granule's slot is recorded last and stays locked
// until ReleaseHeldSlot: an atomic runs in between, so that atomics on a
// granule run in the order of their records and what one found was the
// store it read or replaced (recorded before the operation and unlocked,
// a lock's releasing exchange could land between another block's record
// of its acquiring compare-and-swap and the swap itself: the swap then
// found the record before the release, and the data the lock guards was
// reported as a race). A thread holding a slot takes no other.
KERNELEVAL_CPU_UNCHECKED inline StoreFound RecordStore(const volatile void* address,
                                                       unsigned long bytes,
                                                       StoreKind kind = StoreKind::kStore,
                                                       bool hold = false) {
  kerneleval_cpu_thread_state* state = ThreadState();
  if (!state || !state->race_check) return {};
  kerneleval_cpu_race_check* race = state->race_check;
  const auto a = reinterpret_cast<uintptr_t>(address);
  // A volatile load before it has happened: counted before this store can
  // replace what it read (a flag polled with volatile loads and then reset
  // by the block was its own store by the next load, and the wait lost).
  SettlePendingWait(state);
  kerneleval_cpu_race_range* range = RaceRange(race, a);
  if (!range) return {};
  const uint64_t kinds = EndSplitUpdate(state, race, a, bytes, kind != StoreKind::kReadModifyWrite)
                             ? kRaceTwoOpUpdate
                             : 0;
  const uint64_t grid = race->grid;
  if (__atomic_load_n(&range->written_in, __ATOMIC_RELAXED) != grid) {
    __atomic_store_n(&range->written_in, grid, __ATOMIC_RELAXED);
  }
  const uint64_t clock = __atomic_load_n(&race->clock, __ATOMIC_SEQ_CST);
  if (clock > 0xffffffffu) return {.another = true};
  const uint64_t stamp = (state->block << 32) | clock;
  StoreFound found;
  const uint64_t first = a >> 2, last = (a + bytes - 1) >> 2;
  for (uint64_t i = 0; i <= last - first; ++i) {
    // The first granule last: the one a held slot keeps.
    const uint64_t g = i == last - first ? first : first + 1 + i;
    uint64_t* slot = RaceSlot(race, g);
    uint64_t old = __atomic_load_n(&slot[0], __ATOMIC_RELAXED);
    // Another OS thread is between its two stores for a moment: wait.
    while ((old & kRaceSlotLocked) != 0 ||
           !__atomic_compare_exchange_n(&slot[0], &old, old | kRaceSlotLocked, true,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
      old = __atomic_load_n(&slot[0], __ATOMIC_RELAXED);
    }
    const uint64_t old_stamp = __atomic_load_n(&slot[1], __ATOMIC_RELAXED);
    const uint64_t old_release = __atomic_load_n(&slot[2], __ATOMIC_RELAXED);
    uint64_t mask = GranuleMask(a, bytes, g);
    const uint64_t mine = (g << KERNELEVAL_CPU_RACE_GRANULE_SHIFT) | grid;
    const bool same = (old & ~(uint64_t{0xff} << KERNELEVAL_CPU_RACE_MASK_SHIFT)) == mine;
    if (g == first) {
      found.another = MayBeAnotherBlocks(state, race, g, old, old_stamp);
      found.release_known = same;
      found.release = old_release;
    }
    if (same && StoredByRunningBlock(state, old_stamp)) {
      mask |= (old >> KERNELEVAL_CPU_RACE_MASK_SHIFT) & kRaceMaskBits;  // its own bytes too
    }
    uint64_t release = state->released_at;
    if (kind != StoreKind::kStore && same && old_release > release) release = old_release;
    __atomic_store_n(&slot[1], stamp, __ATOMIC_RELAXED);
    __atomic_store_n(&slot[2], release, __ATOMIC_RELAXED);
    __atomic_store_n(&slot[3], kinds, __ATOMIC_RELAXED);
    const uint64_t word = mine | (mask << KERNELEVAL_CPU_RACE_MASK_SHIFT);
    if (hold && g == first) {
      found.held_slot = slot;
      found.held_word = word;
    } else {
      __atomic_store_n(&slot[0], word, __ATOMIC_RELEASE);
    }
  }
  return found;
}

// `non_coherent`: an __ldg, a race even after a wait for the writer.
KERNELEVAL_CPU_UNCHECKED inline void CheckLoad(const volatile void* address, unsigned long bytes,
                                               bool non_coherent = false) {
  kerneleval_cpu_thread_state* state = ThreadState();
  if (!state || !state->race_check) return;
  SettlePendingWait(state);
  kerneleval_cpu_race_check* race = state->race_check;
  const auto a = reinterpret_cast<uintptr_t>(address);
  uint64_t writer = 0, stored_at = 0;
  if (UnwaitedStoreAt(state, race, a, bytes, non_coherent, &writer, &stored_at)) {
    uint32_t kind = KERNELEVAL_CPU_RACE_PLAIN_LOAD;
    if (non_coherent) {
      kind = KERNELEVAL_CPU_RACE_NON_COHERENT_LOAD;
    } else if (state->waited_at > stored_at) {
      kind = KERNELEVAL_CPU_RACE_UNFENCED_STORE;
    }
    ReportRace(race, kind, state->block, writer, a, bytes);
  }
}

// Before a volatile load of `bytes` at `address`.
KERNELEVAL_CPU_UNCHECKED inline void SynchronisingLoad(const volatile void* address,
                                                       unsigned long bytes) {
  kerneleval_cpu_thread_state* state = ThreadState();
  if (!state || !state->race_check) return;
  SettlePendingWait(state);
  NoteSynchronisingRead(address, bytes);
  state->pending_wait_address = reinterpret_cast<uintptr_t>(address);
}

// Atomics on checked memory, around the operation: one that may write
// (anything but a fetch-add of 0, a compare-and-swap for the same value,
// ...) is recorded first, as a plain store is (a plain load of it by a block
// that did not wait reads whatever is there on a GPU: a racy `v = y[r];
// atomicExch(&y[r], v + s)` passed), so that a block reading the new value
// finds the record; after it, the block waited when the value it read may
// be another block's: that store's record was there before its own, or is
// there after the operation.
// One that changes nothing is a synchronising read (NoteSynchronisingRead).
// `order`: the operation's memory order (__ATOMIC_*); release or stronger
// releases the block's stores before it (CUDA's atomicAdd, atomicExch, ...
// are relaxed; cuda::atomic_ref's operations are sequentially consistent
// unless told otherwise).
KERNELEVAL_CPU_UNCHECKED inline StoreFound BeforeAtomic(const volatile void* address,
                                                        unsigned long bytes, bool may_write,
                                                        StoreKind kind, int order) {
  if (order >= __ATOMIC_RELEASE) Released();
  if (!may_write) {
    NoteSynchronisingRead(address, bytes);
    return {};
  }
  return RecordStore(address, bytes, kind, /*hold=*/true);
}
KERNELEVAL_CPU_UNCHECKED inline void AfterAtomic(const volatile void* address,
                                                 const StoreFound& found) {
  ReleaseHeldSlot(found);
  kerneleval_cpu_thread_state* state = ThreadState();
  const auto a = reinterpret_cast<uintptr_t>(address);
  if (!CheckedAt(state, a)) return;
  if (!found.another) {
    CountWait(state, a);
  } else if (found.release_known) {
    AcquiredUpTo(state, found.release);
  } else {
    Acquired(state);
  }
}

}  // namespace kerneleval_cpu::detail

// NOLINTBEGIN(readability-identifier-naming, bugprone-reserved-identifier)
#define KERNELEVAL_CPU_HOOK extern "C" KERNELEVAL_CPU_UNCHECKED
KERNELEVAL_CPU_HOOK void __tsan_init(void) {}
KERNELEVAL_CPU_HOOK void __tsan_func_entry(void*) {}
KERNELEVAL_CPU_HOOK void __tsan_func_exit(void) {}
KERNELEVAL_CPU_HOOK void __tsan_vptr_update(void**, void*) {}
KERNELEVAL_CPU_HOOK void __tsan_vptr_read(void**) {}
// Loads and stores of other sizes (a 12-byte struct copied whole), checked
// whole: covering only their first 256 bytes, a read-modify-write of the
// last element of a 260-byte struct copied whole passed (sweep 10, a20).
KERNELEVAL_CPU_HOOK void __tsan_read_range(void* address, unsigned long bytes) {
  kerneleval_cpu::detail::NoteLoads(address, bytes);
  if (bytes > 0) kerneleval_cpu::detail::CheckLoad(address, bytes);
}
KERNELEVAL_CPU_HOOK void __tsan_write_range(void* address, unsigned long bytes) {
  kerneleval_cpu::detail::StorePoint(address);
  if (bytes > 0) kerneleval_cpu::detail::RecordStore(address, bytes);
}
// Volatile accesses come apart from plain ones
// (--param=tsan-distinguish-volatile=1): a volatile load is also a spin
// point, taken before the load so that it reads what the others stored.
#define KERNELEVAL_CPU_ACCESS_HOOKS(n)                                \
  KERNELEVAL_CPU_HOOK void __tsan_read##n(void* address) {            \
    kerneleval_cpu::detail::NoteLoads(address, n);                    \
    kerneleval_cpu::detail::CheckLoad(address, n);                    \
  }                                                                   \
  KERNELEVAL_CPU_HOOK void __tsan_unaligned_read##n(void* address) {  \
    kerneleval_cpu::detail::NoteLoads(address, n);                    \
    kerneleval_cpu::detail::CheckLoad(address, n);                    \
  }                                                                   \
  KERNELEVAL_CPU_HOOK void __tsan_volatile_read##n(void* address) {   \
    kerneleval_cpu::detail::SpinPoint();                              \
    kerneleval_cpu::detail::NoteLoads(address, n);                    \
    kerneleval_cpu::detail::SynchronisingLoad(address, n);            \
  }                                                                   \
  KERNELEVAL_CPU_HOOK void __tsan_write##n(void* address) {           \
    kerneleval_cpu::detail::StorePoint(address);                      \
    kerneleval_cpu::detail::RecordStore(address, n);                  \
  }                                                                   \
  KERNELEVAL_CPU_HOOK void __tsan_unaligned_write##n(void* address) { \
    kerneleval_cpu::detail::StorePoint(address);                      \
    kerneleval_cpu::detail::RecordStore(address, n);                  \
  }                                                                   \
  KERNELEVAL_CPU_HOOK void __tsan_volatile_write##n(void* address) {  \
    kerneleval_cpu::detail::StorePoint(address);                      \
    kerneleval_cpu::detail::RecordStore(address, n);                  \
  }
KERNELEVAL_CPU_ACCESS_HOOKS(1)
KERNELEVAL_CPU_ACCESS_HOOKS(2)
KERNELEVAL_CPU_ACCESS_HOOKS(4)
KERNELEVAL_CPU_ACCESS_HOOKS(8)
KERNELEVAL_CPU_ACCESS_HOOKS(16)
#undef KERNELEVAL_CPU_ACCESS_HOOKS

// Every memory order is served as sequentially consistent (stronger is
// allowed). The size suffix is in bits. An atomic that writes is a store
// point when the block loaded its address plainly since its last barrier (`v =
// h[b]; atomicExch(&h[b], v + 1)` loses updates on a GPU); one that leaves
// the memory as it was (a fetch-add of 0, a failed compare-and-swap, an
// exchange for the same value) is a spin point after it. An atomic load is
// neither (the first step of every compare-and-swap loop) unless it repeats
// the thread's last one (RepeatedLoad).
#define KERNELEVAL_CPU_FETCH_HOOK(n, T, op, updated, unchanging)                              \
  KERNELEVAL_CPU_HOOK T __tsan_atomic##n##_fetch_##op(volatile T* a, T v, int order) {        \
    kerneleval_cpu::detail::AtomicPoint(a);                                                   \
    const auto found = kerneleval_cpu::detail::BeforeAtomic(                                  \
        a, n / 8, !(unchanging), kerneleval_cpu::detail::StoreKind::kReadModifyWrite, order); \
    const T old = __atomic_fetch_##op(a, v, __ATOMIC_SEQ_CST);                                \
    kerneleval_cpu::detail::AfterAtomic(a, found);                                            \
    if (static_cast<T>(updated) == old) kerneleval_cpu::detail::SpinPoint();                  \
    return old;                                                                               \
  }
#define KERNELEVAL_CPU_ATOMIC_HOOKS(n, T)                                                        \
  KERNELEVAL_CPU_HOOK T __tsan_atomic##n##_load(const volatile T* a, int) {                      \
    kerneleval_cpu::detail::NoteSynchronisingRead(a, n / 8);                                     \
    const T value = __atomic_load_n(a, __ATOMIC_SEQ_CST);                                        \
    kerneleval_cpu::detail::AfterAtomic(a, {});                                                  \
    kerneleval_cpu::detail::RepeatedLoad(a, value);                                              \
    return value;                                                                                \
  }                                                                                              \
  KERNELEVAL_CPU_HOOK void __tsan_atomic##n##_store(volatile T* a, T v, int order) {             \
    kerneleval_cpu::detail::AtomicPoint(a);                                                      \
    const auto found = kerneleval_cpu::detail::BeforeAtomic(                                     \
        a, n / 8, true, kerneleval_cpu::detail::StoreKind::kStore, order);                       \
    __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                    \
    kerneleval_cpu::detail::AfterAtomic(a, found);                                               \
  }                                                                                              \
  KERNELEVAL_CPU_HOOK T __tsan_atomic##n##_exchange(volatile T* a, T v, int order) {             \
    kerneleval_cpu::detail::AtomicPoint(a);                                                      \
    const auto found = kerneleval_cpu::detail::BeforeAtomic(                                     \
        a, n / 8, true, kerneleval_cpu::detail::StoreKind::kExchange, order);                    \
    const T old = __atomic_exchange_n(a, v, __ATOMIC_SEQ_CST);                                   \
    kerneleval_cpu::detail::AfterAtomic(a, found);                                               \
    if (old == v) kerneleval_cpu::detail::SpinPoint();                                           \
    return old;                                                                                  \
  }                                                                                              \
  KERNELEVAL_CPU_FETCH_HOOK(n, T, add, old + v, v == 0)                                          \
  KERNELEVAL_CPU_FETCH_HOOK(n, T, sub, old - v, v == 0)                                          \
  KERNELEVAL_CPU_FETCH_HOOK(n, T, and, old& v, static_cast<T>(~v) == 0)                          \
  KERNELEVAL_CPU_FETCH_HOOK(n, T, or, old | v, v == 0)                                           \
  KERNELEVAL_CPU_FETCH_HOOK(n, T, xor, old ^ v, v == 0)                                          \
  KERNELEVAL_CPU_FETCH_HOOK(n, T, nand, ~(old & v), false)                                       \
  KERNELEVAL_CPU_HOOK int __tsan_atomic##n##_compare_exchange_strong(volatile T* a, T* c, T v,   \
                                                                     int order, int) {           \
    kerneleval_cpu::detail::AtomicPoint(a);                                                      \
    const T expected = *c;                                                                       \
    const auto found = kerneleval_cpu::detail::BeforeAtomic(                                     \
        a, n / 8, expected != v, kerneleval_cpu::detail::StoreKind::kReadModifyWrite, order);    \
    const bool swapped =                                                                         \
        __atomic_compare_exchange_n(a, c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);         \
    kerneleval_cpu::detail::AfterAtomic(a, found);                                               \
    if (!swapped) kerneleval_cpu::detail::FailedCas(a, expected, *c);                            \
    return swapped;                                                                              \
  }                                                                                              \
  KERNELEVAL_CPU_HOOK int __tsan_atomic##n##_compare_exchange_weak(volatile T* a, T* c, T v,     \
                                                                   int mo, int fail_mo) {        \
    return __tsan_atomic##n##_compare_exchange_strong(a, c, v, mo, fail_mo);                     \
  }                                                                                              \
  KERNELEVAL_CPU_HOOK T __tsan_atomic##n##_compare_exchange_val(volatile T* a, T c, T v, int mo, \
                                                                int fail_mo) {                   \
    __tsan_atomic##n##_compare_exchange_strong(a, &c, v, mo, fail_mo);                           \
    return c;                                                                                    \
  }
KERNELEVAL_CPU_ATOMIC_HOOKS(8, unsigned char)
KERNELEVAL_CPU_ATOMIC_HOOKS(16, unsigned short)
KERNELEVAL_CPU_ATOMIC_HOOKS(32, unsigned int)
KERNELEVAL_CPU_ATOMIC_HOOKS(64, unsigned long long)
#undef KERNELEVAL_CPU_ATOMIC_HOOKS
#undef KERNELEVAL_CPU_FETCH_HOOK
// A fence of release order or stronger (__threadfence()) is a release of
// the block (kerneleval_cpu_thread_state::released_at).
KERNELEVAL_CPU_HOOK void __tsan_atomic_thread_fence(int order) {
  if (order >= __ATOMIC_RELEASE) kerneleval_cpu::detail::Released();
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
KERNELEVAL_CPU_HOOK void __tsan_atomic_signal_fence(int) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}
// Copies by memcpy and memmove, and fills by memset: g++ expands a call
// whose size it can bound after the instrumentation, and leaves others to
// libc, so that neither was seen (a block copying another block's output,
// or adding to it through copies of a size not known at compile time, with
// no wait between them passed the race check). The interleaved build
// compiles with -fno-builtin-memcpy, -fno-builtin-memmove and
// -fno-builtin-memset and links with --wrap for the three (HostCompiler),
// so that every such call comes here: a copy's source is a load and its
// destination a store, as the access hooks above take them; a fill is a
// store for the race check (no read-modify-write, so no store point). The
// prelude's own copies and fills are __builtin_memcpy / __builtin_memset,
// expanded (constant sizes) and instrumented as before. (NVRTC refuses
// __builtin_memcpy in a submission.)
extern "C" void* __real_memcpy(void* destination, const void* source, unsigned long bytes);
extern "C" void* __real_memmove(void* destination, const void* source, unsigned long bytes);
extern "C" void* __real_memset(void* destination, int byte, unsigned long bytes);
namespace kerneleval_cpu::detail {
KERNELEVAL_CPU_UNCHECKED inline void BeforeCopy(void* destination, const void* source,
                                                unsigned long bytes) {
  if (bytes == 0) return;
  NoteLoads(source, bytes);
  CheckLoad(source, bytes);
  StorePoint(destination);
  RecordStore(destination, bytes);
}
}  // namespace kerneleval_cpu::detail
KERNELEVAL_CPU_HOOK void* __wrap_memcpy(void* destination, const void* source,
                                        unsigned long bytes) {
  kerneleval_cpu::detail::BeforeCopy(destination, source, bytes);
  return __real_memcpy(destination, source, bytes);
}
KERNELEVAL_CPU_HOOK void* __wrap_memmove(void* destination, const void* source,
                                         unsigned long bytes) {
  kerneleval_cpu::detail::BeforeCopy(destination, source, bytes);
  return __real_memmove(destination, source, bytes);
}
KERNELEVAL_CPU_HOOK void* __wrap_memset(void* destination, int byte, unsigned long bytes) {
  if (bytes > 0) kerneleval_cpu::detail::RecordStore(destination, bytes);
  return __real_memset(destination, byte, bytes);
}
#undef KERNELEVAL_CPU_HOOK
// NOLINTEND(readability-identifier-naming, bugprone-reserved-identifier)
#endif  // __SANITIZE_THREAD__

// ---- 6. Atomics (std::atomic_ref: the blocks run in parallel).
namespace kerneleval_cpu::detail {

// Whether an atomic on `address` may be a plain read-modify-write: in the
// plain (timed) build, on the running block's shared memory. That memory
// is its OS thread's alone, and the block's threads are fibers on that
// thread, switching at barriers, warp operations and the like, never inside
// an update. With a locked instruction (a compare-and-swap loop for floats)
// a shared-memory histogram's atomicAdd cost ~2x a plain `+= 1` in the
// timed build, where threads never interleave, so that a kernel telling
// the builds apart (a racy probe of its own threads, a neighbour's mark read
// through a volatile load, two functions' addresses, a stack frame's size:
// session 34, docs/open-cheats/s34*) raced only there and passed 20-28%
// faster than its twin with atomics. On a GPU, shared atomics are cheap
// too. The interleaved build keeps every atomic (its hooks make them store
// points).
KERNELEVAL_CPU_UNCHECKED inline bool PlainAtomic([[maybe_unused]] const volatile void* address) {
#if defined(__SANITIZE_THREAD__)
  return false;
#else
  return IsBlockShared(address);
#endif
}

// `*address = update(*address)` as one plain read-modify-write; the old value.
template <class T, class F>
inline T PlainUpdate(T* address, F&& update) {
  // The address as computed, in a register: g++ recomputed a static
  // __shared__ element's address from scratch here, a second call to
  // __tls_get_addr that cost more than the locked instruction it saved.
  __asm__("" : "+r"(address));
  const T old = *address;
  *address = update(old);
  return old;
}

template <class T, class F>
inline T AtomicUpdate(T* address, F&& update) {
  if (PlainAtomic(address)) return PlainUpdate(address, update);
  if constexpr (std::is_trivially_copyable_v<T>) {
    std::atomic_ref<T> ref(*address);
    T old = ref.load(std::memory_order_relaxed);
    while (!ref.compare_exchange_weak(old, update(old), std::memory_order_relaxed)) {
    }
    return old;
  } else {
    // __half2, __nv_bfloat162 (copy assignments of their own): through an
    // integer of their size.
    static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                  "atomics on a type of 2, 4 or 8 bytes");
    using Bits = std::conditional_t<sizeof(T) == 2, uint16_t,
                                    std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
    std::atomic_ref<Bits> ref(*reinterpret_cast<Bits*>(address));
    Bits old_bits = ref.load(std::memory_order_relaxed);
    for (;;) {
      const T old = FromBits<T>(old_bits);
      const Bits new_bits = static_cast<Bits>(ToBits(update(old)));
      if (ref.compare_exchange_weak(old_bits, new_bits, std::memory_order_relaxed)) return old;
    }
  }
}

template <class T>
using Same = std::type_identity_t<T>;

}  // namespace kerneleval_cpu::detail

template <class T>
inline T atomicAdd(T* address, kerneleval_cpu::detail::Same<T> value) {
  if constexpr (std::is_integral_v<T> || std::is_floating_point_v<T>) {
    if (kerneleval_cpu::detail::PlainAtomic(address)) {
      return kerneleval_cpu::detail::PlainUpdate(address, [&](T old) { return T(old + value); });
    }
    return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
  } else {
    return kerneleval_cpu::detail::AtomicUpdate(address, [&](T old) { return T(old + value); });
  }
}
// sm_90's vector atomics: each element atomically.
inline float2 atomicAdd(float2* address, float2 value) {
  return make_float2(atomicAdd(&address->x, value.x), atomicAdd(&address->y, value.y));
}
inline float4 atomicAdd(float4* address, float4 value) {
  return make_float4(atomicAdd(&address->x, value.x), atomicAdd(&address->y, value.y),
                     atomicAdd(&address->z, value.z), atomicAdd(&address->w, value.w));
}
template <class T>
inline T atomicSub(T* address, kerneleval_cpu::detail::Same<T> value) {
  if constexpr (std::is_integral_v<T> || std::is_floating_point_v<T>) {
    if (kerneleval_cpu::detail::PlainAtomic(address)) {
      return kerneleval_cpu::detail::PlainUpdate(address, [&](T old) { return T(old - value); });
    }
    return std::atomic_ref<T>(*address).fetch_sub(value, std::memory_order_relaxed);
  } else {
    return kerneleval_cpu::detail::AtomicUpdate(address, [&](T old) { return T(old - value); });
  }
}
template <class T>
inline T atomicExch(T* address, kerneleval_cpu::detail::Same<T> value) {
  if (kerneleval_cpu::detail::PlainAtomic(address)) {
    return kerneleval_cpu::detail::PlainUpdate(address, [&](T) { return value; });
  }
  return std::atomic_ref<T>(*address).exchange(value, std::memory_order_relaxed);
}
template <class T>
inline T atomicMin(T* address, kerneleval_cpu::detail::Same<T> value) {
  return kerneleval_cpu::detail::AtomicUpdate(address,
                                              [&](T old) { return value < old ? value : old; });
}
template <class T>
inline T atomicMax(T* address, kerneleval_cpu::detail::Same<T> value) {
  return kerneleval_cpu::detail::AtomicUpdate(address,
                                              [&](T old) { return old < value ? value : old; });
}
inline unsigned atomicInc(unsigned* address, unsigned limit) {
  return kerneleval_cpu::detail::AtomicUpdate(
      address, [&](unsigned old) { return old >= limit ? 0u : old + 1u; });
}
inline unsigned atomicDec(unsigned* address, unsigned limit) {
  return kerneleval_cpu::detail::AtomicUpdate(
      address, [&](unsigned old) { return (old == 0u || old > limit) ? limit : old - 1u; });
}
template <class T>
inline T atomicCAS(T* address, kerneleval_cpu::detail::Same<T> compare,
                   kerneleval_cpu::detail::Same<T> value) {
  if (kerneleval_cpu::detail::PlainAtomic(address)) {
    // Compared bit for bit, as compare_exchange_strong does (-0.0 is not 0.0).
    return kerneleval_cpu::detail::PlainUpdate(address, [&](T old) {
      return __builtin_memcmp(&old, &compare, sizeof(T)) == 0 ? value : old;
    });
  }
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value, std::memory_order_relaxed);
  return compare;  // the old value either way
}
template <class T>
inline T atomicAnd(T* address, kerneleval_cpu::detail::Same<T> value) {
  static_assert(std::is_integral_v<T>, "atomicAnd takes an integer");
  if (kerneleval_cpu::detail::PlainAtomic(address)) {
    return kerneleval_cpu::detail::PlainUpdate(address, [&](T old) { return T(old & value); });
  }
  return std::atomic_ref<T>(*address).fetch_and(value, std::memory_order_relaxed);
}
template <class T>
inline T atomicOr(T* address, kerneleval_cpu::detail::Same<T> value) {
  static_assert(std::is_integral_v<T>, "atomicOr takes an integer");
  if (kerneleval_cpu::detail::PlainAtomic(address)) {
    return kerneleval_cpu::detail::PlainUpdate(address, [&](T old) { return T(old | value); });
  }
  return std::atomic_ref<T>(*address).fetch_or(value, std::memory_order_relaxed);
}
template <class T>
inline T atomicXor(T* address, kerneleval_cpu::detail::Same<T> value) {
  static_assert(std::is_integral_v<T>, "atomicXor takes an integer");
  if (kerneleval_cpu::detail::PlainAtomic(address)) {
    return kerneleval_cpu::detail::PlainUpdate(address, [&](T old) { return T(old ^ value); });
  }
  return std::atomic_ref<T>(*address).fetch_xor(value, std::memory_order_relaxed);
}
// Scoped variants (_block, _system) behave like the device-wide ones here.
#define KERNELEVAL_CPU_ATOMIC_SCOPES(name)                  \
  template <class... A>                                     \
  inline auto name##_block(A... a)->decltype(name(a...)) {  \
    return name(a...);                                      \
  }                                                         \
  template <class... A>                                     \
  inline auto name##_system(A... a)->decltype(name(a...)) { \
    return name(a...);                                      \
  }
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicAdd)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicSub)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicExch)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicMin)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicMax)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicInc)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicDec)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicCAS)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicAnd)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicOr)
KERNELEVAL_CPU_ATOMIC_SCOPES(atomicXor)
#undef KERNELEVAL_CPU_ATOMIC_SCOPES

// ---- 7. Loads and stores with cache hints: plain accesses.
// __ldg is ld.global.nc on a GPU: the read-only data cache, which is not
// kept coherent with stores made during the kernel, so that a line fetched
// before another block's store may be returned after it, waited for or
// not (a kernel that read its partner's output with __ldg before and after
// a proper wait was right here and stale there: sweep 10, a17). In an
// interleaved build its load of bytes another block stored in the launch
// is a race whatever the waits.
#if defined(__SANITIZE_THREAD__)
template <class T>
inline T __ldg(const T* p) {
  // First, so that this message wins over the plain load's (instrumented
  // as any other, misalignment included).
  kerneleval_cpu::detail::CheckLoad(p, sizeof(T), /*non_coherent=*/true);
  return *p;
}
#else
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
#endif
template <class T>
inline T __ldca(const T* p) {
  return *p;
}
// __ldcg, __ldlu and __ldcv read memory (L2 or beyond) each time on a GPU:
// a loop polling another block's flag with one sees its store. Here a
// compiler barrier keeps each such load in its loop (g++ hoisted a plain
// load out of `while (__ldcg(&flag) <= mine) {}` and removed the loop);
// __ldcv, a volatile load, is also a spin point of the interleaved build.
// In an interleaved build their loads are synchronising (the race check's
// kerneleval_cpu_race_check): a wait polling a flag with one, then reading
// what the flag guards, is the way to read another block's output.
#if defined(__SANITIZE_THREAD__)
namespace kerneleval_cpu::detail {
template <class T>
KERNELEVAL_CPU_UNCHECKED inline T SynchronisingRead(const T* p) {
  NoteLoads(p, sizeof(T));
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  const T value = *p;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  kerneleval_cpu_thread_state* state = ThreadState();
  if (state && state->race_check) {
    NoteSynchronisingRead(p, sizeof(T));
    CountWait(state, reinterpret_cast<uintptr_t>(p));
  }
  RepeatedLoad(p, value);
  return value;
}
}  // namespace kerneleval_cpu::detail
#define KERNELEVAL_CPU_POLLING_LOAD(p) kerneleval_cpu::detail::SynchronisingRead(p)
#else
#define KERNELEVAL_CPU_POLLING_LOAD(p) (__atomic_signal_fence(__ATOMIC_SEQ_CST), *(p))
#endif
template <class T>
inline T __ldcg(const T* p) {
  return KERNELEVAL_CPU_POLLING_LOAD(p);
}
template <class T>
inline T __ldcs(const T* p) {
  return *p;
}
template <class T>
inline T __ldlu(const T* p) {
  return KERNELEVAL_CPU_POLLING_LOAD(p);
}
template <class T>
inline T __ldcv(const T* p) {
#if defined(__SANITIZE_THREAD__)
  kerneleval_cpu::detail::SpinPoint();
#endif
  return KERNELEVAL_CPU_POLLING_LOAD(p);
}
template <class T>
inline void __stwb(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stcg(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stcs(T* p, T v) {
  *p = v;
}
template <class T>
inline void __stwt(T* p, T v) {
  *p = v;
}

// ---- 8. Integer and float intrinsics, math.
// min/max for device code: CUDA overloads them for every arithmetic pair.
template <class A, class B>
requires(std::is_arithmetic_v<A>&& std::is_arithmetic_v<B>) inline std::common_type_t<A, B> min(
    A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) {
    return std::fmin(static_cast<C>(a), static_cast<C>(b));
  } else {
    return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
  }
}
template <class A, class B>
requires(std::is_arithmetic_v<A>&& std::is_arithmetic_v<B>) inline std::common_type_t<A, B> max(
    A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>) {
    return std::fmax(static_cast<C>(a), static_cast<C>(b));
  } else {
    return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
  }
}

inline float __int_as_float(int v) { return std::bit_cast<float>(v); }
inline int __float_as_int(float v) { return std::bit_cast<int>(v); }
inline float __uint_as_float(unsigned v) { return std::bit_cast<float>(v); }
inline unsigned __float_as_uint(float v) { return std::bit_cast<unsigned>(v); }
inline double __longlong_as_double(long long v) { return std::bit_cast<double>(v); }
inline long long __double_as_longlong(double v) { return std::bit_cast<long long>(v); }
inline int __double2hiint(double v) {
  return static_cast<int>(std::bit_cast<unsigned long long>(v) >> 32);
}
inline int __double2loint(double v) {
  return static_cast<int>(std::bit_cast<unsigned long long>(v) & 0xffffffffu);
}
inline double __hiloint2double(int hi, int lo) {
  return std::bit_cast<double>((static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) |
                               static_cast<unsigned>(lo));
}

inline int __popc(unsigned v) { return std::popcount(v); }
inline int __popcll(unsigned long long v) { return std::popcount(v); }
inline int __clz(int v) { return std::countl_zero(static_cast<unsigned>(v)); }
inline int __clzll(long long v) { return std::countl_zero(static_cast<unsigned long long>(v)); }
inline int __ffs(int v) { return v == 0 ? 0 : std::countr_zero(static_cast<unsigned>(v)) + 1; }
inline int __ffsll(long long v) {
  return v == 0 ? 0 : std::countr_zero(static_cast<unsigned long long>(v)) + 1;
}
inline unsigned __brev(unsigned v) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((v >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned long long __brevll(unsigned long long v) {
  unsigned long long r = 0;
  for (int i = 0; i < 64; ++i) r |= ((v >> i) & 1ull) << (63 - i);
  return r;
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const unsigned long long bytes = (static_cast<unsigned long long>(y) << 32) | x;
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) {
    const unsigned sel = (s >> (4 * i)) & 7u;
    r |= static_cast<unsigned>((bytes >> (8 * sel)) & 0xffu) << (8 * i);
  }
  return r;
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32);
}
inline long long __mul64hi(long long a, long long b) {
  return static_cast<long long>((static_cast<__int128>(a) * b) >> 64);
}
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline int __mul24(int a, int b) { return ((a << 8) >> 8) * ((b << 8) >> 8); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline unsigned __sad(int a, int b, unsigned c) {
  return c + static_cast<unsigned>(a > b ? a - b : b - a);
}
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return c + (a > b ? a - b : b - a); }
inline int __hadd(int a, int b) { return static_cast<int>((static_cast<long long>(a) + b) >> 1); }
inline int __rhadd(int a, int b) {
  return static_cast<int>((static_cast<long long>(a) + b + 1) >> 1);
}
inline unsigned __uhadd(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) + b) >> 1);
}
inline unsigned __urhadd(unsigned a, unsigned b) {
  return static_cast<unsigned>((static_cast<unsigned long long>(a) + b + 1) >> 1);
}
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << (shift & 31u)) >> 32);
}
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>((v << std::min(shift, 32u)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> (shift & 31u));
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  const unsigned long long v = (static_cast<unsigned long long>(hi) << 32) | lo;
  return static_cast<unsigned>(v >> std::min(shift, 32u));
}

// Fast-math float intrinsics, composed as the toolkit composes them from
// the GPU's approximate units (ex2.approx.ftz, lg2.approx.ftz,
// sin/cos.approx.ftz, rcp.approx.ftz), with the float roundings between them
// that make a GPU's answers worse than the accurate functions: __expf(x) is
// 2^(x * log2(e)) with the product rounded to float (relative error growing
// with |x|), __sinf reduces its argument in float turns (absolute error
// ~|x| * 2^-24: 1e-4 near 2000), __fdividef(x, y) is x * (1 / y) with the
// reciprocal flushed to zero (0 for 2^126 < |y|, NaN for an infinite x).
// The units' own error (a few ulp) is not modelled. Before, the accurate
// host functions answered, and a kernel whose fast-math error fails the
// tolerance on a GPU passed here (sweep 6).
namespace kerneleval_cpu::detail {
inline float FlushToZero(float x) { return std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x; }
inline float Exp2Approx(float x) { return FlushToZero(::exp2f(x)); }
inline float Log2Approx(float x) { return ::log2f(FlushToZero(x)); }
// sin/cos.approx: the argument in turns, rounded to float, then reduced.
inline float TurnsApprox(float x) {
  const float turns = FlushToZero(x) * 0.159154943091895336f;  // 1 / (2 pi)
  return turns - ::rintf(turns);
}
inline float SinApprox(float x) {
  return std::isfinite(x)
             ? FlushToZero(static_cast<float>(std::sin(6.283185307179586 * TurnsApprox(x))))
             : NAN;
}
inline float CosApprox(float x) {
  return std::isfinite(x) ? static_cast<float>(std::cos(6.283185307179586 * TurnsApprox(x))) : NAN;
}
inline float DivideApprox(float x, float y) { return x * FlushToZero(1.0f / y); }
}  // namespace kerneleval_cpu::detail
inline float __expf(float x) {
  return kerneleval_cpu::detail::Exp2Approx(x * 1.44269504088896341f);
}
inline float __exp10f(float x) {
  return kerneleval_cpu::detail::Exp2Approx(x * 3.32192809488736235f);
}
inline float __logf(float x) {
  return kerneleval_cpu::detail::Log2Approx(x) * 0.693147180559945309f;
}
inline float __log2f(float x) { return kerneleval_cpu::detail::Log2Approx(x); }
inline float __log10f(float x) {
  return kerneleval_cpu::detail::Log2Approx(x) * 0.301029995663981195f;
}
inline float __sinf(float x) { return kerneleval_cpu::detail::SinApprox(x); }
inline float __cosf(float x) { return kerneleval_cpu::detail::CosApprox(x); }
inline float __tanf(float x) {
  return kerneleval_cpu::detail::DivideApprox(kerneleval_cpu::detail::SinApprox(x),
                                              kerneleval_cpu::detail::CosApprox(x));
}
inline void __sincosf(float x, float* s, float* c) {
  *s = __sinf(x);
  *c = __cosf(x);
}
// tanh.approx.f32 on a GPU: relative error up to ~2^-11 (PTX ISA), which
// fails fp32 tolerances a kernel with tanhf passes. tanhf rounded to 10
// mantissa bits errs as much (at most 2^-11 relative), so such a kernel
// fails here as there. (Without this definition g++ took glibc's internal
// __tanhf declaration and the link failed: sweep 4.)
inline float __tanhf(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(::tanhf(x));
  if ((bits & 0x7f800000u) == 0x7f800000u) return std::bit_cast<float>(bits);  // NaN
  constexpr uint32_t kDropped = 13;  // of the 23 mantissa bits
  const uint32_t rounded = (bits + (1u << (kDropped - 1))) & ~((1u << kDropped) - 1u);
  return std::bit_cast<float>(rounded);
}
// 2^(y * log2(x)) of the approximate units, as the toolkit's __powf.
inline float __powf(float x, float y) {
  return kerneleval_cpu::detail::Exp2Approx(y * kerneleval_cpu::detail::Log2Approx(x));
}
inline float __fdividef(float x, float y) { return kerneleval_cpu::detail::DivideApprox(x, y); }
inline float fdividef(float x, float y) { return kerneleval_cpu::detail::DivideApprox(x, y); }
inline float __saturatef(float x) { return x >= 1.0f ? 1.0f : (x > 0.0f ? x : 0.0f); }
inline float rsqrtf(float x) { return 1.0f / ::sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / ::sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / ::cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / ::cbrt(x); }
inline float exp10f(float x) { return ::powf(10.0f, x); }
inline float sinpif(float x) { return ::sinf(static_cast<float>(M_PI) * x); }
inline float cospif(float x) { return ::cosf(static_cast<float>(M_PI) * x); }
inline double sinpi(double x) { return ::sin(M_PI * x); }
inline double cospi(double x) { return ::cos(M_PI * x); }
inline void sincospif(float x, float* s, float* c) {
  *s = sinpif(x);
  *c = cospif(x);
}
inline float normcdff(float x) { return 0.5f * ::erfcf(-x * static_cast<float>(M_SQRT1_2)); }
inline double normcdf(double x) { return 0.5 * ::erfc(-x * M_SQRT1_2); }
// Inverse error functions: Giles' approximation, then Newton steps on erf.
inline double erfinv(double y) {
  if (!(y > -1.0 && y < 1.0)) {
    return y == 1.0 ? HUGE_VAL : (y == -1.0 ? -HUGE_VAL : std::numeric_limits<double>::quiet_NaN());
  }
  double w = -std::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941}) {
      x = c + x * w;
    }
  } else {
    w = std::sqrt(w) - 3.0;
    x = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682}) {
      x = c + x * w;
    }
  }
  x *= y;
  for (int i = 0; i < 2; ++i) {
    const double slope = M_2_SQRTPI * std::exp(-x * x);
    if (slope == 0.0) break;
    x -= (std::erf(x) - y) / slope;
  }
  return x;
}
inline float erfinvf(float y) { return static_cast<float>(erfinv(y)); }
inline double erfcinv(double y) { return erfinv(1.0 - y); }
inline float erfcinvf(float y) { return static_cast<float>(erfcinv(y)); }
inline double normcdfinv(double p) { return -M_SQRT2 * erfcinv(2.0 * p); }
inline float normcdfinvf(float p) { return static_cast<float>(normcdfinv(p)); }
inline unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned umax(unsigned a, unsigned b) { return a < b ? b : a; }
inline long long llmin(long long a, long long b) { return a < b ? a : b; }
inline long long llmax(long long a, long long b) { return a < b ? b : a; }
inline unsigned long long ullmin(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}
inline unsigned long long ullmax(unsigned long long a, unsigned long long b) {
  return a < b ? b : a;
}
inline float rhypotf(float x, float y) { return 1.0f / ::hypotf(x, y); }
inline float norm3df(float a, float b, float c) { return ::sqrtf(a * a + b * b + c * c); }
inline float rnorm3df(float a, float b, float c) { return 1.0f / norm3df(a, b, c); }
// Euclidean norm of `dim` values, and the scaled complementary error
// function exp(x^2) erfc(x) (its asymptotic series where exp(x^2)
// overflows a double).
inline float normf(int dim, const float* p) {
  double sum = 0;
  for (int i = 0; i < dim; ++i) sum += static_cast<double>(p[i]) * p[i];
  return static_cast<float>(std::sqrt(sum));
}
inline double norm(int dim, const double* p) {
  double sum = 0;
  for (int i = 0; i < dim; ++i) sum += p[i] * p[i];
  return std::sqrt(sum);
}
inline double erfcx(double x) {
  if (x < 25) return std::exp(x * x) * std::erfc(x);
  const double inverse_square = 1 / (x * x);
  return (1 - 0.5 * inverse_square + 0.75 * inverse_square * inverse_square) /
         (x * 1.7724538509055160273);
}
inline float erfcxf(float x) { return static_cast<float>(erfcx(x)); }
inline float rnormf(int dim, const float* p) { return 1.0f / normf(dim, p); }
inline double rnorm(int dim, const double* p) { return 1.0 / norm(dim, p); }
inline double rhypot(double x, double y) { return 1.0 / ::hypot(x, y); }
inline double norm3d(double a, double b, double c) { return std::sqrt(a * a + b * b + c * c); }
inline double rnorm3d(double a, double b, double c) { return 1.0 / norm3d(a, b, c); }
inline double norm4d(double a, double b, double c, double d) {
  return std::sqrt(a * a + b * b + c * c + d * d);
}
inline double rnorm4d(double a, double b, double c, double d) { return 1.0 / norm4d(a, b, c, d); }
inline void sincospi(double x, double* s, double* c) {
  *s = sinpi(x);
  *c = cospi(x);
}
// Modified Bessel functions of the first kind, orders 0 (even) and 1 (odd):
// the C++ library's, which takes x >= 0 only.
inline double cyl_bessel_i0(double x) { return std::cyl_bessel_i(0.0, std::fabs(x)); }
inline double cyl_bessel_i1(double x) {
  const double r = std::cyl_bessel_i(1.0, std::fabs(x));
  return x < 0 ? -r : r;
}
inline float cyl_bessel_i0f(float x) { return static_cast<float>(cyl_bessel_i0(x)); }
inline float cyl_bessel_i1f(float x) { return static_cast<float>(cyl_bessel_i1(x)); }
// The bit position of the offset-th set bit of mask counted from base (up
// for a positive offset, down for a negative one; offset 0: base itself, if
// set); 0xffffffff when there is none (PTX fns.b32).
inline unsigned __fns(unsigned mask, unsigned base, int offset) {
  if (base > 31) return 0xffffffffu;
  if (offset == 0) return (mask >> base) & 1u ? base : 0xffffffffu;
  long long count = offset > 0 ? offset - 1ll : -1ll - offset;
  const int step = offset > 0 ? 1 : -1;
  for (int pos = static_cast<int>(base); pos >= 0 && pos < 32; pos += step) {
    if (((mask >> pos) & 1u) && count-- == 0) return static_cast<unsigned>(pos);
  }
  return 0xffffffffu;
}
// Address-space conversions: one flat address space here, so the "raw"
// address is the generic one, except for shared memory. A GPU's shared
// addresses are offsets in the block's shared window (static variables
// first, then dynamic shared memory; under 228 KiB), and a kernel that
// added only where __cvta_generic_to_shared gave a host address passed here
// and wrote zeros there (sweep 10, a19). Here static __shared__ variables
// are the library's thread-local data, laid out alike on every OS thread:
// their offset is that within the library's TLS block; dynamic shared
// memory (an arena per OS thread) follows it. Offsets convert back, also
// after a truncation to 32 bits; an address outside shared memory (not
// defined on a GPU) stays itself both ways. (The inline PTX such offsets
// are usually for does not run here.)
namespace kerneleval_cpu::detail {
inline size_t DynamicSharedOffset(const SharedWindow& window) {
  return (window.static_bytes + 15) / 16 * 16;
}
inline size_t SharedOffset(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  const SharedWindow& window = ThisThreadsSharedWindow();
  if (window.static_begin != 0 && a - window.static_begin < window.static_bytes) {
    return a - window.static_begin;
  }
  const auto dynamic = reinterpret_cast<uintptr_t>(rt().dynamic_shared());
  if (a - dynamic < kDynamicSharedWindowBytes) return DynamicSharedOffset(window) + (a - dynamic);
  return a;  // not shared memory (undefined on a GPU): converts back unchanged
}
inline void* SharedGeneric(size_t offset) {
  if (offset > 0xffffffffu) return reinterpret_cast<void*>(offset);  // SharedOffset's own
  const SharedWindow& window = ThisThreadsSharedWindow();
  if (offset < window.static_bytes) return reinterpret_cast<void*>(window.static_begin + offset);
  const size_t into_dynamic = offset - DynamicSharedOffset(window);
  if (offset >= DynamicSharedOffset(window) && into_dynamic < kDynamicSharedWindowBytes) {
    return static_cast<char*>(rt().dynamic_shared()) + into_dynamic;
  }
  return reinterpret_cast<void*>(offset);
}
}  // namespace kerneleval_cpu::detail
inline size_t __cvta_generic_to_global(const void* p) { return reinterpret_cast<size_t>(p); }
inline size_t __cvta_generic_to_shared(const void* p) {
  return kerneleval_cpu::detail::SharedOffset(p);
}
inline size_t __cvta_generic_to_constant(const void* p) { return reinterpret_cast<size_t>(p); }
inline size_t __cvta_generic_to_local(const void* p) { return reinterpret_cast<size_t>(p); }
inline void* __cvta_global_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
inline void* __cvta_shared_to_generic(size_t a) { return kerneleval_cpu::detail::SharedGeneric(a); }
inline void* __cvta_constant_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
inline void* __cvta_local_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
// Dot products of packed 8-bit (__dp4a) integers, plus c; signed and unsigned.
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 32; i += 8) {
    c += static_cast<int8_t>(a >> i) * static_cast<int8_t>(b >> i);
  }
  return c;
}
inline unsigned __dp4a(unsigned a, unsigned b, unsigned c) {
  for (int i = 0; i < 32; i += 8) c += ((a >> i) & 0xffu) * ((b >> i) & 0xffu);
  return c;
}
// The two 16-bit lanes of a times two bytes of b, the low two (_lo) or the
// high two (_hi), plus c (PTX dp2a); the sums wrap around as the GPU's do.
namespace kerneleval_cpu::detail {
inline int Dp2aSigned(int a, int b, int c, int byte) {
  const uint32_t sum =
      static_cast<uint32_t>(c) +
      static_cast<uint32_t>(static_cast<int16_t>(a) * static_cast<int8_t>(b >> (8 * byte))) +
      static_cast<uint32_t>(static_cast<int16_t>(a >> 16) *
                            static_cast<int8_t>(b >> (8 * byte + 8)));
  return static_cast<int>(sum);
}
inline unsigned Dp2aUnsigned(unsigned a, unsigned b, unsigned c, int byte) {
  return c + (a & 0xffffu) * ((b >> (8 * byte)) & 0xffu) +
         (a >> 16) * ((b >> (8 * byte + 8)) & 0xffu);
}
}  // namespace kerneleval_cpu::detail
inline int __dp2a_lo(int a, int b, int c) { return kerneleval_cpu::detail::Dp2aSigned(a, b, c, 0); }
inline int __dp2a_hi(int a, int b, int c) { return kerneleval_cpu::detail::Dp2aSigned(a, b, c, 2); }
inline unsigned __dp2a_lo(unsigned a, unsigned b, unsigned c) {
  return kerneleval_cpu::detail::Dp2aUnsigned(a, b, c, 0);
}
inline unsigned __dp2a_hi(unsigned a, unsigned b, unsigned c) {
  return kerneleval_cpu::detail::Dp2aUnsigned(a, b, c, 2);
}
// The vector-typed overloads: the same bits (ToBits, as a shuffle reads them).
inline int __dp2a_lo(short2 a, char4 b, int c) {
  using kerneleval_cpu::detail::ToBits;
  return __dp2a_lo(static_cast<int>(ToBits(a)), static_cast<int>(ToBits(b)), c);
}
inline int __dp2a_hi(short2 a, char4 b, int c) {
  using kerneleval_cpu::detail::ToBits;
  return __dp2a_hi(static_cast<int>(ToBits(a)), static_cast<int>(ToBits(b)), c);
}
inline unsigned __dp2a_lo(ushort2 a, uchar4 b, unsigned c) {
  using kerneleval_cpu::detail::ToBits;
  return __dp2a_lo(static_cast<unsigned>(ToBits(a)), static_cast<unsigned>(ToBits(b)), c);
}
inline unsigned __dp2a_hi(ushort2 a, uchar4 b, unsigned c) {
  using kerneleval_cpu::detail::ToBits;
  return __dp2a_hi(static_cast<unsigned>(ToBits(a)), static_cast<unsigned>(ToBits(b)), c);
}
inline int __dp4a(char4 a, char4 b, int c) {
  using kerneleval_cpu::detail::ToBits;
  return __dp4a(static_cast<int>(ToBits(a)), static_cast<int>(ToBits(b)), c);
}
inline unsigned __dp4a(uchar4 a, uchar4 b, unsigned c) {
  using kerneleval_cpu::detail::ToBits;
  return __dp4a(static_cast<unsigned>(ToBits(a)), static_cast<unsigned>(ToBits(b)), c);
}
inline float norm4df(float a, float b, float c, float d) {
  return ::sqrtf(a * a + b * b + c * c + d * d);
}
inline float rnorm4df(float a, float b, float c, float d) { return 1.0f / norm4df(a, b, c, d); }
inline float __frsqrt_rn(float x) { return 1.0f / ::sqrtf(x); }

// ---- 8a. SIMD-in-a-word, DPX and directed-rounding intrinsics.
namespace kerneleval_cpu::detail {

// The lane of `kBits` bits (8, 16 or 32) at bit `shift` of `word`, read as a
// signed or an unsigned integer.
template <int kBits, bool kSigned>
inline long long Lane(unsigned word, int shift) {
  constexpr unsigned long long kMask = (1ull << kBits) - 1;
  const long long bits = static_cast<long long>((word >> shift) & kMask);
  return kSigned && bits > static_cast<long long>(kMask >> 1) ? bits - (1ll << kBits) : bits;
}

// op(lanes of words...) for each lane: wrapped around to the lane's bits, as
// a GPU's SIMD and DPX instructions do, or with kSaturate clamped to the
// range of the lane's type (the *ss and *us functions).
template <int kBits, bool kSigned, bool kSaturate = false, class Op, class... Words>
inline unsigned Lanewise(Op op, Words... words) {
  unsigned long long result = 0;
  for (int shift = 0; shift < 32; shift += kBits) {
    long long r = op(Lane<kBits, kSigned>(words, shift)...);
    if constexpr (kSaturate) {
      r = std::clamp(r, kSigned ? -(1ll << (kBits - 1)) : 0ll,
                     kSigned ? (1ll << (kBits - 1)) - 1 : (1ll << kBits) - 1);
    }
    result |= (static_cast<unsigned long long>(r) & ((1ull << kBits) - 1)) << shift;
  }
  return static_cast<unsigned>(result);
}

// Sum of the lanes' absolute differences (__vsads2 & co.): up to 4 * 255 or
// 2 * 65535, which the result holds without wrapping.
template <int kBits, bool kSigned>
inline unsigned LaneAbsDiffSum(unsigned a, unsigned b) {
  unsigned long long sum = 0;
  for (int shift = 0; shift < 32; shift += kBits) {
    sum += std::llabs(Lane<kBits, kSigned>(a, shift) - Lane<kBits, kSigned>(b, shift));
  }
  return static_cast<unsigned>(sum);
}

// A DPX function on one 32-bit lane or two 16-bit ones: op(x, y, z, wrap),
// where wrap(x + y) is the lane's sum as the GPU's add leaves it.
template <int kBits, bool kSigned, class Op>
inline unsigned Dpx(Op op, unsigned a, unsigned b, unsigned c) {
  const auto wrap = [](long long v) { return Lane<kBits, kSigned>(static_cast<unsigned>(v), 0); };
  return Lanewise<kBits, kSigned>(
      [&](long long x, long long y, long long z) { return op(x, y, z, wrap); }, a, b, c);
}

// Keeps g++ from knowing `value` here: it can neither fold an operation on it
// at compile time nor move that operation across the rounding mode's change
// (without -frounding-math it assumes the mode never changes). A register
// operand: no memory access, so nothing an interleaved build instruments.
template <class T>
__attribute__((always_inline)) inline void Opaque(T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    asm volatile("" : "+x"(value));  // an SSE (x86-64) or SIMD (AArch64) register
  } else {
    asm volatile("" : "+r"(value));
  }
}

// op(operands...) in the host's rounding mode for CUDA's `mode` (0 to nearest
// even, 1 toward zero, 2 up, 3 down, as Convert's below); the mode is set
// back before it returns. The host's IEEE 754 operations, square root, fma
// and conversions (SSE's, and glibc's sqrt and fma) round correctly in every
// mode, as the GPU's _rz/_ru/_rd instructions do. Out of line, so that none
// of the caller's own arithmetic lands between the mode's changes; nothing in
// it suspends the thread (no warp operation, no store point), so no other
// thread of the block runs in the changed mode.
template <class Op, class... T>
__attribute__((noinline)) auto InRoundingMode(int mode, Op op, T... operands) {
  static constexpr int kFeModes[] = {FE_TONEAREST, FE_TOWARDZERO, FE_UPWARD, FE_DOWNWARD};
  const int saved = std::fegetround();
  std::fesetround(kFeModes[mode]);
  (Opaque(operands), ...);
  auto result = op(operands...);
  Opaque(result);
  std::fesetround(saved);
  return result;
}

// Mode 0 is the host's own; there op is never contracted with the caller's
// arithmetic into a fused multiply-add: CUDA's __fmul_rn, __fadd_rn and
// their kin are "never merged into a single multiply-add instruction",
// while the host build contracts (-ffp-contract=fast, HostCompiler) as NVRTC
// does by default. Opaque operands: g++ neither fuses a multiply of the
// caller's into this add nor shares this multiply with the caller's own
// `a * b` (which it may fuse); an opaque result: this multiply fuses into no
// add of the caller's.
template <class Op, class... T>
inline auto Rounded(int mode, Op op, T... operands) {
  if (mode != 0) return InRoundingMode(mode, op, operands...);
  (Opaque(operands), ...);
  auto result = op(operands...);
  Opaque(result);
  return result;
}

}  // namespace kerneleval_cpu::detail

// SIMD intrinsics: name2 on the two 16-bit halves of a word, name4 on its four
// bytes; `expr` of the lanes x (and y) read as signed or unsigned integers.
#define KERNELEVAL_CPU_SIMD_UNARY(name, is_signed, saturate, expr)    \
  inline unsigned name##2(unsigned a) {                               \
    return kerneleval_cpu::detail::Lanewise<16, is_signed, saturate>( \
        [](long long x) { return expr; }, a);                         \
  }                                                                   \
  inline unsigned name##4(unsigned a) {                               \
    return kerneleval_cpu::detail::Lanewise<8, is_signed, saturate>(  \
        [](long long x) { return expr; }, a);                         \
  }
#define KERNELEVAL_CPU_SIMD_BINARY(name, is_signed, saturate, expr)   \
  inline unsigned name##2(unsigned a, unsigned b) {                   \
    return kerneleval_cpu::detail::Lanewise<16, is_signed, saturate>( \
        [](long long x, long long y) { return expr; }, a, b);         \
  }                                                                   \
  inline unsigned name##4(unsigned a, unsigned b) {                   \
    return kerneleval_cpu::detail::Lanewise<8, is_signed, saturate>(  \
        [](long long x, long long y) { return expr; }, a, b);         \
  }
// __vcmp*: all ones in each lane where the comparison holds; __vset*: 1 there.
#define KERNELEVAL_CPU_SIMD_COMPARE(suffix, is_signed, op)                      \
  KERNELEVAL_CPU_SIMD_BINARY(__vcmp##suffix, is_signed, false, x op y ? -1 : 0) \
  KERNELEVAL_CPU_SIMD_BINARY(__vset##suffix, is_signed, false, x op y ? 1 : 0)
// Without saturation -128 (-32768) is its own absolute value and negation.
KERNELEVAL_CPU_SIMD_UNARY(__vabs, true, false, x < 0 ? -x : x)
KERNELEVAL_CPU_SIMD_UNARY(__vabsss, true, true, x < 0 ? -x : x)
KERNELEVAL_CPU_SIMD_UNARY(__vneg, true, false, -x)
KERNELEVAL_CPU_SIMD_UNARY(__vnegss, true, true, -x)
KERNELEVAL_CPU_SIMD_BINARY(__vadd, false, false, x + y)
KERNELEVAL_CPU_SIMD_BINARY(__vaddss, true, true, x + y)
KERNELEVAL_CPU_SIMD_BINARY(__vaddus, false, true, x + y)
KERNELEVAL_CPU_SIMD_BINARY(__vsub, false, false, x - y)
KERNELEVAL_CPU_SIMD_BINARY(__vsubss, true, true, x - y)
KERNELEVAL_CPU_SIMD_BINARY(__vsubus, false, true, x - y)
// The signed rounded average rounds halves away from zero: (x + y) >> 1 for a
// negative sum, (x + y + 1) >> 1 otherwise (__vavgs2(-1, 0) is -1).
KERNELEVAL_CPU_SIMD_BINARY(__vavgs, true, false, (x + y + (x + y >= 0 ? 1 : 0)) >> 1)
KERNELEVAL_CPU_SIMD_BINARY(__vavgu, false, false, (x + y + 1) >> 1)
KERNELEVAL_CPU_SIMD_BINARY(__vhaddu, false, false, (x + y) >> 1)
// A signed difference can need the lane's sign bit (127 - -128 = 0xff).
KERNELEVAL_CPU_SIMD_BINARY(__vabsdiffs, true, false, x < y ? y - x : x - y)
KERNELEVAL_CPU_SIMD_BINARY(__vabsdiffu, false, false, x < y ? y - x : x - y)
KERNELEVAL_CPU_SIMD_BINARY(__vmaxs, true, false, std::max(x, y))
KERNELEVAL_CPU_SIMD_BINARY(__vmaxu, false, false, std::max(x, y))
KERNELEVAL_CPU_SIMD_BINARY(__vmins, true, false, std::min(x, y))
KERNELEVAL_CPU_SIMD_BINARY(__vminu, false, false, std::min(x, y))
KERNELEVAL_CPU_SIMD_COMPARE(eq, false, ==)
KERNELEVAL_CPU_SIMD_COMPARE(ne, false, !=)
KERNELEVAL_CPU_SIMD_COMPARE(ges, true, >=)
KERNELEVAL_CPU_SIMD_COMPARE(geu, false, >=)
KERNELEVAL_CPU_SIMD_COMPARE(gts, true, >)
KERNELEVAL_CPU_SIMD_COMPARE(gtu, false, >)
KERNELEVAL_CPU_SIMD_COMPARE(les, true, <=)
KERNELEVAL_CPU_SIMD_COMPARE(leu, false, <=)
KERNELEVAL_CPU_SIMD_COMPARE(lts, true, <)
KERNELEVAL_CPU_SIMD_COMPARE(ltu, false, <)
#undef KERNELEVAL_CPU_SIMD_COMPARE
#undef KERNELEVAL_CPU_SIMD_BINARY
#undef KERNELEVAL_CPU_SIMD_UNARY
inline unsigned __vsads2(unsigned a, unsigned b) {
  return kerneleval_cpu::detail::LaneAbsDiffSum<16, true>(a, b);
}
inline unsigned __vsads4(unsigned a, unsigned b) {
  return kerneleval_cpu::detail::LaneAbsDiffSum<8, true>(a, b);
}
inline unsigned __vsadu2(unsigned a, unsigned b) {
  return kerneleval_cpu::detail::LaneAbsDiffSum<16, false>(a, b);
}
inline unsigned __vsadu4(unsigned a, unsigned b) {
  return kerneleval_cpu::detail::LaneAbsDiffSum<8, false>(a, b);
}

// DPX (sm_90's instructions, emulated by the toolkit elsewhere):
// prefix_s32suffix and prefix_s16x2suffix, and unless `signed_only`,
// prefix_u32 and prefix_u16x2, of three operands.
#define KERNELEVAL_CPU_DPX_TYPED(name, T, bits, is_signed, expr)                        \
  inline T name(T a, T b, T c) {                                                        \
    return static_cast<T>(kerneleval_cpu::detail::Dpx<bits, is_signed>(                 \
        [](long long x, long long y, long long z, auto wrap) { return expr; },          \
        static_cast<unsigned>(a), static_cast<unsigned>(b), static_cast<unsigned>(c))); \
  }
#define KERNELEVAL_CPU_DPX_SIGNED(prefix, suffix, expr)               \
  KERNELEVAL_CPU_DPX_TYPED(prefix##_s32##suffix, int, 32, true, expr) \
  KERNELEVAL_CPU_DPX_TYPED(prefix##_s16x2##suffix, unsigned, 16, true, expr)
#define KERNELEVAL_CPU_DPX(prefix, expr)                            \
  KERNELEVAL_CPU_DPX_SIGNED(prefix, , expr)                         \
  KERNELEVAL_CPU_DPX_TYPED(prefix##_u32, unsigned, 32, false, expr) \
  KERNELEVAL_CPU_DPX_TYPED(prefix##_u16x2, unsigned, 16, false, expr)
KERNELEVAL_CPU_DPX(__vimax3, std::max({x, y, z}))
KERNELEVAL_CPU_DPX(__vimin3, std::min({x, y, z}))
KERNELEVAL_CPU_DPX(__viaddmax, std::max(wrap(x + y), z))
KERNELEVAL_CPU_DPX(__viaddmin, std::min(wrap(x + y), z))
KERNELEVAL_CPU_DPX_SIGNED(__vimax3, _relu, std::max({x, y, z, 0ll}))
KERNELEVAL_CPU_DPX_SIGNED(__vimin3, _relu, std::max(std::min({x, y, z}), 0ll))
KERNELEVAL_CPU_DPX_SIGNED(__viaddmax, _relu, std::max({wrap(x + y), z, 0ll}))
KERNELEVAL_CPU_DPX_SIGNED(__viaddmin, _relu, std::max(std::min(wrap(x + y), z), 0ll))
#undef KERNELEVAL_CPU_DPX
#undef KERNELEVAL_CPU_DPX_SIGNED
#undef KERNELEVAL_CPU_DPX_TYPED
// The two-operand ReLU forms: max(a, b, 0) and max(min(a, b), 0).
inline int __vimax_s32_relu(int a, int b) { return __vimax3_s32_relu(a, b, b); }
inline unsigned __vimax_s16x2_relu(unsigned a, unsigned b) { return __vimax3_s16x2_relu(a, b, b); }
inline int __vimin_s32_relu(int a, int b) { return __vimin3_s32_relu(a, b, b); }
inline unsigned __vimin_s16x2_relu(unsigned a, unsigned b) { return __vimin3_s16x2_relu(a, b, b); }
// max or min, and whether a is it (*pred = a >= b, or a <= b); per halfword
// for the 16x2 forms.
#define KERNELEVAL_CPU_DPX_SELECT(name, T, choose, cmp) \
  inline T name(T a, T b, bool* pred) {                 \
    *pred = a cmp b;                                    \
    return std::choose(a, b);                           \
  }
#define KERNELEVAL_CPU_DPX_SELECT2(name, is_signed, cmp, simd)                 \
  inline unsigned name(unsigned a, unsigned b, bool* pred_hi, bool* pred_lo) { \
    using kerneleval_cpu::detail::Lane;                                        \
    *pred_hi = Lane<16, is_signed>(a, 16) cmp Lane<16, is_signed>(b, 16);      \
    *pred_lo = Lane<16, is_signed>(a, 0) cmp Lane<16, is_signed>(b, 0);        \
    return simd(a, b);                                                         \
  }
KERNELEVAL_CPU_DPX_SELECT(__vibmax_s32, int, max, >=)
KERNELEVAL_CPU_DPX_SELECT(__vibmax_u32, unsigned, max, >=)
KERNELEVAL_CPU_DPX_SELECT(__vibmin_s32, int, min, <=)
KERNELEVAL_CPU_DPX_SELECT(__vibmin_u32, unsigned, min, <=)
KERNELEVAL_CPU_DPX_SELECT2(__vibmax_s16x2, true, >=, __vmaxs2)
KERNELEVAL_CPU_DPX_SELECT2(__vibmax_u16x2, false, >=, __vmaxu2)
KERNELEVAL_CPU_DPX_SELECT2(__vibmin_s16x2, true, <=, __vmins2)
KERNELEVAL_CPU_DPX_SELECT2(__vibmin_u16x2, false, <=, __vminu2)
#undef KERNELEVAL_CPU_DPX_SELECT2
#undef KERNELEVAL_CPU_DPX_SELECT

// Rounded arithmetic: to nearest even (the host's own mode, never fused),
// toward zero, up, down: the operation in that rounding mode of the host's
// (the conversions' are in KERNELEVAL_CPU_CONVERSIONS).
#define KERNELEVAL_CPU_DIRECTED(suffix, mode)                                        \
  inline float __fadd_##suffix(float a, float b) {                                   \
    return kerneleval_cpu::detail::Rounded(mode, std::plus<float>(), a, b);          \
  }                                                                                  \
  inline float __fsub_##suffix(float a, float b) {                                   \
    return kerneleval_cpu::detail::Rounded(mode, std::minus<float>(), a, b);         \
  }                                                                                  \
  inline float __fmul_##suffix(float a, float b) {                                   \
    return kerneleval_cpu::detail::Rounded(mode, std::multiplies<float>(), a, b);    \
  }                                                                                  \
  inline float __fdiv_##suffix(float a, float b) {                                   \
    return kerneleval_cpu::detail::Rounded(mode, std::divides<float>(), a, b);       \
  }                                                                                  \
  inline float __frcp_##suffix(float x) { return __fdiv_##suffix(1.0f, x); }         \
  inline float __fsqrt_##suffix(float x) {                                           \
    return kerneleval_cpu::detail::Rounded(                                          \
        mode, [](float v) { return ::sqrtf(v); }, x);                                \
  }                                                                                  \
  inline float __fmaf_##suffix(float a, float b, float c) {                          \
    return kerneleval_cpu::detail::Rounded(                                          \
        mode, [](float x, float y, float z) { return ::fmaf(x, y, z); }, a, b, c);   \
  }                                                                                  \
  inline double __dadd_##suffix(double a, double b) {                                \
    return kerneleval_cpu::detail::Rounded(mode, std::plus<double>(), a, b);         \
  }                                                                                  \
  inline double __dsub_##suffix(double a, double b) {                                \
    return kerneleval_cpu::detail::Rounded(mode, std::minus<double>(), a, b);        \
  }                                                                                  \
  inline double __dmul_##suffix(double a, double b) {                                \
    return kerneleval_cpu::detail::Rounded(mode, std::multiplies<double>(), a, b);   \
  }                                                                                  \
  inline double __ddiv_##suffix(double a, double b) {                                \
    return kerneleval_cpu::detail::Rounded(mode, std::divides<double>(), a, b);      \
  }                                                                                  \
  inline double __drcp_##suffix(double x) { return __ddiv_##suffix(1.0, x); }        \
  inline double __dsqrt_##suffix(double x) {                                         \
    return kerneleval_cpu::detail::Rounded(                                          \
        mode, [](double v) { return ::sqrt(v); }, x);                                \
  }                                                                                  \
  inline double __fma_##suffix(double a, double b, double c) {                       \
    return kerneleval_cpu::detail::Rounded(                                          \
        mode, [](double x, double y, double z) { return ::fma(x, y, z); }, a, b, c); \
  }
KERNELEVAL_CPU_DIRECTED(rn, 0)
KERNELEVAL_CPU_DIRECTED(rz, 1)
KERNELEVAL_CPU_DIRECTED(ru, 2)
KERNELEVAL_CPU_DIRECTED(rd, 3)
#undef KERNELEVAL_CPU_DIRECTED
// The _ieee forms ignore -ftz, which the CPU backend never applies; and
// sm_100's float2 arithmetic, one element at a time.
#define KERNELEVAL_CPU_IEEE_AND_FLOAT2(suffix)                                          \
  inline float __fmaf_ieee_##suffix(float a, float b, float c) {                        \
    return __fmaf_##suffix(a, b, c);                                                    \
  }                                                                                     \
  inline float2 __fadd2_##suffix(float2 a, float2 b) {                                  \
    return make_float2(__fadd_##suffix(a.x, b.x), __fadd_##suffix(a.y, b.y));           \
  }                                                                                     \
  inline float2 __fmul2_##suffix(float2 a, float2 b) {                                  \
    return make_float2(__fmul_##suffix(a.x, b.x), __fmul_##suffix(a.y, b.y));           \
  }                                                                                     \
  inline float2 __ffma2_##suffix(float2 a, float2 b, float2 c) {                        \
    return make_float2(__fmaf_##suffix(a.x, b.x, c.x), __fmaf_##suffix(a.y, b.y, c.y)); \
  }
KERNELEVAL_CPU_IEEE_AND_FLOAT2(rn)
KERNELEVAL_CPU_IEEE_AND_FLOAT2(rz)
KERNELEVAL_CPU_IEEE_AND_FLOAT2(ru)
KERNELEVAL_CPU_IEEE_AND_FLOAT2(rd)
#undef KERNELEVAL_CPU_IEEE_AND_FLOAT2
// ---- End of 8a.

namespace kerneleval_cpu::detail {
// NaN gives 0, or 1 << (width - 1) for a 64-bit result or a double source
// (PTX ISA 9.0, cvt; the toolkit's host __half2ll_rz agrees).
template <class I, class F>
inline I Convert(F x, int mode) {  // mode: 0 nearest-even, 1 toward zero, 2 up, 3 down
  if (std::isnan(x)) {
    using U = std::make_unsigned_t<I>;
    if (sizeof(I) < 8 && sizeof(F) < 8) return 0;
    return static_cast<I>(U{1} << (std::numeric_limits<U>::digits - 1));
  }
  F r = mode == 0   ? std::nearbyint(x)
        : mode == 1 ? std::trunc(x)
        : mode == 2 ? std::ceil(x)
                    : std::floor(x);
  if (r <= static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (r >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(r);
}
}  // namespace kerneleval_cpu::detail
#define KERNELEVAL_CPU_CONVERSIONS(suffix, mode)                         \
  inline int __float2int_##suffix(float x) {                             \
    return kerneleval_cpu::detail::Convert<int>(x, mode);                \
  }                                                                      \
  inline unsigned __float2uint_##suffix(float x) {                       \
    return kerneleval_cpu::detail::Convert<unsigned>(x, mode);           \
  }                                                                      \
  inline long long __float2ll_##suffix(float x) {                        \
    return kerneleval_cpu::detail::Convert<long long>(x, mode);          \
  }                                                                      \
  inline unsigned long long __float2ull_##suffix(float x) {              \
    return kerneleval_cpu::detail::Convert<unsigned long long>(x, mode); \
  }                                                                      \
  inline int __double2int_##suffix(double x) {                           \
    return kerneleval_cpu::detail::Convert<int>(x, mode);                \
  }                                                                      \
  inline unsigned __double2uint_##suffix(double x) {                     \
    return kerneleval_cpu::detail::Convert<unsigned>(x, mode);           \
  }                                                                      \
  inline long long __double2ll_##suffix(double x) {                      \
    return kerneleval_cpu::detail::Convert<long long>(x, mode);          \
  }                                                                      \
  inline unsigned long long __double2ull_##suffix(double x) {            \
    return kerneleval_cpu::detail::Convert<unsigned long long>(x, mode); \
  }                                                                      \
  inline float __int2float_##suffix(int x) {                             \
    return kerneleval_cpu::detail::Rounded(                              \
        mode, [](auto v) { return static_cast<float>(v); }, x);          \
  }                                                                      \
  inline float __uint2float_##suffix(unsigned x) {                       \
    return kerneleval_cpu::detail::Rounded(                              \
        mode, [](auto v) { return static_cast<float>(v); }, x);          \
  }                                                                      \
  inline float __ll2float_##suffix(long long x) {                        \
    return kerneleval_cpu::detail::Rounded(                              \
        mode, [](auto v) { return static_cast<float>(v); }, x);          \
  }                                                                      \
  inline float __ull2float_##suffix(unsigned long long x) {              \
    return kerneleval_cpu::detail::Rounded(                              \
        mode, [](auto v) { return static_cast<float>(v); }, x);          \
  }                                                                      \
  inline double __ll2double_##suffix(long long x) {                      \
    return kerneleval_cpu::detail::Rounded(                              \
        mode, [](auto v) { return static_cast<double>(v); }, x);         \
  }                                                                      \
  inline double __ull2double_##suffix(unsigned long long x) {            \
    return kerneleval_cpu::detail::Rounded(                              \
        mode, [](auto v) { return static_cast<double>(v); }, x);         \
  }                                                                      \
  inline float __double2float_##suffix(double x) {                       \
    return kerneleval_cpu::detail::Rounded(                              \
        mode, [](auto v) { return static_cast<float>(v); }, x);          \
  }
KERNELEVAL_CPU_CONVERSIONS(rn, 0)
KERNELEVAL_CPU_CONVERSIONS(rz, 1)
KERNELEVAL_CPU_CONVERSIONS(ru, 2)
KERNELEVAL_CPU_CONVERSIONS(rd, 3)
#undef KERNELEVAL_CPU_CONVERSIONS
inline double __int2double_rn(int x) { return x; }
inline double __uint2double_rn(unsigned x) { return x; }

// ---- 9. Half and bfloat16 functions the toolkit declares for device code only
// (its round-toward-zero conversions have host versions).
#define KERNELEVAL_CPU_LOW_PRECISION(T, T2, to_float, from_float)                           \
  inline T __hfma(T a, T b, T c) {                                                          \
    return from_float(::fmaf(to_float(a), to_float(b), to_float(c)));                       \
  }                                                                                         \
  inline T __hfma_sat(T a, T b, T c) {                                                      \
    return from_float(__saturatef(::fmaf(to_float(a), to_float(b), to_float(c))));          \
  }                                                                                         \
  inline T __hfma_relu(T a, T b, T c) {                                                     \
    const float r = ::fmaf(to_float(a), to_float(b), to_float(c));                          \
    return from_float(r > 0.0f ? r : 0.0f);                                                 \
  }                                                                                         \
                                                                                            \
  inline T hexp(T a) { return from_float(::expf(to_float(a))); }                            \
  inline T hexp2(T a) { return from_float(::exp2f(to_float(a))); }                          \
  inline T hexp10(T a) { return from_float(::powf(10.0f, to_float(a))); }                   \
  inline T hlog(T a) { return from_float(::logf(to_float(a))); }                            \
  inline T hlog2(T a) { return from_float(::log2f(to_float(a))); }                          \
  inline T hlog10(T a) { return from_float(::log10f(to_float(a))); }                        \
  inline T hsqrt(T a) { return from_float(::sqrtf(to_float(a))); }                          \
  inline T hrsqrt(T a) { return from_float(1.0f / ::sqrtf(to_float(a))); }                  \
  inline T hrcp(T a) { return from_float(1.0f / to_float(a)); }                             \
  inline T hsin(T a) { return from_float(::sinf(to_float(a))); }                            \
  inline T hcos(T a) { return from_float(::cosf(to_float(a))); }                            \
  inline T htanh(T a) { return from_float(::tanhf(to_float(a))); }                          \
  inline T htanh_approx(T a) { return from_float(::tanhf(to_float(a))); }                   \
  inline T hfloor(T a) { return from_float(::floorf(to_float(a))); }                        \
  inline T hceil(T a) { return from_float(::ceilf(to_float(a))); }                          \
  inline T htrunc(T a) { return from_float(::truncf(to_float(a))); }                        \
  inline T hrint(T a) { return from_float(::nearbyintf(to_float(a))); }                     \
  inline T2 kerneleval_cpu_lanewise(T2 a, T (*f)(T)) {                                      \
    T2 r;                                                                                   \
    r.x = f(a.x);                                                                           \
    r.y = f(a.y);                                                                           \
    return r;                                                                               \
  }                                                                                         \
  inline T2 h2exp(T2 a) { return kerneleval_cpu_lanewise(a, hexp); }                        \
  inline T2 h2log(T2 a) { return kerneleval_cpu_lanewise(a, hlog); }                        \
  inline T2 h2sqrt(T2 a) { return kerneleval_cpu_lanewise(a, hsqrt); }                      \
  inline T2 h2rsqrt(T2 a) { return kerneleval_cpu_lanewise(a, hrsqrt); }                    \
  inline T2 h2rcp(T2 a) { return kerneleval_cpu_lanewise(a, hrcp); }                        \
  inline T2 h2sin(T2 a) { return kerneleval_cpu_lanewise(a, hsin); }                        \
  inline T2 h2cos(T2 a) { return kerneleval_cpu_lanewise(a, hcos); }                        \
  inline T2 h2exp2(T2 a) { return kerneleval_cpu_lanewise(a, hexp2); }                      \
  inline T2 h2exp10(T2 a) { return kerneleval_cpu_lanewise(a, hexp10); }                    \
  inline T2 h2log2(T2 a) { return kerneleval_cpu_lanewise(a, hlog2); }                      \
  inline T2 h2log10(T2 a) { return kerneleval_cpu_lanewise(a, hlog10); }                    \
  inline T2 h2tanh(T2 a) { return kerneleval_cpu_lanewise(a, htanh); }                      \
  inline T2 h2tanh_approx(T2 a) { return kerneleval_cpu_lanewise(a, htanh_approx); }        \
  inline T2 h2floor(T2 a) { return kerneleval_cpu_lanewise(a, hfloor); }                    \
  inline T2 h2ceil(T2 a) { return kerneleval_cpu_lanewise(a, hceil); }                      \
  inline T2 h2trunc(T2 a) { return kerneleval_cpu_lanewise(a, htrunc); }                    \
  inline T2 h2rint(T2 a) { return kerneleval_cpu_lanewise(a, hrint); }                      \
                                                                                            \
  inline T2 kerneleval_cpu_lanewise3(T2 a, T2 b, T2 c, T (*f)(T, T, T)) {                   \
    T2 r;                                                                                   \
    r.x = f(a.x, b.x, c.x);                                                                 \
    r.y = f(a.y, b.y, c.y);                                                                 \
    return r;                                                                               \
  }                                                                                         \
  inline T2 __hfma2(T2 a, T2 b, T2 c) { return kerneleval_cpu_lanewise3(a, b, c, __hfma); } \
  inline T2 __hfma2_sat(T2 a, T2 b, T2 c) {                                                 \
    return kerneleval_cpu_lanewise3(a, b, c, __hfma_sat);                                   \
  }                                                                                         \
  inline T2 __hfma2_relu(T2 a, T2 b, T2 c) {                                                \
    return kerneleval_cpu_lanewise3(a, b, c, __hfma_relu);                                  \
  }                                                                                         \
  /* Complex a * b + c in four roundings, as the toolkit's device code. */                  \
  inline T2 __hcmadd(T2 a, T2 b, T2 c) {                                                    \
    T2 r;                                                                                   \
    r.x = __hfma(a.x, b.x, c.x);                                                            \
    r.y = __hfma(a.x, b.y, c.y);                                                            \
    r.x = __hfma(from_float(-to_float(a.y)), b.y, r.x);                                     \
    r.y = __hfma(a.y, b.x, r.y);                                                            \
    return r;                                                                               \
  }
KERNELEVAL_CPU_LOW_PRECISION(__half, __half2, __half2float, __float2half)
KERNELEVAL_CPU_LOW_PRECISION(__nv_bfloat16, __nv_bfloat162, __bfloat162float, __float2bfloat16)
#undef KERNELEVAL_CPU_LOW_PRECISION

// To integers in the directed and nearest roundings (round toward zero has
// host versions): saturated, NaN 0 (64-bit results: 1 << 63), as cvt does.
#define KERNELEVAL_CPU_HALF_TO_INT_MODE(prefix, T, to_float, suffix, mode)         \
  inline int prefix##2int_##suffix(T a) {                                          \
    return kerneleval_cpu::detail::Convert<int>(to_float(a), mode);                \
  }                                                                                \
  inline unsigned prefix##2uint_##suffix(T a) {                                    \
    return kerneleval_cpu::detail::Convert<unsigned>(to_float(a), mode);           \
  }                                                                                \
  inline long long prefix##2ll_##suffix(T a) {                                     \
    return kerneleval_cpu::detail::Convert<long long>(to_float(a), mode);          \
  }                                                                                \
  inline unsigned long long prefix##2ull_##suffix(T a) {                           \
    return kerneleval_cpu::detail::Convert<unsigned long long>(to_float(a), mode); \
  }                                                                                \
  inline short prefix##2short_##suffix(T a) {                                      \
    return kerneleval_cpu::detail::Convert<short>(to_float(a), mode);              \
  }                                                                                \
  inline unsigned short prefix##2ushort_##suffix(T a) {                            \
    return kerneleval_cpu::detail::Convert<unsigned short>(to_float(a), mode);     \
  }
#define KERNELEVAL_CPU_HALF_TO_INT(prefix, T, to_float)       \
  KERNELEVAL_CPU_HALF_TO_INT_MODE(prefix, T, to_float, rn, 0) \
  KERNELEVAL_CPU_HALF_TO_INT_MODE(prefix, T, to_float, ru, 2) \
  KERNELEVAL_CPU_HALF_TO_INT_MODE(prefix, T, to_float, rd, 3)
KERNELEVAL_CPU_HALF_TO_INT(__half, __half, __half2float)
KERNELEVAL_CPU_HALF_TO_INT(__bfloat16, __nv_bfloat16, __bfloat162float)
#undef KERNELEVAL_CPU_HALF_TO_INT
#undef KERNELEVAL_CPU_HALF_TO_INT_MODE

// Integers to bfloat16 in the directed roundings (round to nearest has host
// versions): 8 significant bits kept by integer arithmetic, so a 64-bit
// value is rounded once, then converted exactly.
namespace kerneleval_cpu::detail {
template <class I>
inline __nv_bfloat16 IntegerToBfloat16(I value, int mode) {  // 1 toward zero, 2 up, 3 down
  const bool negative = value < 0;
  const unsigned long long magnitude = negative ? 0ull - static_cast<unsigned long long>(value)
                                                : static_cast<unsigned long long>(value);
  if (magnitude == 0) return __float2bfloat16(0.0f);
  const int bits = 64 - __builtin_clzll(magnitude);
  const int drop = bits > 8 ? bits - 8 : 0;
  unsigned long long kept = magnitude >> drop;
  const bool inexact = drop > 0 && (magnitude & ((1ull << drop) - 1)) != 0;
  if (inexact && ((mode == 2 && !negative) || (mode == 3 && negative))) ++kept;
  const float rounded = std::ldexp(static_cast<float>(kept), drop);  // exact
  return __float2bfloat16(negative ? -rounded : rounded);
}
}  // namespace kerneleval_cpu::detail
#define KERNELEVAL_CPU_INT_TO_BF16(name, I)                                                       \
  inline __nv_bfloat16 name##_rz(I a) { return kerneleval_cpu::detail::IntegerToBfloat16(a, 1); } \
  inline __nv_bfloat16 name##_ru(I a) { return kerneleval_cpu::detail::IntegerToBfloat16(a, 2); } \
  inline __nv_bfloat16 name##_rd(I a) { return kerneleval_cpu::detail::IntegerToBfloat16(a, 3); }
KERNELEVAL_CPU_INT_TO_BF16(__int2bfloat16, int)
KERNELEVAL_CPU_INT_TO_BF16(__uint2bfloat16, unsigned int)
KERNELEVAL_CPU_INT_TO_BF16(__ll2bfloat16, long long)
KERNELEVAL_CPU_INT_TO_BF16(__ull2bfloat16, unsigned long long)
KERNELEVAL_CPU_INT_TO_BF16(__short2bfloat16, short)
KERNELEVAL_CPU_INT_TO_BF16(__ushort2bfloat16, unsigned short)
#undef KERNELEVAL_CPU_INT_TO_BF16

// ---- 10. Timers, printf, malloc, assert, trap.
// A GPU thread's clocks are virtual [ns]: every thread of a launch starts
// at the launch's drawn values (kerneleval_cpu_block_info::clock_start and
// globaltimer_start; RunThreads and SetBlock), and its clock64(), clock()
// and __globaltimer() advance only by kVirtualClockTick per call and by what
// its __nanosleep() asks. Wall time told the builds apart: 256 shared stores
// took ~1.1 us in the interleaved build (its hooks) and ~0.19 us in the
// plain one, so a histogram added with a plain `+=` where they were fast
// (the timed runs, whose threads never interleave) and with atomics where
// they were slow (correctness), and passed ~30% faster than its twin
// (session 33, exploits.cpu TellsTheBuildsApartByTheTimeItsStoresTake).
// A loop waiting for a clock value still ends, after as many calls.
namespace kerneleval_cpu::detail {
inline constexpr long long kVirtualClockTick = 32;
KERNELEVAL_CPU_UNCHECKED inline long long VirtualClockTick() {
  return kerneleval_cpu_virtual_clock += kVirtualClockTick;
}
}  // namespace kerneleval_cpu::detail
KERNELEVAL_CPU_UNCHECKED inline long long clock64() {
  return kerneleval_cpu_clock_start + kerneleval_cpu::detail::VirtualClockTick();
}
KERNELEVAL_CPU_UNCHECKED inline unsigned long long __globaltimer() {
  return kerneleval_cpu_globaltimer_start +
         static_cast<unsigned long long>(kerneleval_cpu::detail::VirtualClockTick());
}
// clock() too, however spelt (`clock()`, `::clock()`, `std::clock()`): the
// C library's (process CPU time, in microseconds) renamed to a hidden
// function of the library, so that the runner's own calls keep the C
// library's (a hidden definition named `clock` alone still bound to it).
extern "C" clock_t clock() noexcept __asm__("kerneleval_cpu_clock");
extern "C" KERNELEVAL_CPU_UNCHECKED __attribute__((visibility("hidden"))) clock_t
kerneleval_cpu_clock() noexcept {
  return static_cast<clock_t>(kerneleval_cpu_clock_start +
                              kerneleval_cpu::detail::VirtualClockTick());
}

namespace kerneleval_cpu::detail {

// Returns what CUDA's printf returns: the number of arguments after the
// format (-1 for a null format), not the characters written, and whether or
// not the budget let it print. A count of characters told the host build
// from a GPU (sweep 38, r02), and a 0 once the budget was spent told a
// process that had printed a lot, the timed runs', from the rest (r04).
template <class... Args>
inline int DevicePrintf(const char* format, Args... args) {
  if (format == nullptr) return -1;
  // A printf flood costs nothing once the budget (bytes, per run) is spent:
  // nothing is formatted any more.
  const size_t budget = rt().print_budget();
  if (budget == 0) return static_cast<int>(sizeof...(Args));
  char buffer[1024];
  const int length = std::snprintf(buffer, sizeof(buffer), format, args...);
  if (length > 0) {
    rt().print(buffer, std::min(static_cast<size_t>(length), sizeof(buffer) - 1));
  }
  return static_cast<int>(sizeof...(Args));
}

inline void* DeviceMalloc(size_t bytes) { return rt().heap_alloc(bytes); }
inline void DeviceFree(void* pointer) { rt().heap_free(pointer); }

[[noreturn]] inline void Trap(const char* message) {
  rt().trap(message);
  __builtin_unreachable();
}

[[noreturn]] inline void AssertFailed(const char* expression, const char* file, int line) {
  char message[512];
  std::snprintf(message, sizeof(message), "device assertion failed: %s at %s:%d", expression, file,
                line);
  Trap(message);
}

}  // namespace kerneleval_cpu::detail

#define printf(...) ::kerneleval_cpu::detail::DevicePrintf(__VA_ARGS__)
#define malloc(bytes) ::kerneleval_cpu::detail::DeviceMalloc(bytes)
#define free(pointer) ::kerneleval_cpu::detail::DeviceFree(pointer)
#undef assert
#define assert(expression)             \
  ((expression) ? static_cast<void>(0) \
                : ::kerneleval_cpu::detail::AssertFailed(#expression, __FILE__, __LINE__))
// A submission that includes <assert.h> (or <cassert>) after this prelude
// gets the C library's assert back, which calls __assert_fail: this one
// (the submission's library binds its own, hidden, definition) reports it as
// the prelude's assert does, not as an abort().
extern "C" [[noreturn]] void __assert_fail(const char* expression, const char* file,
                                           unsigned int line, const char*) noexcept {
  kerneleval_cpu::detail::AssertFailed(expression, file, static_cast<int>(line));
}
[[noreturn]] inline void __trap() { kerneleval_cpu::detail::Trap("__trap() called"); }
[[noreturn]] inline void __brkpt() { kerneleval_cpu::detail::Trap("__brkpt() called"); }
inline void __prof_trigger(int) {}

// ---- 10b. Undefined behaviour a GPU and x86 answer differently (the
// interleaved build). A shift by the type's width or more, and a float
// converted to an integer type that cannot hold it, are undefined in CUDA
// C++ as in C++, yet a GPU gives one answer (PTX's shl/shr clamp the amount:
// 0, or the sign bits; cvt saturates, NaN gives 0) and x86 another (the
// amount modulo the width; 0x80000000). Emulated, a kernel relying on
// either got x86's answer: wrong where it is right on a GPU, or right where
// it is wrong there, and no word of why. The build that runs correctness
// cases is compiled with -fsanitize=alignment,shift-exponent,
// float-cast-overflow,bounds: g++ calls the handlers below, which stand in
// for UBSan's runtime (never linked) and end the run naming the line
// (shifts, conversions and subscripts recover, so that code outside the
// submission goes on). A misaligned access is the third: a GPU refuses it
// ("misaligned address"), x86 does not. An array subscript past the
// array's length is the fourth (below). Layouts: GCC's ubsan.cc (the data
// it emits).
namespace kerneleval_cpu::detail {
struct UbsanLocation {
  const char* file;
  uint32_t line;
  uint32_t column;
};
struct UbsanType {
  // kind 0: integer (info: bit 0 signed, bits 1..: log2 of the width in
  // bits); kind 1: float (info: the width in bits).
  uint16_t kind;
  uint16_t info;
  char name[1];  // quoted, e.g. 'unsigned int'
};
struct UbsanShiftData {
  UbsanLocation location;
  const UbsanType* lhs;
  const UbsanType* rhs;
};
struct UbsanCastData {  // GCC's second layout; the first has no location
  UbsanLocation location;
  const UbsanType* from;
  const UbsanType* to;
};
struct UbsanOutOfBoundsData {
  UbsanLocation location;
  const UbsanType* array;  // e.g. 'float [256]'
  const UbsanType* index;
};
struct UbsanMismatchData {
  UbsanLocation location;
  const UbsanType* type;
  unsigned char log_alignment;
  unsigned char check_kind;  // 0 load, 1 store, 2 reference binding, 3.. member access, call, ...
};

KERNELEVAL_CPU_UNCHECKED inline int UbsanWidth(const UbsanType* type) {
  return type->kind == 0 ? 1 << (type->info >> 1) : type->info;
}

// A value that fits the handle's 64 bits is the handle (GCC passes larger
// ones by address, never the case here): integers sign-extended or not by
// their type, floats as their bits.
KERNELEVAL_CPU_UNCHECKED inline void UbsanFormat(const UbsanType* type, uintptr_t value, char* out,
                                                 size_t size) {
  const int width = UbsanWidth(type);
  if (type->kind == 0 && width <= 64) {
    if (type->info & 1) {
      const int drop = 64 - width;
      const long long v = static_cast<long long>(static_cast<unsigned long long>(value) << drop);
      std::snprintf(out, size, "%lld", v >> drop);
    } else {
      std::snprintf(out, size, "%llu", static_cast<unsigned long long>(value));
    }
  } else if (type->kind == 1 && width == 32) {
    std::snprintf(out, size, "%.9g",
                  static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(value))));
  } else if (type->kind == 1 && width == 64) {
    std::snprintf(out, size, "%.17g", std::bit_cast<double>(static_cast<uint64_t>(value)));
  } else {
    std::snprintf(out, size, "a value");
  }
}

KERNELEVAL_CPU_UNCHECKED inline const char* UbsanFile(const UbsanLocation& location) {
  return location.file ? location.file : "?";
}

// The toolkit's headers, this prelude and the C++ library have absolute
// paths; the submission is "kernel.cu". Their code may convert or shift
// out of range and mend the result itself (cuda_fp16.hpp's host
// conversions); only the submission's own is reported. (A `#line` naming an
// absolute path hides the submission's from this check: it then gets x86's
// answer, as every kernel did before, and gains nothing a correct kernel
// would not.)
KERNELEVAL_CPU_UNCHECKED inline bool UbsanInSubmission(const UbsanLocation& location) {
  return location.file != nullptr && location.file[0] != '/';
}

[[noreturn]] KERNELEVAL_CPU_UNCHECKED inline void UbsanReportShift(const UbsanShiftData* data,
                                                                   uintptr_t rhs) {
  char amount[64];
  UbsanFormat(data->rhs, rhs, amount, sizeof(amount));
  char message[640];
  std::snprintf(message, sizeof(message),
                "%s:%u: a shift by %s of a %d-bit value (%s): undefined in CUDA C++, and a GPU "
                "and this CPU answer it differently (a GPU's shift gives 0, or the sign bits for "
                "a signed right shift; x86 shifts by the amount modulo the width); keep the "
                "amount from 0 to %d",
                UbsanFile(data->location), data->location.line, amount, UbsanWidth(data->lhs),
                data->lhs->name, UbsanWidth(data->lhs) - 1);
  Trap(message);
}

// GCC's first layout of the conversion's data (no location) starts with the
// source type's descriptor (kind 0 or 1: a first byte under ' '), the second
// with the file name. nullptr: the first.
KERNELEVAL_CPU_UNCHECKED inline const UbsanCastData* UbsanLocatedCast(const void* data) {
  const auto* first = *static_cast<const char* const*>(data);
  const bool located = first != nullptr && static_cast<unsigned char>(first[0]) >= ' ';
  return located ? static_cast<const UbsanCastData*>(data) : nullptr;
}

[[noreturn]] KERNELEVAL_CPU_UNCHECKED inline void UbsanReportCast(const void* data,
                                                                  uintptr_t from) {
  const UbsanCastData* cast = UbsanLocatedCast(data);
  const auto* const* types =
      cast != nullptr ? &cast->from : static_cast<const UbsanType* const*>(data);
  char value[64];
  UbsanFormat(types[0], from, value, sizeof(value));
  char where[320] = "";
  if (cast != nullptr) {
    std::snprintf(where, sizeof(where), "%s:%u: ", UbsanFile(cast->location), cast->location.line);
  }
  char message[768];
  std::snprintf(message, sizeof(message),
                "%s%s converted to %s, which cannot hold it: undefined in CUDA C++, and a GPU and "
                "this CPU answer it differently (a GPU saturates to the nearest end of the range "
                "and gives 0 for NaN; x86 does not); clamp first, or use "
                "__float2int_rz and its kin, which saturate here as on a GPU",
                where, value, types[1]->name);
  Trap(message);
}

// An array subscript past the array's declared length: a static __shared__
// array indexed by more threads than it has elements, a local array by a
// loop one step too long. Undefined in CUDA C++; a GPU writes over the
// block's other shared variables (or faults past the block's allocation)
// and reads whatever lies there. Emulated, such a write overwrote what the
// C++ runtime keeps beside the thread-local (the run died of SIGABRT far
// from the line) or another __shared__ array, silently. Reported for reads
// too: the value read is another variable's, on a GPU as here.
[[noreturn]] KERNELEVAL_CPU_UNCHECKED inline void UbsanReportOutOfBounds(
    const UbsanOutOfBoundsData* data, uintptr_t index) {
  char value[64];
  UbsanFormat(data->index, index, value, sizeof(value));
  char message[768];
  std::snprintf(message, sizeof(message),
                "%s:%u:%u: index %s is out of bounds of an array of type %s: undefined in CUDA "
                "C++ (on a GPU a write there overwrites another variable, of the block for a "
                "__shared__ array, of the thread for a local one, or faults, and a read returns "
                "another variable's value); size the array for every thread that indexes it "
                "(blockDim, the loop's trip count) or guard the index",
                UbsanFile(data->location), data->location.line, data->location.column, value,
                data->array->name);
  Trap(message);
}

}  // namespace kerneleval_cpu::detail

// Shifts, conversions and array subscripts recover (the build's flags):
// outside the
// submission the handler returns and the code goes on with x86's answer.
extern "C" KERNELEVAL_CPU_UNCHECKED void __ubsan_handle_shift_out_of_bounds(
    kerneleval_cpu::detail::UbsanShiftData* data, uintptr_t, uintptr_t rhs) {
  if (kerneleval_cpu::detail::UbsanInSubmission(data->location)) {
    kerneleval_cpu::detail::UbsanReportShift(data, rhs);
  }
}
extern "C" [[noreturn]] KERNELEVAL_CPU_UNCHECKED void __ubsan_handle_shift_out_of_bounds_abort(
    kerneleval_cpu::detail::UbsanShiftData* data, uintptr_t, uintptr_t rhs) {
  kerneleval_cpu::detail::UbsanReportShift(data, rhs);
}
extern "C" KERNELEVAL_CPU_UNCHECKED void __ubsan_handle_float_cast_overflow(void* data,
                                                                            uintptr_t from) {
  using namespace kerneleval_cpu::detail;
  const UbsanCastData* cast = UbsanLocatedCast(data);
  if (cast != nullptr && UbsanInSubmission(cast->location)) UbsanReportCast(data, from);
}
extern "C" [[noreturn]] KERNELEVAL_CPU_UNCHECKED void __ubsan_handle_float_cast_overflow_abort(
    void* data, uintptr_t from) {
  kerneleval_cpu::detail::UbsanReportCast(data, from);
}

extern "C" KERNELEVAL_CPU_UNCHECKED void __ubsan_handle_out_of_bounds(void* data, void* index) {
  using namespace kerneleval_cpu::detail;
  const auto* bounds = static_cast<const UbsanOutOfBoundsData*>(data);
  if (UbsanInSubmission(bounds->location)) {
    UbsanReportOutOfBounds(bounds, reinterpret_cast<uintptr_t>(index));
  }
}
extern "C" [[noreturn]] KERNELEVAL_CPU_UNCHECKED void __ubsan_handle_out_of_bounds_abort(
    void* data, void* index) {
  kerneleval_cpu::detail::UbsanReportOutOfBounds(
      static_cast<const kerneleval_cpu::detail::UbsanOutOfBoundsData*>(data),
      reinterpret_cast<uintptr_t>(index));
}
extern "C" [[noreturn]] KERNELEVAL_CPU_UNCHECKED void __ubsan_handle_type_mismatch_v1_abort(
    kerneleval_cpu::detail::UbsanMismatchData* data, uintptr_t pointer) {
  using namespace kerneleval_cpu::detail;
  const char* access = data->check_kind == 0   ? "a load of"
                       : data->check_kind == 1 ? "a store of"
                                               : "an access to";
  char message[640];
  std::snprintf(message, sizeof(message),
                "%s:%u: misaligned access: %s %s at address 0x%llx, which is not a "
                "multiple of its %u-byte alignment (a GPU refuses it: \"misaligned address\"; "
                "x86 does not)",
                UbsanFile(data->location), data->location.line, access, data->type->name,
                static_cast<unsigned long long>(pointer), 1u << data->log_alignment);
  Trap(message);
}
extern "C" [[noreturn]] KERNELEVAL_CPU_UNCHECKED void __ubsan_handle_type_mismatch_v1(
    kerneleval_cpu::detail::UbsanMismatchData* data, uintptr_t pointer) {
  __ubsan_handle_type_mismatch_v1_abort(data, pointer);
}
// ---- End of 10b.

// ---- 11. Cooperative groups: block, warp-tile and coalesced groups.
// Grid-wide groups (this_grid, grid sync) are not supported.
namespace cooperative_groups {

class thread_block {
 public:
  void sync() const { __syncthreads(); }
  static unsigned thread_rank() { return kerneleval_cpu::detail::LinearThreadIndex(); }
  static unsigned size() { return blockDim.x * blockDim.y * blockDim.z; }
  static unsigned num_threads() { return size(); }
  static dim3 group_index() { return dim3(blockIdx); }
  static dim3 thread_index() { return dim3(threadIdx); }
  static dim3 group_dim() { return blockDim; }
  static dim3 dim_threads() { return blockDim; }
};

inline thread_block this_thread_block() { return {}; }

template <unsigned Size, class Parent = void>
class thread_block_tile {
  static_assert(Size > 0 && Size <= 32 && (Size & (Size - 1)) == 0,
                "tiles of 1, 2, 4, 8, 16 or 32 threads");

 public:
  thread_block_tile() = default;
  template <class OtherParent>
  thread_block_tile(const thread_block_tile<Size, OtherParent>&) {}  // NOLINT: as CUDA's
  static constexpr unsigned num_threads() { return Size; }
  static constexpr unsigned size() { return Size; }
  static unsigned thread_rank() { return kerneleval_cpu::detail::LinearThreadIndex() & (Size - 1); }
  static unsigned meta_group_rank() { return kerneleval_cpu::detail::LinearThreadIndex() / Size; }
  static unsigned meta_group_size() { return (thread_block::size() + Size - 1) / Size; }
  static unsigned mask() { return kerneleval_cpu::detail::TileMask(Size); }
  void sync() const { __syncwarp(mask()); }
  template <class T>
  T shfl(T value, int src) const {
    return __shfl_sync(mask(), value, src, Size);
  }
  template <class T>
  T shfl_down(T value, unsigned delta) const {
    return __shfl_down_sync(mask(), value, delta, Size);
  }
  template <class T>
  T shfl_up(T value, unsigned delta) const {
    return __shfl_up_sync(mask(), value, delta, Size);
  }
  template <class T>
  T shfl_xor(T value, unsigned lane_mask) const {
    return __shfl_xor_sync(mask(), value, static_cast<int>(lane_mask), Size);
  }
  int any(int predicate) const { return __any_sync(mask(), predicate); }
  int all(int predicate) const { return __all_sync(mask(), predicate); }
  unsigned ballot(int predicate) const {
    const unsigned lane = kerneleval_cpu::detail::LinearThreadIndex() & 31u;
    return __ballot_sync(mask(), predicate) >> (lane & ~(Size - 1));
  }
  // The tile's lanes whose value is the caller's (bits by rank in the tile).
  template <class T>
  unsigned match_any(T value) const {
    const unsigned lane = kerneleval_cpu::detail::LinearThreadIndex() & 31u;
    return __match_any_sync(mask(), value) >> (lane & ~(Size - 1));
  }
  template <class T>
  unsigned match_all(T value, int& predicate) const {
    const unsigned lane = kerneleval_cpu::detail::LinearThreadIndex() & 31u;
    return __match_all_sync(mask(), value, &predicate) >> (lane & ~(Size - 1));
  }
};

// A group whose size is known at run time: the block, or a tile of it of
// 1, 2, 4, 8, 16 or 32 threads (tiled_partition(parent, n)).
class thread_group {
 public:
  thread_group(const thread_block&) : tile_size_(0) {}  // NOLINT: as CUDA's
  explicit thread_group(unsigned tile_size) : tile_size_(tile_size) {}
  unsigned size() const { return tile_size_ ? tile_size_ : thread_block::size(); }
  unsigned num_threads() const { return size(); }
  unsigned thread_rank() const {
    const unsigned rank = kerneleval_cpu::detail::LinearThreadIndex();
    return tile_size_ ? rank % tile_size_ : rank;
  }
  void sync() const {
    if (!tile_size_) return __syncthreads();
    __syncwarp(kerneleval_cpu::detail::TileMask(tile_size_));
  }

 private:
  unsigned tile_size_;  // 0: the whole block
};

inline thread_group tiled_partition(const thread_group&, unsigned tile_size) {
  if (tile_size == 0 || tile_size > 32 || (tile_size & (tile_size - 1)) != 0) {
    kerneleval_cpu::detail::Trap("tiled_partition: tiles of 1, 2, 4, 8, 16 or 32 threads");
  }
  return thread_group(tile_size);
}
inline thread_group tiled_partition(const thread_block& block, unsigned tile_size) {
  return tiled_partition(thread_group(block), tile_size);
}

// Free functions of every group.
template <class Group>
inline void sync(const Group& group) {
  group.sync();
}
template <class Group>
inline unsigned thread_rank(const Group& group) {
  return group.thread_rank();
}
template <class Group>
inline unsigned group_size(const Group& group) {
  return group.size();
}

template <unsigned Size, class Parent>
inline thread_block_tile<Size> tiled_partition(const Parent&) {
  return {};
}

// The lanes of a warp that called coalesced_threads() together (one
// __activemask()); ranks count its lanes in lane order.
class coalesced_group {
 public:
  explicit coalesced_group(unsigned lanes) : mask_(lanes) {}
  unsigned num_threads() const { return static_cast<unsigned>(__builtin_popcount(mask_)); }
  unsigned size() const { return num_threads(); }
  unsigned thread_rank() const {
    const unsigned lane = kerneleval_cpu::detail::LinearThreadIndex() & 31u;
    return static_cast<unsigned>(__builtin_popcount(mask_ & ((1u << lane) - 1u)));
  }
  static unsigned meta_group_rank() { return 0; }
  static unsigned meta_group_size() { return 1; }
  unsigned get_mask() const { return mask_; }
  void sync() const { __syncwarp(mask_); }
  template <class T>
  T shfl(T value, unsigned rank) const {
    return __shfl_sync(mask_, value, static_cast<int>(LaneOfRank(rank)));
  }
  // A rank past the group's ends gives the caller its own value, as CUDA's.
  template <class T>
  T shfl_down(T value, unsigned delta) const {
    const unsigned rank = thread_rank() + delta;
    const unsigned own = kerneleval_cpu::detail::LinearThreadIndex() & 31u;
    return __shfl_sync(mask_, value, static_cast<int>(rank < size() ? LaneOfRank(rank) : own));
  }
  template <class T>
  T shfl_up(T value, unsigned delta) const {
    const unsigned rank = thread_rank();
    const unsigned own = kerneleval_cpu::detail::LinearThreadIndex() & 31u;
    return __shfl_sync(mask_, value,
                       static_cast<int>(rank >= delta ? LaneOfRank(rank - delta) : own));
  }
  int any(int predicate) const { return __any_sync(mask_, predicate); }
  int all(int predicate) const { return __all_sync(mask_, predicate); }
  // The votes of the group's lanes, packed by rank.
  unsigned ballot(int predicate) const {
    const unsigned votes = __ballot_sync(mask_, predicate);
    unsigned packed = 0, rank = 0;
    for (unsigned lanes = mask_; lanes; lanes &= lanes - 1, ++rank) {
      if (votes & (lanes & -lanes)) packed |= 1u << rank;
    }
    return packed;
  }

 private:
  unsigned LaneOfRank(unsigned rank) const {
    unsigned lanes = mask_;
    for (unsigned r = 0; r < rank && lanes; ++r) lanes &= lanes - 1;
    return lanes ? static_cast<unsigned>(__builtin_ctz(lanes)) : 0u;
  }
  unsigned mask_;
};

// The lanes of `group` whose predicate (binary_partition) or label
// (labeled_partition) is the caller's; every lane of the group calls it.
namespace detail {
template <unsigned Size, class Parent>
inline unsigned GroupMask(const thread_block_tile<Size, Parent>& tile) {
  return tile.mask();
}
inline unsigned GroupMask(const coalesced_group& group) { return group.get_mask(); }
}  // namespace detail
template <class Group>
inline coalesced_group binary_partition(const Group& group, bool predicate) {
  const unsigned mask = detail::GroupMask(group);
  const unsigned votes = __ballot_sync(mask, predicate);
  return coalesced_group(predicate ? votes : mask & ~votes);
}
template <class Group, class Label>
inline coalesced_group labeled_partition(const Group& group, Label label) {
  static_assert(std::is_integral_v<Label>, "labels are integers");
  return coalesced_group(__match_any_sync(detail::GroupMask(group), label));
}

// Must be called by every lane that is to be in the group (its branch);
// always inlined, so that each call site is a call of __activemask.
__attribute__((always_inline)) inline coalesced_group coalesced_threads() {
  return coalesced_group(__activemask());
}

template <class T>
struct plus {
  T operator()(const T& a, const T& b) const { return a + b; }
};
template <class T>
struct less {
  T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <class T>
struct greater {
  T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <class T>
struct bit_and {
  T operator()(const T& a, const T& b) const { return a & b; }
};
template <class T>
struct bit_or {
  T operator()(const T& a, const T& b) const { return a | b; }
};
template <class T>
struct bit_xor {
  T operator()(const T& a, const T& b) const { return a ^ b; }
};

// Butterfly reduction: every lane of the tile gets the result.
template <unsigned Size, class Parent, class T, class Op>
inline T reduce(const thread_block_tile<Size, Parent>& tile, T value, Op op) {
  for (unsigned offset = Size / 2; offset > 0; offset /= 2) {
    value = op(value, tile.shfl_xor(value, offset));
  }
  return value;
}

// Hillis-Steele scans of a tile or a coalesced group, in rank order.
template <class Group, class T, class Op>
requires requires(const Group& group, T value) { group.shfl_up(value, 1u); }
inline T inclusive_scan(const Group& group, T value, Op op) {
  const unsigned rank = group.thread_rank(), n = group.size();
  for (unsigned offset = 1; offset < n; offset *= 2) {
    const T other = group.shfl_up(value, offset);
    if (rank >= offset) value = op(value, other);
  }
  return value;
}

template <class Group, class T, class Op>
requires requires(const Group& group, T value) { group.shfl_up(value, 1u); }
inline T exclusive_scan(const Group& group, T value, Op op) {
  const T inclusive = inclusive_scan(group, value, op);
  const T shifted = group.shfl_up(inclusive, 1);
  return group.thread_rank() == 0 ? T{} : shifted;
}

// Without an operator: a sum (cooperative_groups/details/scan.h).
template <class Group, class T>
requires requires(const Group& group, T value) { group.shfl_up(value, 1u); }
inline T inclusive_scan(const Group& group, T value) {
  return inclusive_scan(group, value, plus<T>());
}
template <class Group, class T>
requires requires(const Group& group, T value) { group.shfl_up(value, 1u); }
inline T exclusive_scan(const Group& group, T value) {
  return exclusive_scan(group, value, plus<T>());
}

// A coalesced group's, through its scan: every lane gets the result.
template <class T, class Op>
inline T reduce(const coalesced_group& group, T value, Op op) {
  return group.shfl(inclusive_scan(group, value, op), group.size() - 1);
}

// The calling thread alone.
inline thread_block_tile<1> this_thread() { return {}; }

// One thread of the group calls `fn` (CUDA elects the lowest active lane,
// the group's rank 0); _broadcast hands its result to every thread. No
// barrier, as in CUDA's cooperative_groups/details/invoke.h.
template <class Group, class Fn, class... Args>
inline void invoke_one(const Group& group, Fn&& fn, Args&&... args) {
  if (group.thread_rank() == 0) std::forward<Fn>(fn)(std::forward<Args>(args)...);
}
template <class Group, class Fn, class... Args>
requires requires(const Group& group, int value) { group.shfl(value, 0u); }
inline auto invoke_one_broadcast(const Group& group, Fn&& fn, Args&&... args) {
  using Result = std::remove_cvref_t<decltype(std::forward<Fn>(fn)(std::forward<Args>(args)...))>;
  static_assert(!std::is_void_v<Result>,
                "For invocables returning void invoke_one should be used instead");
  Result result{};
  if (group.thread_rank() == 0) result = std::forward<Fn>(fn)(std::forward<Args>(args)...);
  return group.shfl(result, 0u);
}

// Reductions and scans into a cuda::atomic or cuda::atomic_ref (or, for
// reduce_store_async, a plain pointer): one thread applies the group's
// result, as CUDA's cooperative_groups/details/{reduce,scan}.h do. The
// update an operator names: fetch_add for plus, fetch_min / fetch_max for
// less / greater, the bitwise fetches, a compare-exchange loop otherwise
// (sequentially consistent here: CUDA's are relaxed, which only allows
// more orders).
namespace detail {
template <class Atomic, class T, class Op>
inline T AtomicUpdate(Atomic& destination, T value, const Op& op) {
  if constexpr (std::is_same_v<Op, plus<T>>) {
    return destination.fetch_add(value);
  } else if constexpr (std::is_same_v<Op, less<T>>) {
    return destination.fetch_min(value);
  } else if constexpr (std::is_same_v<Op, greater<T>>) {
    return destination.fetch_max(value);
  } else if constexpr (std::is_same_v<Op, bit_and<T>>) {
    return destination.fetch_and(value);
  } else if constexpr (std::is_same_v<Op, bit_or<T>>) {
    return destination.fetch_or(value);
  } else if constexpr (std::is_same_v<Op, bit_xor<T>>) {
    return destination.fetch_xor(value);
  } else {
    T old = destination.load();
    while (!destination.compare_exchange_weak(old, op(old, value))) {
    }
    return old;
  }
}
template <class Destination, class T>
inline void Store(Destination& destination, const T& value) {
  if constexpr (std::is_pointer_v<std::remove_cvref_t<Destination>>) {
    *destination = value;
  } else {
    destination.store(value);
  }
}
}  // namespace detail

template <class Group, class Atomic, class T, class Op>
inline void reduce_update_async(const Group& group, Atomic& destination, T value, Op op) {
  const T result = reduce(group, value, op);
  if (group.thread_rank() == 0) detail::AtomicUpdate(destination, result, op);
}
template <class Group, class Destination, class T, class Op>
inline void reduce_store_async(const Group& group, Destination&& destination, T value, Op op) {
  const T result = reduce(group, value, op);
  if (group.thread_rank() == 0) detail::Store(destination, result);
}
// The group's scan, offset by the destination's value before the group's
// total was folded into it (by the last rank).
namespace detail {
template <bool kExclusive, class Group, class Atomic, class T, class Op>
inline T ScanUpdate(const Group& group, Atomic& destination, T value, Op op) {
  T scanned = inclusive_scan(group, value, op);
  T old{};
  if (group.thread_rank() == group.size() - 1) old = AtomicUpdate(destination, scanned, op);
  old = group.shfl(old, group.size() - 1);
  if constexpr (kExclusive) {
    const T shifted = group.shfl_up(scanned, 1u);
    scanned = group.thread_rank() == 0 ? T{} : shifted;
  }
  return op(old, scanned);
}
}  // namespace detail
// Without an operator: a sum, as CUDA's.
template <class Group, class Atomic, class T, class Op = plus<T>>
inline T inclusive_scan_update(const Group& group, Atomic& destination, T value, Op op = {}) {
  return detail::ScanUpdate<false>(group, destination, value, op);
}
template <class Group, class Atomic, class T, class Op = plus<T>>
inline T exclusive_scan_update(const Group& group, Atomic& destination, T value, Op op = {}) {
  return detail::ScanUpdate<true>(group, destination, value, op);
}

}  // namespace cooperative_groups

// ---- 11b. Tensor-core matrix operations (nvcuda::wmma). The toolkit's
// mma.h declares nothing for a host compiler. A fragment's layout across a
// warp's lanes is opaque in CUDA (only elementwise use of `x` is defined),
// so each lane's fragment here holds the whole tile, row-major: every lane
// loads, multiplies and stores all of it. Products accumulate in fp32 (in
// double for double, in 32-bit integers for 8-bit ones); tf32 inputs keep
// the 10 mantissa bits a tensor core reads. Each operation first meets its
// warp (__syncwarp), as the warp-wide instruction does on a GPU.
namespace nvcuda::wmma {
struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };
namespace precision {
struct tf32 {};
}  // namespace precision

namespace detail {
template <class T>
struct Storage {
  using type = T;
};
template <>
struct Storage<precision::tf32> {
  using type = float;
};
// Rows and columns of the tile a fragment of `Use` holds.
template <class Use, int M, int N, int K>
struct Tile;
template <int M, int N, int K>
struct Tile<matrix_a, M, N, K> {
  static constexpr int kRows = M, kCols = K;
};
template <int M, int N, int K>
struct Tile<matrix_b, M, N, K> {
  static constexpr int kRows = K, kCols = N;
};
template <int M, int N, int K>
struct Tile<accumulator, M, N, K> {
  static constexpr int kRows = M, kCols = N;
};
// A value as the multiplier reads it: fp32 for the 16- and 32-bit float
// types (tf32: its 10 mantissa bits), double, or a 64-bit integer.
inline float Operand(__half v) { return __half2float(v); }
inline float Operand(__nv_bfloat16 v) { return __bfloat162float(v); }
inline float Operand(float v) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(v) & 0xffffe000u);
}
inline double Operand(double v) { return v; }
inline long long Operand(signed char v) { return v; }
inline long long Operand(unsigned char v) { return v; }
template <class T>
inline T FromAccumulated(float v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half(v);
  } else {
    return static_cast<T>(v);
  }
}
template <class T>
inline T FromAccumulated(double v) {
  return static_cast<T>(v);
}
template <class T>
inline T FromAccumulated(long long v) {
  return static_cast<T>(static_cast<int32_t>(static_cast<uint32_t>(v)));
}
inline float Accumulated(__half v) { return __half2float(v); }
inline float Accumulated(float v) { return v; }
inline double Accumulated(double v) { return v; }
inline long long Accumulated(int v) { return v; }
inline void MeetWarp() { __syncwarp(0xffffffffu); }
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout = void>
class fragment {
 public:
  using element_type = typename detail::Storage<T>::type;
  static constexpr int kRows = detail::Tile<Use, M, N, K>::kRows;
  static constexpr int kCols = detail::Tile<Use, M, N, K>::kCols;
  static constexpr int num_elements = kRows * kCols;
  element_type x[num_elements];  // row-major: x[row * kCols + col]
};

template <class Use, int M, int N, int K, class T, class Layout>
inline void fill_fragment(fragment<Use, M, N, K, T, Layout>& f,
                          const typename fragment<Use, M, N, K, T, Layout>::element_type& v) {
  for (auto& e : f.x) e = v;
}

namespace detail {
// Where element (r, c) of a tile lies in memory with leading dimension ldm.
inline size_t Offset(int r, int c, unsigned ldm, bool row_major) {
  return row_major ? static_cast<size_t>(r) * ldm + c : static_cast<size_t>(c) * ldm + r;
}
template <class F, class P>
inline void Load(F& f, const P* p, unsigned ldm, bool row_major) {
  MeetWarp();
  for (int r = 0; r < F::kRows; ++r) {
    for (int c = 0; c < F::kCols; ++c) f.x[r * F::kCols + c] = p[Offset(r, c, ldm, row_major)];
  }
}
}  // namespace detail

template <class Use, int M, int N, int K, class T, class Layout, class P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, Layout>& f, const P* p, unsigned ldm) {
  static_assert(!std::is_same_v<Use, accumulator>, "an accumulator load names its layout");
  detail::Load(f, p, ldm, std::is_same_v<Layout, row_major>);
}
template <int M, int N, int K, class T, class P>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T>& f, const P* p, unsigned ldm,
                             layout_t layout) {
  detail::Load(f, p, ldm, layout == mem_row_major);
}
template <int M, int N, int K, class T, class P>
inline void store_matrix_sync(P* p, const fragment<accumulator, M, N, K, T>& f, unsigned ldm,
                              layout_t layout) {
  detail::MeetWarp();
  using F = fragment<accumulator, M, N, K, T>;
  for (int r = 0; r < F::kRows; ++r) {
    for (int c = 0; c < F::kCols; ++c) {
      p[detail::Offset(r, c, ldm, layout == mem_row_major)] = f.x[r * F::kCols + c];
    }
  }
}

// d = a b + c. The fragments lie on the lane's own stack: the products
// need no store points (unchecked, the interleaved build does not yield in
// them).
template <int M, int N, int K, class Ta, class La, class Tb, class Lb, class Tc>
KERNELEVAL_CPU_UNCHECKED inline void mma_sync(fragment<accumulator, M, N, K, Tc>& d,
                                              const fragment<matrix_a, M, N, K, Ta, La>& a,
                                              const fragment<matrix_b, M, N, K, Tb, Lb>& b,
                                              const fragment<accumulator, M, N, K, Tc>& c,
                                              bool = false) {
  detail::MeetWarp();
  using Product = decltype(detail::Operand(a.x[0]) * detail::Operand(b.x[0]));
  Product a_values[M * K], b_values[K * N], sums[M * N];
  for (int i = 0; i < M * K; ++i) a_values[i] = detail::Operand(a.x[i]);
  for (int i = 0; i < K * N; ++i) b_values[i] = detail::Operand(b.x[i]);
  for (int i = 0; i < M * N; ++i) sums[i] = static_cast<Product>(detail::Accumulated(c.x[i]));
  for (int m = 0; m < M; ++m) {
    for (int k = 0; k < K; ++k) {
      const Product left = a_values[m * K + k];
      for (int n = 0; n < N; ++n) sums[m * N + n] += left * b_values[k * N + n];
    }
  }
  for (int i = 0; i < M * N; ++i) d.x[i] = detail::FromAccumulated<Tc>(sums[i]);
}

// fp32 to tf32, rounding to nearest with ties away from zero (cvt.rna).
inline float __float_to_tf32(float v) {
  if (!std::isfinite(v)) return v;
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  return std::bit_cast<float>((bits + 0x1000u) & 0xffffe000u);
}
}  // namespace nvcuda::wmma
// ---- End of 11b.

// ---- 11c. Asynchronous copies (cuda_pipeline_primitives.h, cooperative
// groups' memcpy_async). A GPU makes the copy some time between the call and
// the wait that covers it; here it is made at that wait, by the thread that
// issued it, and the destination reads 0xff (NaN / -1) from the call until
// then. A kernel that reads the destination before its wait
// (`__pipeline_wait_prior(1)` right after committing the tile it reads next)
// races on a GPU and fails here; it passed when the copy was made at the call
// (sweep 4, w16).
// As in the toolkit (cooperative_groups/details/async.h), both APIs share
// one queue per thread: cooperative groups' memcpy_async issues the thread's
// share of the copy as pipeline copies and commits them (a batch, counted by
// __pipeline_wait_prior too), and its `wait` / `wait_prior<n>` are
// `__pipeline_wait_prior(0)` / `(n)` and the group's sync: a kernel copying
// with one API and waiting with the other is right (sweep 5: with two queues
// it read NaN). A group's copy is shared among its threads as the toolkit
// shares it (elements of the pointer's alignment, or for 1- and 2-byte
// types of the best alignment source and destination share, rank-strided;
// unaligned head and tail bytes copied at the call), so a thread reading only
// what its own wait covered reads what it would on a GPU.
namespace kerneleval_cpu::detail {
// Elements `first`, `first + step`, ... of `unit` bytes (1, 2, 4, 8 or 16)
// of a range of `bytes` at `destination`: copied from `source`, or (kFill)
// set to 0xff, in 4-byte words where the unit allows, else 2-byte words or
// bytes (loads and stores a store point can see).
template <bool kFill>
inline void WriteShare(void* destination, const void* source, size_t bytes, size_t unit,
                       size_t first, size_t step) {
  const size_t elements = bytes / unit;
  auto write = [&]<class Word>(Word) {
    const size_t words = unit / sizeof(Word);
    auto* to = static_cast<Word*>(destination);
    const auto* from = static_cast<const Word*>(source);
    for (size_t i = first; i < elements; i += step) {
      for (size_t w = 0; w < words; ++w) {
        to[words * i + w] = kFill ? static_cast<Word>(~Word{0}) : from[words * i + w];
      }
    }
  };
  if (unit % 4 == 0) {
    write(uint32_t{});
  } else if (unit == 2) {
    write(uint16_t{});
  } else {
    write(uint8_t{});
  }
}
inline void CopyShare(void* destination, const void* source, size_t bytes, size_t unit,
                      size_t first, size_t step) {
  WriteShare<false>(destination, source, bytes, unit, first, step);
}
inline void FillShare(void* destination, size_t bytes, size_t unit, size_t first, size_t step) {
  WriteShare<true>(destination, nullptr, bytes, unit, first, step);
}

// One thread's share of an asynchronous copy: CopyShare's arguments, then
// `zeros` zero bytes after `bytes` (a pipeline copy's zero fill), and the
// batch it belongs to, in a thread's list of copies not yet made.
struct AsyncCopy {
  void* destination;
  const void* source;
  size_t bytes, unit, first, step, zeros;
  uint64_t batch;
  AsyncCopy* next;
};
// A thread's copies not yet made, oldest first, and how many batches it has
// committed (the open batch is number `closed`).
struct AsyncQueue {
  AsyncCopy* head;
  AsyncCopy* tail;
  uint64_t closed;
};
// The running block's threads' queues (by linear index), for the block
// `block_serial` (tls_block_serial): a block starts with none. Plain C
// storage handled by unchecked code only: in an interleaved build a
// container's own (instrumented) code yields at its stores, and another
// thread of the block then found it half-built. (malloc and free are the
// device heap's macros here: the C library's are named in parentheses.)
struct BlockAsyncCopies {
  uint64_t block_serial;
  size_t threads;
  AsyncQueue* queues;
};
static thread_local BlockAsyncCopies tls_async_copies KERNELEVAL_CPU_TDATA(async_copies) = {
    0, 0, nullptr};

KERNELEVAL_CPU_UNCHECKED inline void FreeAsyncQueue(AsyncQueue& queue) {
  while (AsyncCopy* copy = queue.head) {
    queue.head = copy->next;
    (std::free)(copy);
  }
  queue = AsyncQueue{nullptr, nullptr, 0};
}

KERNELEVAL_CPU_UNCHECKED inline AsyncQueue& ThreadAsyncQueue() {
  BlockAsyncCopies& block = tls_async_copies;
  if (block.block_serial != tls_block_serial) {
    for (size_t t = 0; t < block.threads; ++t) FreeAsyncQueue(block.queues[t]);
    (std::free)(block.queues);
    block.block_serial = tls_block_serial;
    block.threads = size_t{blockDim.x} * blockDim.y * blockDim.z;
    block.queues = static_cast<AsyncQueue*>(std::calloc(block.threads, sizeof(AsyncQueue)));
    if (block.queues == nullptr) Trap("out of memory for asynchronous copies");
  }
  return block.queues[LinearThreadIndex()];
}

// Adds a copy to the calling thread's open batch.
KERNELEVAL_CPU_UNCHECKED inline void QueueAsyncCopy(const AsyncCopy& copy) {
  AsyncQueue& queue = ThreadAsyncQueue();
  auto* node = static_cast<AsyncCopy*>((std::malloc)(sizeof(AsyncCopy)));
  if (node == nullptr) Trap("out of memory for asynchronous copies");
  *node = copy;
  node->batch = queue.closed;
  node->next = nullptr;
  (queue.tail ? queue.tail->next : queue.head) = node;
  queue.tail = node;
}

// The calling thread's oldest copy of a batch before all but the last `keep`
// committed ones, taken off its queue (the caller frees it); nullptr when
// none.
KERNELEVAL_CPU_UNCHECKED inline AsyncCopy* TakeDueAsyncCopy(uint64_t keep) {
  AsyncQueue& queue = ThreadAsyncQueue();
  AsyncCopy* copy = queue.head;
  if (copy == nullptr || copy->batch + keep >= queue.closed) return nullptr;
  queue.head = copy->next;
  if (queue.head == nullptr) queue.tail = nullptr;
  return copy;
}

// Commits the thread's open batch (an empty one too: it counts for
// wait_prior).
KERNELEVAL_CPU_UNCHECKED inline void CommitAsyncBatch() { ++ThreadAsyncQueue().closed; }

// Issues a copy: its destination reads 0xff until a wait makes it.
inline void IssueAsyncCopy(const AsyncCopy& copy) {
  FillShare(copy.destination, copy.bytes, copy.unit, copy.first, copy.step);
  __builtin_memset(static_cast<unsigned char*>(copy.destination) + copy.bytes, 0xff, copy.zeros);
  QueueAsyncCopy(copy);
}

// Makes the calling thread's copies of every committed batch but the last
// `keep`.
inline void CompleteAsyncCopies(uint64_t keep) {
  while (AsyncCopy* copy = TakeDueAsyncCopy(keep)) {
    CopyShare(copy->destination, copy->source, copy->bytes, copy->unit, copy->first, copy->step);
    __builtin_memset(static_cast<unsigned char*>(copy->destination) + copy->bytes, 0, copy->zeros);
    (std::free)(copy);
  }
}

// The alignment the toolkit's memcpy_async assumes of an element type: its
// own, at most 16; 1 for void.
template <class T>
constexpr size_t CopyAlignmentHint() {
  if constexpr (std::is_void_v<T>) {
    return 1;
  } else {
    return alignof(T) < 16 ? alignof(T) : 16;
  }
}

// The calling thread's share of a group's copy of `bytes`, as the toolkit
// splits it (cooperative_groups/details/async.h, _memcpy_async_align_dispatch
// and copy_like): with a hint of 4, 8 or 16 bytes, the range's whole
// elements of that size, asynchronously (a tail short of one is not
// copied); with 1 or 2, the best alignment source and destination share
// (16 when equal modulo 16): 1 or 2 copies bytes or 2-byte words at the
// call, 4 to 16 copies the bytes before the source's next boundary and
// those after the last whole element at the call and the elements between
// asynchronously. Rank-strided in every part.
template <size_t Hint>
inline void GroupAsyncCopy(unsigned rank, unsigned size, void* destination, const void* source,
                           size_t bytes) {
  auto* to = static_cast<unsigned char*>(destination);
  const auto* from = static_cast<const unsigned char*>(source);
  if constexpr (Hint >= 4) {
    IssueAsyncCopy({to, from, bytes / Hint * Hint, Hint, rank, size, 0, 0, nullptr});
  } else {
    const uintptr_t differ =
        (reinterpret_cast<uintptr_t>(to) ^ reinterpret_cast<uintptr_t>(from)) & 15;
    size_t alignment = 16;
    for (size_t a = 8; a >= Hint; a >>= 1) {
      if ((a & differ) != 0) alignment = a;
    }
    if (bytes < alignment) alignment = Hint;
    if (alignment <= 2) {
      CopyShare(to, from, bytes, alignment, rank, size);
      return;
    }
    const size_t head = std::min<size_t>(
        bytes, (alignment - reinterpret_cast<uintptr_t>(from) % alignment) % alignment);
    CopyShare(to, from, head, 1, rank, size);
    const size_t middle = (bytes - head) / alignment * alignment;
    IssueAsyncCopy({to + head, from + head, middle, alignment, rank, size, 0, 0, nullptr});
    CopyShare(to + head + middle, from + head + middle, bytes - head - middle, 1, rank, size);
  }
}
}  // namespace kerneleval_cpu::detail

// `size_and_align` bytes (4, 8 or 16), of which the last `zfill` are zeros.
// Other sizes, or a zfill past the size, reach the toolkit's __trap(); an
// address not aligned to the size faults in cp.async ("misaligned
// address"). Both end the run here, naming the call's line (they passed
// before: sweep 4, a 12-byte tail copy and 16-byte copies of rows of odd
// length).
inline void __pipeline_memcpy_async(void* __restrict__ dst_shared,
                                    const void* __restrict__ src_global, size_t size_and_align,
                                    size_t zfill = 0, const char* file = __builtin_FILE(),
                                    unsigned line = __builtin_LINE()) {
  char message[512];
  if ((size_and_align != 4 && size_and_align != 8 && size_and_align != 16) ||
      zfill > size_and_align) {
    std::snprintf(message, sizeof(message),
                  "%s:%u: __pipeline_memcpy_async(dst, src, %zu, %zu): the size must be 4, 8 or "
                  "16 bytes and zfill at most the size (the toolkit's version traps on a GPU: "
                  "copy a tail with smaller copies or plain loads)",
                  file, line, size_and_align, zfill);
    kerneleval_cpu::detail::Trap(message);
  }
  const uintptr_t misaligned =
      (reinterpret_cast<uintptr_t>(dst_shared) | reinterpret_cast<uintptr_t>(src_global)) &
      (size_and_align - 1);
  if (misaligned != 0) {
    std::snprintf(message, sizeof(message),
                  "%s:%u: misaligned access: __pipeline_memcpy_async of %zu bytes from 0x%llx to "
                  "0x%llx, not both multiples of %zu (a GPU refuses it: \"misaligned address\"; "
                  "x86 does not)",
                  file, line, size_and_align,
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(src_global)),
                  static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(dst_shared)),
                  size_and_align);
    kerneleval_cpu::detail::Trap(message);
  }
  const size_t bytes = size_and_align - zfill;
  kerneleval_cpu::detail::IssueAsyncCopy({dst_shared, src_global, bytes,
                                          bytes % 4 == 0 ? size_t{4} : size_t{1}, 0, 1, zfill, 0,
                                          nullptr});
}
// Commits the thread's batch (an empty one too: it counts for wait_prior).
inline void __pipeline_commit() { kerneleval_cpu::detail::CommitAsyncBatch(); }
inline void __pipeline_wait_prior(size_t prior) {
  kerneleval_cpu::detail::CompleteAsyncCopies(prior);
}

namespace cooperative_groups {
// `count` bytes (a size_t, or anything that converts to one).
template <class Group, class T, class Size>
inline void memcpy_async(const Group& group, T* __restrict__ dst, const T* __restrict__ src,
                         const Size& count) {
  kerneleval_cpu::detail::GroupAsyncCopy<kerneleval_cpu::detail::CopyAlignmentHint<T>()>(
      group.thread_rank(), group.size(), dst, src, static_cast<size_t>(count));
  __pipeline_commit();
}
// min(dst_count, src_count) elements.
template <class Group, class T, class DstCount, class SrcCount>
inline void memcpy_async(const Group& group, T* __restrict__ dst, const DstCount& dst_count,
                         const T* __restrict__ src, const SrcCount& src_count) {
  const size_t elements = std::min(static_cast<size_t>(dst_count), static_cast<size_t>(src_count));
  kerneleval_cpu::detail::GroupAsyncCopy<kerneleval_cpu::detail::CopyAlignmentHint<T>()>(
      group.thread_rank(), group.size(), dst, src, elements * sizeof(T));
  __pipeline_commit();
}
template <unsigned Stage, class Group>
inline void wait_prior(const Group& group) {
  __pipeline_wait_prior(Stage);
  group.sync();
}
template <class Group>
inline void wait(const Group& group) {
  wait_prior<0>(group);
}
}  // namespace cooperative_groups
// ---- End of 11c.

// ---- 12. Launchers: the generated code after the submission instantiates
// Launch<&kernel> once per kernel named in the plan.
namespace kerneleval_cpu::detail {

template <class P>
inline const char* ConvertArg(const kerneleval_cpu_arg& arg, P* out) {
  if (arg.kind == KERNELEVAL_CPU_ARG_RAW) {
    if constexpr (std::is_trivially_copyable_v<P>) {
      __builtin_memcpy(static_cast<void*>(out), arg.pointer, sizeof(P));
      return nullptr;
    } else {
      return "a kernel parameter of this type is not trivially copyable";
    }
  }
  if constexpr (std::is_pointer_v<P>) {
    if (arg.kind != KERNELEVAL_CPU_ARG_POINTER)
      return "a buffer was passed for a non-pointer parameter";
    *out = reinterpret_cast<P>(arg.pointer);
    return nullptr;
  } else if constexpr (std::is_arithmetic_v<P> || std::is_enum_v<P>) {
    if (arg.kind == KERNELEVAL_CPU_ARG_INTEGER) {
      *out = static_cast<P>(arg.integer);
    } else if (arg.kind == KERNELEVAL_CPU_ARG_REAL) {
      if constexpr (std::is_floating_point_v<P>) {
        *out = static_cast<P>(arg.real);
      } else {
        return "a real number was passed for an integer parameter";
      }
    } else {
      return "a buffer was passed for a scalar parameter";
    }
    return nullptr;
  } else if constexpr (std::is_same_v<P, __half> || std::is_same_v<P, __nv_bfloat16>) {
    if (arg.kind == KERNELEVAL_CPU_ARG_POINTER) return "a buffer was passed for a scalar parameter";
    const float value = arg.kind == KERNELEVAL_CPU_ARG_REAL ? static_cast<float>(arg.real)
                                                            : static_cast<float>(arg.integer);
    *out = P(value);
    return nullptr;
  } else {
    return "a kernel parameter of this type (struct or class by value) is not supported by the "
           "CPU backend";
  }
}

template <auto Kernel, class Tuple>
void RunThreads(void* closure, const kerneleval_cpu_block_info* info, uint32_t first) {
  const Tuple& args = *static_cast<const Tuple*>(closure);
  SetBlock(info);
#if defined(__SANITIZE_THREAD__)
  SetFiberStackTop(reinterpret_cast<uintptr_t>(__builtin_frame_address(0)));
#endif
  const uint32_t bx = info->block_dim.x;
  const uint32_t bxy = bx * info->block_dim.y;
  for (uint32_t t = first; t != UINT32_MAX; t = rt().next_thread()) {
    SetThreadIdx(uint3{t % bx, (t % bxy) / bx, t / bxy});
    kerneleval_cpu_virtual_clock = 0;
    // Parameters are passed by value: a kernel that changes its copy changes
    // nothing for the other threads.
    std::apply([](auto... a) { Kernel(a...); }, args);
  }
}

template <auto Kernel, class... P>
const char* LaunchWithParams(void (*)(P...), const kerneleval_cpu_launch* launch) {
  using Tuple = std::tuple<std::remove_cv_t<P>...>;
  if (launch->arg_count != sizeof...(P)) {
    return "the plan passes a different number of arguments than the kernel declares";
  }
  Tuple args{};
  const char* error = nullptr;
  [&]<size_t... I>(std::index_sequence<I...>) {
    ((error = error ? error : ConvertArg(launch->args[I], &std::get<I>(args))), ...);
  }
  (std::index_sequence_for<P...>{});
  if (error) return error;
  return rt().run_grid(launch, &RunThreads<Kernel, Tuple>, &args);
}

template <auto Kernel>
const char* Launch(const kerneleval_cpu_launch* launch) {
  return LaunchWithParams<Kernel>(Kernel, launch);
}

template <class... P>
void DescribeParams(void (*)(P...), kerneleval_cpu_kernel_info* info) {
  info->param_count = sizeof...(P);
  if constexpr (sizeof...(P) <= KERNELEVAL_CPU_MAX_PARAMS) {
    uint32_t i = 0;
    ((info->param_sizes[i++] = static_cast<uint32_t>(sizeof(std::remove_cv_t<P>))), ...);
  }
}

template <auto Kernel>
void Describe(kerneleval_cpu_kernel_info* info, const char* name) {
  info->name = name;
  DescribeParams(Kernel, info);
}

}  // namespace kerneleval_cpu::detail

namespace kerneleval_cpu::detail {
// Called once by the runner after dlopen (the generated code exports it).
inline uint32_t InitRuntime(const kerneleval_cpu_runtime* runtime) {
  if (!runtime || runtime->abi_version != KERNELEVAL_CPU_ABI_VERSION ||
      runtime->size < sizeof(kerneleval_cpu_runtime)) {
    return 0;
  }
  kerneleval_cpu::detail::runtime = runtime;
  thread_state_offset = runtime->thread_state_offset;
  return KERNELEVAL_CPU_ABI_VERSION;
}
}  // namespace kerneleval_cpu::detail

#endif  // KERNELEVAL_CPU_PRELUDE_H_
