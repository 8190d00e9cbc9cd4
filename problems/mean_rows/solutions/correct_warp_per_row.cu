// expect: pass
// One warp per row (8 rows per block of 256 threads), shuffle reduction.
// @launch mean_warp<<<ceil_div(ROWS, 8), 256>>>(x, y, ROWS, COLS)
__global__ void mean_warp(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += in[c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if (lane == 0) y[row] = s / cols;
}
