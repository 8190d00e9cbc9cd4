// expect: correctness
// Adds eps outside the square root: x / (sqrt(mean(x^2)) + eps). With
// activations of rms ~0.005, eps = 1e-6 inside the root changes the result by
// ~2%, outside by ~0.02%: the two differ by ~2%.
// @launch rms_bad_eps<<<ceil_div(ROWS, 8), 256>>>(x, weight, y, ROWS, COLS)
__global__ void rms_bad_eps(const float* x, const float* weight, float* y, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float* out = y + (long long)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += in[c] * in[c];
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  float inv = 1.0f / (sqrtf(s / cols) + 1e-6f);
  for (int c = lane; c < cols; c += 32) out[c] = in[c] * inv * weight[c];
}
