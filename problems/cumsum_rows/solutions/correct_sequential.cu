// expect: pass
// One thread per row, a sequential running sum (fine for correctness; slow
// on long rows).
// @launch cumsum_seq<<<ceil_div(ROWS, 64), 64>>>(x, y, ROWS, COLS)
__global__ void cumsum_seq(const float* x, float* y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* in = x + (long long)r * cols;
  float* out = y + (long long)r * cols;
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) {
    s += in[c];
    out[c] = s;
  }
}
