// Reference for col_sum: y[c] = sum_r x[r, c] (sums down the columns).
//
// Blocks of 32 x 16 threads own 32 adjacent columns: a warp reads 32
// consecutive floats of one row (coalesced), the 16 warps take every 16th
// row, and the 16 partial sums per column are combined through shared memory
// (padded against bank conflicts).
#define COLS_PER_BLOCK 32
#define ROW_LANES 16

__global__ void __launch_bounds__(COLS_PER_BLOCK* ROW_LANES)
    col_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float partial[ROW_LANES][COLS_PER_BLOCK + 1];
  const int tx = threadIdx.x;  // column within the block
  const int ty = threadIdx.y;  // row lane
  const int col = blockIdx.x * COLS_PER_BLOCK + tx;

  float sum = 0.0f;
  if (col < cols) {
    for (int r = ty; r < rows; r += ROW_LANES) sum += x[static_cast<long long>(r) * cols + col];
  }
  partial[ty][tx] = sum;
  __syncthreads();
  if (ty == 0 && col < cols) {
    float total = 0.0f;
    for (int lane = 0; lane < ROW_LANES; ++lane) total += partial[lane][tx];
    y[col] = total;
  }
}
