// What a block's shared memory starts as, on both backends: a pattern drawn
// per run (the CPU backend's runtime fills every block's static and dynamic
// shared memory with it; the CUDA worker's ke_clear_shared leaves every SM's
// with it after each run). Every 16-bit half is 0x7ff0 with a drawn sign and
// low 4 bits: a NaN in fp16 and in bf16, and so in float and double (their
// exponents lie in the high half's 0x7ff0), so that a float a kernel reads
// before writing is NaN; an int is a drawn value (never 0). A fixed 0xff
// fill (-1 in every int) let a histogram take its bins' initial value as
// known and skip clearing them (sweep 38, s38d).
#pragma once

#include <cstdint>

#include "evaluator/data/host_device.h"
#include "evaluator/data/splitmix64.h"

namespace kerneleval::data {

// The fill's 64-bit word `index` (bytes 8 * index onwards) for `seed`:
// splitmix64 of the pair, masked.
KERNELEVAL_HOST_DEVICE inline uint64_t SharedFillWord(uint64_t seed, uint64_t index) {
  const uint64_t z = SplitMix64Finalizer(seed + kSplitMix64Increment * (index + 1));
  return (z & 0x800f800f800f800full) | 0x7ff07ff07ff07ff0ull;
}

// Whether a 32-bit word could be part of any seed's fill.
KERNELEVAL_HOST_DEVICE inline bool IsSharedFillWord32(uint32_t word) {
  return (word & 0x7ff07ff0u) == 0x7ff07ff0u;
}

}  // namespace kerneleval::data
