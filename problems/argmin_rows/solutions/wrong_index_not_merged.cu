// expect: correctness
// The warp merge takes the smaller value but forgets to take its column
// along, so the reported column is usually that of lane 0's own minimum.
// @launch argmin_bug<<<ceil_div(ROWS, 8), 256>>>(x, y, ROWS, COLS)
__global__ void argmin_bug(const float* x, long long* y, int rows, int cols) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  float v = 3.402823466e+38f;
  int idx = 0;
  for (int c = lane; c < cols; c += 32) {
    if (in[c] < v) { v = in[c]; idx = c; }
  }
  for (int o = 16; o > 0; o >>= 1) {
    float ov = __shfl_down_sync(0xffffffffu, v, o);
    if (ov < v) v = ov;
  }
  if (lane == 0) y[row] = idx;
}
