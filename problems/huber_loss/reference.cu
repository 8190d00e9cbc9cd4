// Reference for huber_loss: loss[r] = (1 / COLS) sum_c h(pred[r, c] - target[r, c]), with
// h(d) = 0.5 d^2 if |d| < 1, else |d| - 0.5 (Huber / smooth-L1 loss, delta 1).
//
// One block of 256 threads per row: each thread accumulates its strided
// columns in fp32, then warp shuffles and shared memory reduce the block.
#define LOSS_THREADS 256
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value += __shfl_xor_sync(FULL_MASK, value, offset);
  }
  return value;
}

// Sum over the block (blockDim.x a multiple of 32); every thread gets it.
__device__ float block_sum(float value) {
  __shared__ float partial[32];
  __shared__ float total;
  value = warp_sum(value);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  if (warp == 0) {
    value = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : 0.0f;
    value = warp_sum(value);
    if (lane == 0) total = value;
  }
  __syncthreads();
  return total;
}

__global__ void __launch_bounds__(LOSS_THREADS)
    huber_loss_kernel(const float* __restrict__ pred, const float* __restrict__ target,
                      float* __restrict__ loss, int rows, int cols) {
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* a = pred + static_cast<long long>(row) * cols;
  const float* b = target + static_cast<long long>(row) * cols;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = a[c] - b[c];
    const float ad = fabsf(d);
    sum += ad < 1.0f ? 0.5f * d * d : ad - 0.5f;
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) loss[row] = sum / static_cast<float>(cols);
}
