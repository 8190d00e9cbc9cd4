// expect: pass
// One thread per row, a sequential scan with a strict comparison (first
// occurrence wins). Slow on long rows, but correct.
// @launch argmax_serial<<<ceil_div(ROWS, 64), 64>>>(x, y, ROWS, COLS)
__global__ void argmax_serial(const float* x, long long* y, int rows, int cols) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* in = x + (long long)row * cols;
  int best = 0;
  for (int c = 1; c < cols; ++c) {
    if (in[c] > in[best]) best = c;
  }
  y[row] = best;
}
