// expect: pass
// One warp per row; rsqrtf of the clamped sum of squares.
// @launch l2_warp<<<ceil_div(ROWS, 8), 256>>>(x, y, ROWS, COLS)
__global__ void l2_warp(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float* out = y + (long long)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s = fmaf(in[c], in[c], s);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  float inv = rsqrtf(fmaxf(s, 1e-24f));
  for (int c = lane; c < cols; c += 32) out[c] = in[c] * inv;
}
