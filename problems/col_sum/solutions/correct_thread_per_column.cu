// expect: pass
// One thread per column walking down the rows (adjacent threads read
// adjacent addresses: coalesced).
// @launch col_sum_simple<<<ceil_div(COLS, 128), 128>>>(x, y, ROWS, COLS)
__global__ void col_sum_simple(const float* x, float* y, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += x[(long long)r * cols + c];
  y[c] = s;
}
