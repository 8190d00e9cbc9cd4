// expect: correctness
// Uses the tanh approximation of GELU where the problem asks for the exact
// (erf) one: they differ by up to ~5e-4, far above the fp32 tolerance.
// @launch ln_gelu_tanh<<<ceil_div(ROWS, 8), 256>>>(x, gamma, beta, y, ROWS, COLS)
__global__ void ln_gelu_tanh(const float* x, const float* gamma, const float* beta, float* y,
                             int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float* out = y + (long long)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += in[c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  float mean = s / cols;
  float q = 0.0f;
  for (int c = lane; c < cols; c += 32) q += (in[c] - mean) * (in[c] - mean);
  for (int o = 16; o > 0; o >>= 1) q += __shfl_xor_sync(0xffffffffu, q, o);
  float rstd = rsqrtf(q / cols + 1e-5f);
  for (int c = lane; c < cols; c += 32) {
    float v = (in[c] - mean) * rstd * gamma[c] + beta[c];
    out[c] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
  }
}
