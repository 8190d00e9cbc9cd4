// expect: correctness
// Writes y[c * COLS + r] (the row length of x) instead of y[c * ROWS + r]:
// right only for square matrices (and out of place otherwise).
// @launch tr_bug<<<dim3(ceil_div(COLS, 16), ceil_div(ROWS, 16)), dim3(16, 16)>>>(x, y, ROWS, COLS)
__global__ void tr_bug(const float* x, float* y, int rows, int cols) {
  int c = blockIdx.x * 16 + threadIdx.x;
  int r = blockIdx.y * 16 + threadIdx.y;
  if (r < rows && c < cols) {
    long long dst = (long long)c * cols + r;
    if (dst < (long long)rows * cols) y[dst] = x[(long long)r * cols + c];
  }
}
