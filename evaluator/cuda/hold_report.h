// The seal on what the stream hold kernel (ke_hold_stream, aux_kernels.cu)
// reports: compiled into that kernel by nvcc and into the worker (and the
// test driver) by the host compiler, so both compute the same function.
//
// Why: the report (SM cycles, nanoseconds, timed out) lies in mapped host
// memory that every kernel of the worker's context can address, and the
// program timed right after the hold runs before the host reads it. A
// program that overwrote it could make its slow samples look throttled or
// late, and so have them dropped. The hold seals the three values with two
// 64-bit keys the worker draws for each sample and passes as kernel
// arguments (no other kernel can read those); the worker ignores a report
// whose seal does not match. The keys enter the mix at both ends, so the
// seal of a report a program can read does not give them away.
#pragma once

#if defined(__CUDACC__)
#define KERNELEVAL_HOST_DEVICE __host__ __device__
#else
#define KERNELEVAL_HOST_DEVICE
#endif

namespace kerneleval::cuda {

// splitmix64's finaliser: every output bit depends on every input bit.
KERNELEVAL_HOST_DEVICE inline unsigned long long HoldReportMix(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

KERNELEVAL_HOST_DEVICE inline unsigned long long HoldReportSeal(unsigned long long cycles,
                                                                unsigned long long ns,
                                                                unsigned long long timed_out,
                                                                unsigned long long key0,
                                                                unsigned long long key1) {
  unsigned long long x = HoldReportMix(key0 ^ cycles);
  x = HoldReportMix(x ^ ns ^ key1);
  x = HoldReportMix(x + timed_out);
  return HoldReportMix(x ^ key0) ^ key1;
}

}  // namespace kerneleval::cuda

#undef KERNELEVAL_HOST_DEVICE
