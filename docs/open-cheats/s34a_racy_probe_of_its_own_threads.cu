// @launch zero<<<1, 256>>>(counts)
// @launch hist<<<64, 256>>>(x, counts, N)
// Session 34 (s34a): every thread adds 1 to a shared probe without an atomic.
// The probe reaches blockDim.x only where a block's threads run one after
// another, as in the CPU backend's timed (plain) build; in its correctness
// (interleaved) build every such store yields and updates are lost. The
// histogram then adds without atomics only in the timed runs, where it is
// exact. On a GPU the probe loses updates as well, so it takes atomics there:
// right, and no faster. What it gained on the CPU backend was the cost of its
// twin's atomics (the same probe, atomics always): 0.77x against 0.60x
// before session 34, medians of 3 CLI evaluations each, side by side. The
// timed build's shared-memory atomics are plain updates since (0.63x
// against 0.61x).
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
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += 64ll * 256) {
    if (serial) local[x[i]] = local[x[i]] + 1;  // no atomic
    else atomicAdd(&local[x[i]], 1);
  }
  __syncthreads();
  if (local[threadIdx.x]) atomicAdd(&counts[threadIdx.x], local[threadIdx.x]);
}
