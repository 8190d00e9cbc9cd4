// Reference for log_softmax: y[r, c] = x[r, c] - m_r - log(sum_k exp(x[r, k] - m_r)),
// m_r = max_k x[r, k].
//
// One block of 256 threads per row. Pass 1: each thread keeps an online
// (running max, running sum of exp(x - max)) pair over its strided columns;
// pairs are merged with warp shuffles, then across warps through shared
// memory. Pass 2 writes x - (max + log(sum)). exp() never sees a positive
// argument, so large logits cannot overflow.
#define LSM_THREADS 256
#define FULL_MASK 0xffffffffu
#define LOWEST_FLOAT (-3.402823466e+38f)  // -FLT_MAX (NVRTC has no INFINITY)

// Merges (max, sum) with (other_max, other_sum); an empty pair is
// (LOWEST_FLOAT, 0) and exp(LOWEST_FLOAT - m) is 0 for any real m.
__device__ __forceinline__ void merge(float& max, float& sum, float other_max, float other_sum) {
  const float new_max = fmaxf(max, other_max);
  sum = sum * expf(max - new_max) + other_sum * expf(other_max - new_max);
  max = new_max;
}

__device__ __forceinline__ void warp_merge(float& max, float& sum) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_max = __shfl_xor_sync(FULL_MASK, max, offset);
    const float other_sum = __shfl_xor_sync(FULL_MASK, sum, offset);
    merge(max, sum, other_max, other_sum);
  }
}

__global__ void __launch_bounds__(LSM_THREADS)
    log_softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float warp_max[LSM_THREADS / 32];
  __shared__ float warp_sum[LSM_THREADS / 32];
  __shared__ float row_offset;
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* in = x + static_cast<long long>(row) * cols;
  float* out = y + static_cast<long long>(row) * cols;

  float max = LOWEST_FLOAT;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = in[c];
    if (v > max) {
      sum = sum * expf(max - v) + 1.0f;
      max = v;
    } else {
      sum += expf(v - max);
    }
  }
  warp_merge(max, sum);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warps = blockDim.x / 32;
  if (lane == 0) {
    warp_max[warp] = max;
    warp_sum[warp] = sum;
  }
  __syncthreads();
  if (warp == 0) {
    max = lane < warps ? warp_max[lane] : LOWEST_FLOAT;
    sum = lane < warps ? warp_sum[lane] : 0.0f;
    warp_merge(max, sum);
    if (lane == 0) row_offset = max + logf(sum);
  }
  __syncthreads();
  const float offset = row_offset;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = in[c] - offset;
}
