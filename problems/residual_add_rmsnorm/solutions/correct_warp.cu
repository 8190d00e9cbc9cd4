// expect: pass
// One warp per row: add and store h, reduce h^2 with shuffles, write y.
// @launch add_rms_warp<<<ceil_div(ROWS, 8), 256>>>(x, residual, weight, h, y, ROWS, COLS)
__global__ void add_rms_warp(const float* x, const float* residual, const float* weight, float* h,
                             float* y, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  long long off = (long long)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    float v = x[off + c] + residual[off + c];
    h[off + c] = v;
    s += v * v;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  float inv = rsqrtf(s / cols + 1e-6f);
  for (int c = lane; c < cols; c += 32) y[off + c] = h[off + c] * inv * weight[c];
}
