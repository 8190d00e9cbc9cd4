// expect: correctness
// Computes log(sum(exp(x))) without subtracting the maximum: logits around
// 80 overflow exp() (fp32 limit ~88.7) and the outputs become -inf.
// @launch lsm_naive<<<ceil_div(ROWS, 4), 128>>>(x, y, ROWS, COLS)
__global__ void lsm_naive(const float* x, float* y, int rows, int cols) {
  int row = blockIdx.x * 4 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float* out = y + (long long)row * cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) s += expf(in[c]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  float lse = logf(s);
  for (int c = lane; c < cols; c += 32) out[c] = in[c] - lse;
}
