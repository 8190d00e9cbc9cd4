// splitmix64 (Steele, Lea and Flood's SplittableRandom; Vigna's constants):
// the one mixing function of the project's draws and keys, on the host and,
// compiled by nvcc, in the CUDA worker's aux kernels.
#pragma once

#include <cstdint>

#include "evaluator/data/host_device.h"

namespace kerneleval::data {

// splitmix64's golden-ratio increment: the generator's state advances by it.
inline constexpr uint64_t kSplitMix64Increment = 0x9e3779b97f4a7c15ull;

// splitmix64's finaliser: a bijection of 64-bit words in which every output
// bit depends on every input bit.
KERNELEVAL_HOST_DEVICE inline uint64_t SplitMix64Finalizer(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The generator's next value: advances `state`, then mixes it.
KERNELEVAL_HOST_DEVICE inline uint64_t SplitMix64Next(uint64_t& state) {
  state += kSplitMix64Increment;
  return SplitMix64Finalizer(state);
}

}  // namespace kerneleval::data
