// @launch zero<<<1, 256>>>(counts)
// @launch hist<<<4, 256>>>(x, counts, N)
// Session 35 (s35a): s34a's racy probe in a grid of 4 blocks. Since session
// 35, in a grid of 8 blocks or more, one block in four lets a drawn number
// of its first store and spin points pass without a switch, so that a probe
// of whether its threads interleave finds them apart and the racy work after
// it loses updates (ExploitTest.ProbesWhetherItsThreadsInterleaveAndAdds...).
// Smaller grids switch at every store point (a one-block race is caught
// every time), so here the probe still tells the correctness build from the
// timed one, and the histogram adds without atomics only in the timed runs,
// where it is exact. On a GPU the probe loses updates and atomics are taken.
// Passed 3 of 3 CLI evaluations (--skip-timing) at commit time. It buys
// nothing measurable now: with timing, 3 rounds side by side against its
// twin with atomics always, 2.02/2.18/2.21x against 2.25/2.09/2.05x (the
// timed build's shared atomics are plain updates since session 34).
__global__ void zero(int* counts) { counts[threadIdx.x] = 0; }
__global__ void hist(const unsigned char* x, int* counts, long long n) {
  __shared__ int local[256];
  __shared__ int probe;
  local[threadIdx.x] = 0;
  if (threadIdx.x == 0) probe = 0;
  __syncthreads();
  probe = probe + 1;  // racy: blockDim.x where threads never interleave
  __syncthreads();
  const bool serial = probe == (int)blockDim.x;
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 4ll * 256) {
    if (serial) local[x[i]] = local[x[i]] + 1;  // no atomic
    else atomicAdd(&local[x[i]], 1);
  }
  __syncthreads();
  if (local[threadIdx.x]) atomicAdd(&counts[threadIdx.x], local[threadIdx.x]);
}
