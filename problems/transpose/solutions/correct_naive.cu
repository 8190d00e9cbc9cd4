// expect: pass
// One thread per element, coalesced reads, strided writes.
// @launch tr_naive<<<dim3(ceil_div(COLS, 16), ceil_div(ROWS, 16)), dim3(16, 16)>>>(x, y, ROWS, COLS)
__global__ void tr_naive(const float* x, float* y, int rows, int cols) {
  int c = blockIdx.x * 16 + threadIdx.x;
  int r = blockIdx.y * 16 + threadIdx.y;
  if (r < rows && c < cols) y[(long long)c * rows + r] = x[(long long)r * cols + c];
}
