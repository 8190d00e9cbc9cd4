// expect: correctness
// Indexes x as if it were column-major (x[c * ROWS + r]): it sums ROWS
// consecutive elements, i.e. pieces of rows, not columns (in bounds, since
// c * ROWS + r < ROWS * COLS, but wrong).
// @launch col_sum_t<<<ceil_div(COLS, 128), 128>>>(x, y, ROWS, COLS)
__global__ void col_sum_t(const float* x, float* y, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += x[(long long)c * rows + r];
  y[c] = s;
}
