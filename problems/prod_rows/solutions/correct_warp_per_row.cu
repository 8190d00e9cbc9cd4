// expect: pass
// One warp per row, four rows per block.
// @launch prod_warp<<<ceil_div(ROWS, 4), 128>>>(x, y, ROWS, COLS)
__global__ void prod_warp(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * 4 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float p = 1.0f;
  for (int c = lane; c < cols; c += 32) p *= in[c];
  for (int o = 16; o > 0; o >>= 1) p *= __shfl_xor_sync(0xffffffffu, p, o);
  if (lane == 0) y[row] = p;
}
