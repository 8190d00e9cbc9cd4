// expect: pass
// One warp per row; Welford's running mean and M2 per lane, merged with
// shuffles (Chan et al.), then the fused output.
// @launch ln_gelu_warp<<<ceil_div(ROWS, 8), 256>>>(x, gamma, beta, y, ROWS, COLS)
__global__ void ln_gelu_warp(const float* x, const float* gamma, const float* beta, float* y,
                             int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float* out = y + (long long)row * cols;
  float n = 0.0f, mean = 0.0f, m2 = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    float v = in[c];
    n += 1.0f;
    float d = v - mean;
    mean += d / n;
    m2 += d * (v - mean);
  }
  for (int o = 16; o > 0; o >>= 1) {
    float n2 = __shfl_xor_sync(0xffffffffu, n, o);
    float mean2 = __shfl_xor_sync(0xffffffffu, mean, o);
    float m22 = __shfl_xor_sync(0xffffffffu, m2, o);
    float nt = n + n2;
    if (nt > 0.0f) {
      float d = mean2 - mean;
      mean += d * n2 / nt;
      m2 += m22 + d * d * n * n2 / nt;
    }
    n = nt;
  }
  float rstd = 1.0f / sqrtf(m2 / cols + 1e-5f);
  for (int c = lane; c < cols; c += 32) {
    float v = (in[c] - mean) * rstd * gamma[c] + beta[c];
    out[c] = 0.5f * v * erfcf(-v * 0.70710678118f);
  }
}
