// expect: pass
// CUB: one block per row; BlockReduce for the row's max and its sum of
// exponentials, each broadcast from thread 0 (the only thread CUB gives the
// aggregate) through shared memory. The two reductions share one union.
// @launch lsm_cub<<<ROWS, 256>>>(x, y, ROWS, COLS)
#include <cub/block/block_reduce.cuh>
__global__ void lsm_cub(const float* x, float* y, int rows, int cols) {
  using Reduce = cub::BlockReduce<float, 256>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ float row_max, row_log_sum;
  const float* in = x + (long long)blockIdx.x * cols;
  float* out = y + (long long)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += 256) m = fmaxf(m, in[c]);
  const float block_max = Reduce(temp).Reduce(m, cuda::maximum<>{});
  if (threadIdx.x == 0) row_max = block_max;
  __syncthreads();
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += 256) s += expf(in[c] - row_max);
  const float block_sum = Reduce(temp).Sum(s);
  if (threadIdx.x == 0) row_log_sum = logf(block_sum);
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += 256) out[c] = in[c] - row_max - row_log_sum;
}
