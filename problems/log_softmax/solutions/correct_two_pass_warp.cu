// expect: pass
// One warp per row: a max pass, a sum-of-exp pass, then the output.
// @launch lsm_warp<<<ceil_div(ROWS, 4), 128>>>(x, y, ROWS, COLS)
__global__ void lsm_warp(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * 4 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float* out = y + (long long)row * cols;
  float m = in[0];
  for (int c = lane; c < cols; c += 32) m = fmaxf(m, in[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += expf(in[c] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  float lse = m + logf(s);
  for (int c = lane; c < cols; c += 32) out[c] = in[c] - lse;
}
