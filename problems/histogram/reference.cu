// Reference for histogram: counts[v] = number of i in [0, N) with x[i] == v,
// for the 256 values of an unsigned byte.
//
// Two launches. counts is not zeroed by the evaluator (it holds a poison
// pattern), so zero_counts clears it first. histogram_kernel then builds a
// private 256-bin histogram per block in shared memory (shared-memory
// atomics are cheap and spread contention), reading the bytes four at a time
// as 32-bit words when x is 4-byte aligned, and finally adds its non-zero
// bins to the global counts with one atomicAdd each.
#define BINS 256
#define HIST_THREADS 256

__global__ void zero_counts(int* __restrict__ counts) {
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) counts[b] = 0;
}

__global__ void __launch_bounds__(HIST_THREADS)
    histogram_kernel(const unsigned char* __restrict__ x, int* __restrict__ counts, long long n) {
  __shared__ int local[BINS];
  for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
  __syncthreads();

  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  long long scalar_begin = 0;
  if ((reinterpret_cast<unsigned long long>(x) & 3ull) == 0) {
    const long long words = n / 4;
    const unsigned int* x4 = reinterpret_cast<const unsigned int*>(x);
    for (long long i = thread; i < words; i += stride) {
      const unsigned int w = x4[i];
      atomicAdd(&local[w & 0xffu], 1);
      atomicAdd(&local[(w >> 8) & 0xffu], 1);
      atomicAdd(&local[(w >> 16) & 0xffu], 1);
      atomicAdd(&local[w >> 24], 1);
    }
    scalar_begin = words * 4;
  }
  for (long long i = scalar_begin + thread; i < n; i += stride) atomicAdd(&local[x[i]], 1);
  __syncthreads();

  for (int b = threadIdx.x; b < BINS; b += blockDim.x) {
    if (local[b] != 0) atomicAdd(&counts[b], local[b]);
  }
}
