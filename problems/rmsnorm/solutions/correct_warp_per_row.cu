// expect: pass
// One warp per row; 1 / sqrt computed with sqrtf and a division.
// @launch rms_warp<<<ceil_div(ROWS, 8), 256>>>(x, weight, y, ROWS, COLS)
__global__ void rms_warp(const float* x, const float* weight, float* y, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float* out = y + (long long)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += in[c] * in[c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  float inv = 1.0f / sqrtf(s / cols + 1e-6f);
  for (int c = lane; c < cols; c += 32) out[c] = in[c] * inv * weight[c];
}
