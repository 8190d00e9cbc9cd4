// expect: correctness
// CUB's BlockReduce returns the block's aggregate in thread 0 only; the
// other threads hold partial reductions (their warp's, from themselves on).
// This kernel uses the returned max and sum in every thread, so most of each
// row is shifted and scaled by partial values: wrong on a GPU, and on the
// CPU backend, whose emulation leaves the same partials.
// @launch lsm_cub<<<ROWS, 256>>>(x, y, ROWS, COLS)
#include <cub/block/block_reduce.cuh>
__global__ void lsm_cub(const float* x, float* y, int rows, int cols) {
  using Reduce = cub::BlockReduce<float, 256>;
  __shared__ typename Reduce::TempStorage temp;
  const float* in = x + (long long)blockIdx.x * cols;
  float* out = y + (long long)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += 256) m = fmaxf(m, in[c]);
  const float row_max = Reduce(temp).Reduce(m, cuda::maximum<>{});
  __syncthreads();
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 256) s += expf(in[c] - row_max);
  const float row_log_sum = logf(Reduce(temp).Sum(s));
  for (int c = threadIdx.x; c < cols; c += 256) out[c] = in[c] - row_max - row_log_sum;
}
