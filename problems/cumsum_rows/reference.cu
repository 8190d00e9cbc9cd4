// Reference for cumsum_rows: y[r, c] = sum_{k <= c} x[r, k] (inclusive scan of
// every row).
//
// One block of 256 threads per row, walking the row in tiles of 1024
// elements: each thread scans its 4 consecutive elements sequentially, the
// 256 thread totals are scanned with warp shuffles (__shfl_up_sync) and a
// scan of the 8 warp totals, and every tile adds the running total of the
// tiles before it.
#define SCAN_THREADS 256
#define PER_THREAD 4
#define SCAN_TILE (SCAN_THREADS * PER_THREAD)
#define FULL_MASK 0xffffffffu

__global__ void __launch_bounds__(SCAN_THREADS)
    cumsum_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float warp_total[SCAN_THREADS / 32];
  __shared__ float tile_total;
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* in = x + static_cast<long long>(row) * cols;
  float* out = y + static_cast<long long>(row) * cols;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;

  float carry = 0.0f;  // sum of the row before the current tile
  for (int tile = 0; tile < cols; tile += SCAN_TILE) {
    const int first = tile + threadIdx.x * PER_THREAD;
    float v[PER_THREAD];
    float running = 0.0f;
    for (int j = 0; j < PER_THREAD; ++j) {
      running += first + j < cols ? in[first + j] : 0.0f;
      v[j] = running;
    }
    // Inclusive scan of the thread totals within the warp.
    float scanned = running;
    for (int offset = 1; offset < 32; offset <<= 1) {
      const float other = __shfl_up_sync(FULL_MASK, scanned, offset);
      if (lane >= offset) scanned += other;
    }
    if (lane == 31) warp_total[warp] = scanned;
    __syncthreads();
    if (warp == 0) {
      float total = lane < SCAN_THREADS / 32 ? warp_total[lane] : 0.0f;
      for (int offset = 1; offset < 32; offset <<= 1) {
        const float other = __shfl_up_sync(FULL_MASK, total, offset);
        if (lane >= offset) total += other;
      }
      if (lane < SCAN_THREADS / 32) warp_total[lane] = total;  // inclusive
      if (lane == SCAN_THREADS / 32 - 1) tile_total = total;
    }
    __syncthreads();
    const float before = carry + (warp > 0 ? warp_total[warp - 1] : 0.0f) + (scanned - running);
    for (int j = 0; j < PER_THREAD; ++j) {
      if (first + j < cols) out[first + j] = before + v[j];
    }
    carry += tile_total;
    __syncthreads();  // warp_total and tile_total are rewritten by the next tile
  }
}
