// expect: correctness
// Swaps the distributions' roles: sum exp(logq) * (logq - log p), i.e.
// KL(q || p) instead of KL(p || q).
// @launch kl_swap<<<ceil_div(ROWS, 8), 256>>>(p, logq, loss, ROWS, COLS)
__global__ void kl_swap(const float* p, const float* logq, float* loss, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    float lq = logq[(long long)row * cols + c];
    s += expf(lq) * (lq - logf(p[(long long)row * cols + c]));
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) loss[row] = s;
}
