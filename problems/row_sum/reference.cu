// Reference for row_sum: y[r] = sum_c x[r, c].
//
// One block of 256 threads per row: each thread sums its strided columns
// (coalesced loads), the partial sums are reduced with warp shuffles, then
// across warps through shared memory.
#define ROW_SUM_THREADS 256
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value += __shfl_xor_sync(FULL_MASK, value, offset);
  }
  return value;
}

__global__ void __launch_bounds__(ROW_SUM_THREADS)
    row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float partial[ROW_SUM_THREADS / 32];
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* in = x + static_cast<long long>(row) * cols;

  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += in[c];
  sum = warp_sum(sum);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : 0.0f;
    sum = warp_sum(sum);
    if (lane == 0) y[row] = sum;
  }
}
