// expect: correctness
// Writes the exclusive scan (the sum of the elements before c, not up to c).
// @launch cumsum_excl<<<ceil_div(ROWS, 64), 64>>>(x, y, ROWS, COLS)
__global__ void cumsum_excl(const float* x, float* y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* in = x + (long long)r * cols;
  float* out = y + (long long)r * cols;
  float s = 0.0f;
  for (int c = 0; c < cols; ++c) {
    out[c] = s;
    s += in[c];
  }
}
