// expect: pass
// One warp per row, starting from the row's first element (no identity needed).
// @launch max_warp<<<ceil_div(ROWS, 4), 128>>>(x, y, ROWS, COLS)
__global__ void max_warp(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * 4 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float m = in[0];
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, in[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (lane == 0) y[row] = m;
}
