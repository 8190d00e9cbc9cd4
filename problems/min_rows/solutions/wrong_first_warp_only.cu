// expect: correctness
// Reduces across the first warp only: the partial minima of warps 1..7 are
// never merged, so rows longer than 32 elements often report a larger value.
// @launch min_first_warp<<<ROWS, 256>>>(x, y, ROWS, COLS)
__global__ void min_first_warp(const float* x, float* y, int rows, int cols) {
  const float* in = x + (long long)blockIdx.x * cols;
  float m = 3.402823466e+38f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fminf(m, in[c]);
  for (int o = 16; o > 0; o >>= 1) m = fminf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x == 0) y[blockIdx.x] = m;
}
