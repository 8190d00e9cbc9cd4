// expect: pass
// One warp per row; (value, column) pairs merged with shuffles, smaller
// column on ties.
// @launch argmin_warp<<<ceil_div(ROWS, 8), 256>>>(x, y, ROWS, COLS)
__global__ void argmin_warp(const float* x, long long* y, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float v = 3.402823466e+38f;
  int idx = cols;
  for (int c = lane; c < cols; c += 32) {
    if (in[c] < v) { v = in[c]; idx = c; }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_down_sync(0xffffffffu, v, o);
    int oi = __shfl_down_sync(0xffffffffu, idx, o);
    if (ov < v || (ov == v && oi < idx)) { v = ov; idx = oi; }
  }
  if (lane == 0) y[row] = idx;
}
