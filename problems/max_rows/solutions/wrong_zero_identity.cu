// expect: correctness
// Starts the running maximum at 0.0f instead of the lowest float: a row whose
// elements are all negative reports 0 (the short rows of the "narrow" shape
// are often all negative).
// @launch max_zero<<<ROWS, 128>>>(x, y, ROWS, COLS)
__global__ void max_zero(const float* x, float* y, int rows, int cols) {
  __shared__ float partial[4];
  const float* in = x + (long long)blockIdx.x * cols;
  float m = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    y[blockIdx.x] = fmaxf(fmaxf(partial[0], partial[1]), fmaxf(partial[2], partial[3]));
  }
}
