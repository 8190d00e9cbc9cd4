// expect: correctness
// Linear branch without the -0.5 offset: |d| instead of |d| - 0.5 (the loss
// jumps at |d| = 1).
// @launch huber_bug<<<ceil_div(ROWS, 8), 256>>>(pred, target, loss, ROWS, COLS)
__global__ void huber_bug(const float* pred, const float* target, float* loss, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    float d = pred[(long long)row * cols + c] - target[(long long)row * cols + c];
    s += fabsf(d) < 1.0f ? 0.5f * d * d : fabsf(d);
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) loss[row] = s / cols;
}
