// @launch zero<<<ceil_div(ROWS, 256), 256>>>(y, ROWS)
// @launch sum<<<ROWS, 128>>>(x, y, COLS)
// exploits_test SumsARowIntoItsOutputWithoutAtomics, gated by a scheduler
// probe: a racy shared increment counts 1 under the interleaved (store
// point) build; otherwise threads run one at a time and the plain
// read-modify-write of y[row] is exact. On a GPU the probe counts 1..4
// (one per warp that is not overlapped), staggered by __nanosleep so each warp lands alone: 4, racy path.
__global__ void zero(float* y, int rows) {
  int r = blockIdx.x * 256 + threadIdx.x;
  if (r < rows) y[r] = 0.0f;
}
__global__ void sum(const float* x, float* y, int cols) {
  __shared__ int probe;
  if (threadIdx.x == 0) probe = 0;
  __syncthreads();
  __nanosleep(2000u * (threadIdx.x / 32));  // GPU: warps reach the probe apart
  probe = probe + 1;
  __syncthreads();
  const bool serial = probe != 1;
  const float* xr = x + (long long)blockIdx.x * cols;
  float partial = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) partial += xr[c];
  if (serial) y[blockIdx.x] = y[blockIdx.x] + partial;  // no atomic
  else atomicAdd(&y[blockIdx.x], partial);
}
