// expect: pass
// One warp per row; smooth-L1 as min/abs arithmetic.
// @launch huber_warp<<<ceil_div(ROWS, 8), 256>>>(pred, target, loss, ROWS, COLS)
__global__ void huber_warp(const float* pred, const float* target, float* loss, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    float ad = fabsf(pred[(long long)row * cols + c] - target[(long long)row * cols + c]);
    float q = fminf(ad, 1.0f);
    s += 0.5f * q * q + (ad - q);
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) loss[row] = s / cols;
}
