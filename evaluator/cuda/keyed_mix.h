// Keyed mixing shared by the worker's kernels (aux_kernels.cu, compiled by
// nvcc) and the worker itself (and the test driver), so that both sides
// compute the same functions. Every program timed in one request shares the
// worker's CUDA context and can address its memory; what a program must not
// read or forge is therefore keyed with 64-bit values the worker draws from
// the OS and passes only as kernel arguments, which no other kernel can read.
// Not cryptography: splitmix64's finaliser, with the keys entering at both
// ends, so that recovering them from what a program can see means a search
// over 2^64, not an inversion.
#pragma once

#include "evaluator/data/host_device.h"
#include "evaluator/data/splitmix64.h"

namespace kerneleval::cuda {

// splitmix64's finaliser (data/splitmix64.h): a bijection in which every
// output bit depends on every input bit.
KERNELEVAL_HOST_DEVICE inline unsigned long long KeyedMix(unsigned long long z) {
  return data::SplitMix64Finalizer(z);
}

// The seal on the stream hold's report (ke_hold_stream): SM cycles,
// nanoseconds, timed out. The report lies in mapped host memory, and the
// program timed right after the hold runs before the worker reads it: one
// that overwrote it could make its slow samples look throttled or late, and
// so dropped. The worker ignores a report whose seal does not match.
KERNELEVAL_HOST_DEVICE inline unsigned long long HoldReportSeal(unsigned long long cycles,
                                                                unsigned long long ns,
                                                                unsigned long long timed_out,
                                                                unsigned long long key0,
                                                                unsigned long long key1) {
  unsigned long long x = KeyedMix(key0 ^ cycles);
  x = KeyedMix(x ^ ns ^ key1);
  x = KeyedMix(x + timed_out);
  return KeyedMix(x ^ key0) ^ key1;
}

// The pad XORed over 8-byte word `word` of a stashed output (ke_stash_xor):
// while timing, each program's outputs are stashed under fresh keys right
// after its sample and then poisoned, so a program timed later in the round
// finds neither the result nor a copy it could decode. Knowing some words of
// the output (computed honestly) gives their pads, not the keys.
KERNELEVAL_HOST_DEVICE inline unsigned long long StashPad(unsigned long long word,
                                                          unsigned long long key0,
                                                          unsigned long long key1) {
  return KeyedMix(KeyedMix(KeyedMix(word ^ key0) + key1) ^ key0);
}

}  // namespace kerneleval::cuda
