// The worker's own kernels, compiled to PTX by nvcc at build time and embedded
// in kerneleval_cuda (aux_kernels.h); the driver JITs them once per worker.
// extern "C": their symbols are their names. compute_75 PTX: the oldest
// architecture CUDA 13 supports, JIT-compiled for whatever device runs it.
#include "evaluator/cuda/keyed_mix.h"
#include "evaluator/data/element_generator.h"
#include "evaluator/data/leftovers.h"
#include "evaluator/data/shared_fill.h"

// Holds the stream so that the launches queued behind it start back to back
// once the host releases it: the first timed launch then carries no host
// launch latency (nvbench's blocking kernel). One thread spins until both
//   - at least `min_ns` have passed (so the clock measurement below spans
//     enough time to be accurate), and
//   - the host wrote a non-zero value to `*release` (mapped host memory),
// or until `timeout_ns` (a host that died, or a queue that filled up while
// the host was blocked in cuLaunchKernel, must not hang the GPU).
// Writes to `out` (mapped host memory): [0] SM cycles spent (clock64),
// [1] nanoseconds spent (%globaltimer), [2] 1 if it timed out, [3] the seal
// of those three under `key0`, `key1` (keyed_mix.h: a program timed after
// the hold could overwrite the report). cycles / ns is this SM's clock over
// the hold, in GHz.
extern "C" __global__ void ke_hold_stream(const volatile int* release, unsigned long long min_ns,
                                          unsigned long long timeout_ns,
                                          volatile unsigned long long* out, unsigned long long key0,
                                          unsigned long long key1) {
  unsigned long long t0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  const long long c0 = clock64();
  unsigned long long t = t0;
  int timed_out = 0;
  for (;;) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t - t0 >= min_ns && *release != 0) break;
    if (t - t0 >= timeout_ns) {
      timed_out = 1;
      break;
    }
  }
  // Both ends read back to back, like the start: the loop's last read of
  // `release` (mapped host memory, a ~1-2 us PCIe round trip) must not fall
  // in the cycles but not in the nanoseconds.
  unsigned long long t1;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
  const long long c1 = clock64();
  const unsigned long long cycles = static_cast<unsigned long long>(c1 - c0);
  out[0] = cycles;
  out[1] = t1 - t0;
  out[2] = timed_out;
  out[3] = kerneleval::cuda::HoldReportSeal(cycles, t1 - t0, timed_out, key0, key1);
  __threadfence_system();
}

// Writes a repeating 8-byte pattern (little-endian: byte i of the buffer is
// byte i % 8 of `pattern`) over `bytes` bytes at `dst` (8-byte aligned).
// Poisons outputs and scratch, and fills guard regions.
extern "C" __global__ void ke_fill_pattern(unsigned long long* dst, unsigned long long bytes,
                                           unsigned long long pattern) {
  const unsigned long long words = bytes / 8;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < words; i += stride) {
    dst[i] = pattern;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned char* tail = reinterpret_cast<unsigned char*>(dst + words);
    for (unsigned long long b = 0; b < bytes % 8; ++b) {
      tail[b] = static_cast<unsigned char>(pattern >> (8 * b));
    }
  }
}

// Writes the leftovers fill (data/leftovers.h) over `elements` i32
// (`element_bytes` 4) or i64 (8) elements at `dst`: per element, drawn from
// `draw` and its index, the poison or a value in [0, 65536). What every wide
// integer output and scratch buffer starts as before each run, correctness
// case or timed: a uniform poison let a histogram take any bin in the
// poison's range as never written and skip its clearing launch (sweep 41,
// c07). The same bytes as data::FillLeftovers on the host.
extern "C" __global__ void ke_fill_leftovers(void* dst, unsigned long long elements,
                                             unsigned long long element_bytes,
                                             unsigned long long draw) {
  const bool wide = element_bytes == 8;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < elements; i += stride) {
    const unsigned long long bits = kerneleval::data::LeftoverElementBits(draw, i, wide);
    if (wide) {
      static_cast<unsigned long long*>(dst)[i] = bits;
    } else {
      static_cast<unsigned*>(dst)[i] = static_cast<unsigned>(bits);
    }
  }
}

// Stashes `words` 8-byte words of an output at `src` into `dst`, each XORed
// with its pad under `key0`, `key1` (keyed_mix.h: StashPad). Run right after
// a program's timed sample, before its outputs are poisoned: the worker reads
// the stash back at the end and removes the pads; a program timed later in
// the round can copy neither the outputs nor the stash. `words` covers the
// payload rounded up to 8 bytes (payloads are padded to 256 bytes). Also run
// on a program's image of its device globals as loaded: in place (src ==
// dst) to put the pads on, and from the image into its staging buffer to
// take them off before each run: hence no __restrict__.
extern "C" __global__ void ke_stash_xor(const unsigned long long* src, unsigned long long* dst,
                                        unsigned long long words, unsigned long long key0,
                                        unsigned long long key1) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < words; i += stride) {
    dst[i] = src[i] ^ kerneleval::cuda::StashPad(i, key0, key1);
  }
}

// Fills `n16` 16-byte words of the block's dynamic shared memory with 0xff
// (a float reads NaN, an integer -1: a kernel reading shared memory it never
// wrote gets a wrong answer, where zeros made a reduction over unwritten
// slots right; sweep 4, 2026-12-05). Shared
// memory is not cleared between kernels of one context: a block of the next
// program would find what the last block on its SM left there (a reduction's
// partial sums, a tile of a result). The worker launches this after every run
// of a program with the opt-in maximum of dynamic shared memory, the largest
// carveout and one block per SM, as a cooperative launch: every block is
// resident at once, and each fills an SM, so every SM runs exactly one.
// The words are read back to `sink` if `n16` equals `never`, which the host
// passes as ~0 (so they never are) and the compiler cannot know: stores a
// kernel never reads could legally be dropped as dead.
// What it leaves is the run's fill drawn from `seed` (data/shared_fill.h:
// NaN in every float type, a drawn int), the same on every SM; a fixed 0xff
// let a histogram take its private bins' -1 as known (sweep 38, s38d).
extern "C" __global__ void ke_clear_shared(unsigned long long n16, unsigned long long* sink,
                                           unsigned long long never, unsigned long long seed) {
  extern __shared__ uint4 shared_words[];
  for (unsigned long long i = threadIdx.x; i < n16; i += blockDim.x) {
    const unsigned long long low = kerneleval::data::SharedFillWord(seed, 2 * i);
    const unsigned long long high = kerneleval::data::SharedFillWord(seed, 2 * i + 1);
    shared_words[i] = make_uint4(static_cast<unsigned>(low), static_cast<unsigned>(low >> 32),
                                 static_cast<unsigned>(high), static_cast<unsigned>(high >> 32));
  }
  if (n16 == never) {  // uniform across the block: the barrier is safe
    __syncthreads();
    *sink = shared_words[threadIdx.x % n16].x;
  }
}

// Device-to-device copy, 16 bytes per thread per step (bandwidth calibration:
// bytes moved = 2 * 16 * n16, read plus written).
extern "C" __global__ void ke_copy16(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                     unsigned long long n16) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < n16; i += stride) {
    dst[i] = src[i];
  }
}

// Reads `n16` 16-byte words at `src` (the L2 flush buffer, right after the
// memset that flushes): the memset leaves L2 full of dirty lines, whose
// write-back the timed plan's first misses would otherwise pay (up to an L2's
// worth at DRAM bandwidth); after this pass L2 holds clean lines only. The
// XOR of what was read goes to `sink` only if it equals `never`, which the
// host passes above 2^32 (so it never does) and the compiler cannot know: the
// loads cannot be optimised away. (A constant compared under `n16 == 1` left
// a compiler free to drop the loop for every other size.)
extern "C" __global__ void ke_read_flush(const uint4* __restrict__ src, unsigned long long n16,
                                         unsigned long long* sink, unsigned long long never) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  unsigned int acc = 0;
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < n16; i += stride) {
    const uint4 v = src[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == never) *sink = acc;
}

// FP32 FMA throughput (calibration): 8 independent chains per thread, each
// `iterations` FMAs: flops = 2 * 8 * iterations * threads. The sum goes to
// `out` so the compiler keeps every chain.
extern "C" __global__ void ke_fma_throughput(float* out, int iterations, float seed) {
  float a0 = seed + threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3;
  float a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  const float m = 0.999999f, c = 1e-7f;
#pragma unroll 4
  for (int i = 0; i < iterations; ++i) {
    a0 = fmaf(a0, m, c);
    a1 = fmaf(a1, m, c);
    a2 = fmaf(a2, m, c);
    a3 = fmaf(a3, m, c);
    a4 = fmaf(a4, m, c);
    a5 = fmaf(a5, m, c);
    a6 = fmaf(a6, m, c);
    a7 = fmaf(a7, m, c);
  }
  const float sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
  if (sum == 1234.5f) out[blockIdx.x * blockDim.x + threadIdx.x] = sum;  // practically never
}

// Writes `elements` generated elements at `out`: element i is what
// data::GenerateInput gives for (sampler, case_seed, name_hash) at i
// (element_generator.h, the host generator's own code). Every timed round
// runs on inputs generated afresh by this kernel (data::TimedInputSeed), and
// the worker generates a round's inputs again into a buffer of its own to
// check that a program left its inputs as they were.
extern "C" __global__ void ke_generate_input(void* out, unsigned long long elements,
                                             unsigned long long case_seed,
                                             unsigned long long name_hash,
                                             kerneleval::data::ElementSampler sampler) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i =
           blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
       i < elements; i += stride) {
    kerneleval::data::GenerateElement(sampler, case_seed, name_hash, i, out);
  }
}
