// Reference for softmax_long_rows: softmax of every row of x [ROWS, COLS]
// with few rows and very long ones (tens of thousands to millions of columns).
//
// One block per row would leave most of the GPU idle, so every row is split
// into chunks of 8192 columns, one block (256 threads) each:
//   1. chunk_stats: each block reduces its chunk to an online (max, sum of
//      exp(x - max)) pair and stores it in the scratch arrays;
//   2. chunk_normalize: each block merges its row's pairs (a few dozen) into
//      the row's max and sum, then writes exp(x - max) / sum for its chunk.
// Pairs are merged with warp shuffles and through shared memory; exp() only
// sees non-positive arguments.
#define SM_THREADS 256
#define SM_CHUNK 8192
#define FULL_MASK 0xffffffffu
#define LOWEST_FLOAT (-3.402823466e+38f)  // -FLT_MAX (NVRTC has no INFINITY)

__device__ __forceinline__ void merge(float& max, float& sum, float other_max, float other_sum) {
  const float new_max = fmaxf(max, other_max);
  sum = sum * expf(max - new_max) + other_sum * expf(other_max - new_max);
  max = new_max;
}

// Merges the (max, sum) pairs of the whole block; every thread gets the result.
__device__ void block_merge(float& max, float& sum) {
  __shared__ float warp_max[32];
  __shared__ float warp_sum[32];
  for (int offset = 16; offset > 0; offset >>= 1) {
    merge(max, sum, __shfl_xor_sync(FULL_MASK, max, offset),
          __shfl_xor_sync(FULL_MASK, sum, offset));
  }
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warps = blockDim.x / 32;
  if (lane == 0) {
    warp_max[warp] = max;
    warp_sum[warp] = sum;
  }
  __syncthreads();
  max = lane < warps ? warp_max[lane] : LOWEST_FLOAT;
  sum = lane < warps ? warp_sum[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset >>= 1) {
    merge(max, sum, __shfl_xor_sync(FULL_MASK, max, offset),
          __shfl_xor_sync(FULL_MASK, sum, offset));
  }
  __syncthreads();  // warp_max / warp_sum may be reused by the caller
}

// grid (chunks, ROWS): the (max, sum) pair of one chunk of one row.
__global__ void __launch_bounds__(SM_THREADS)
    chunk_stats(const float* __restrict__ x, float* __restrict__ chunk_max,
                float* __restrict__ chunk_sum, int cols) {
  const int chunk = blockIdx.x;
  const int row = blockIdx.y;
  const float* in = x + static_cast<long long>(row) * cols;
  const int begin = chunk * SM_CHUNK;
  const int end = min(begin + SM_CHUNK, cols);
  float max = LOWEST_FLOAT;
  float sum = 0.0f;
  for (int c = begin + threadIdx.x; c < end; c += blockDim.x) {
    const float v = in[c];
    if (v > max) {
      sum = sum * expf(max - v) + 1.0f;
      max = v;
    } else {
      sum += expf(v - max);
    }
  }
  block_merge(max, sum);
  if (threadIdx.x == 0) {
    chunk_max[static_cast<long long>(row) * gridDim.x + chunk] = max;
    chunk_sum[static_cast<long long>(row) * gridDim.x + chunk] = sum;
  }
}

// grid (chunks, ROWS): merges the row's pairs, then writes one chunk of y.
__global__ void __launch_bounds__(SM_THREADS)
    chunk_normalize(const float* __restrict__ x, const float* __restrict__ chunk_max,
                    const float* __restrict__ chunk_sum, float* __restrict__ y, int cols) {
  const int chunks = gridDim.x;
  const int row = blockIdx.y;
  float max = LOWEST_FLOAT;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < chunks; i += blockDim.x) {
    merge(max, sum, chunk_max[static_cast<long long>(row) * chunks + i],
          chunk_sum[static_cast<long long>(row) * chunks + i]);
  }
  block_merge(max, sum);
  const float inverse_sum = 1.0f / sum;
  const float* in = x + static_cast<long long>(row) * cols;
  float* out = y + static_cast<long long>(row) * cols;
  const int begin = blockIdx.x * SM_CHUNK;
  const int end = min(begin + SM_CHUNK, cols);
  for (int c = begin + threadIdx.x; c < end; c += blockDim.x) {
    out[c] = expf(in[c] - max) * inverse_sum;
  }
}
