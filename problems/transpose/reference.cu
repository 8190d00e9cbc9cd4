// Reference for transpose: y[c, r] = x[r, c] for x [ROWS, COLS], y [COLS, ROWS].
//
// Memory-bound. Each block moves a 32 x 32 tile through shared memory so
// that both the reads of x and the writes of y are coalesced (a warp touches
// 32 consecutive floats of one row); the tile has 33 columns so that reading
// it by columns hits 32 different banks. Blocks of 32 x 8 threads, four rows
// per thread.
#define TILE 32
#define BLOCK_ROWS 8

__global__ void __launch_bounds__(TILE* BLOCK_ROWS)
    transpose_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  const int c = blockIdx.x * TILE + threadIdx.x;
  const int r0 = blockIdx.y * TILE;
  for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
    const int r = r0 + j;
    if (r < rows && c < cols) tile[j][threadIdx.x] = x[static_cast<long long>(r) * cols + c];
  }
  __syncthreads();
  const int out_c = r0 + threadIdx.x;  // column of y = row of x
  const int out_r0 = blockIdx.x * TILE;
  for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS) {
    const int out_r = out_r0 + j;  // row of y = column of x
    if (out_r < cols && out_c < rows)
      y[static_cast<long long>(out_r) * rows + out_c] = tile[threadIdx.x][j];
  }
}
