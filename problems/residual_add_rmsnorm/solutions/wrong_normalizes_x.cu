// expect: correctness
// Stores h correctly but normalizes x instead of h (the residual is added to
// the stream, but not to the input of the norm).
// @launch add_rms_bug<<<ceil_div(ROWS, 8), 256>>>(x, residual, weight, h, y, ROWS, COLS)
__global__ void add_rms_bug(const float* x, const float* residual, const float* weight, float* h,
                            float* y, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  long long off = (long long)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    h[off + c] = x[off + c] + residual[off + c];
    s += x[off + c] * x[off + c];
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  float inv = rsqrtf(s / cols + 1e-6f);
  for (int c = lane; c < cols; c += 32) y[off + c] = x[off + c] * inv * weight[c];
}
