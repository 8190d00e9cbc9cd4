// Reference for max_rows: y[r] = max_c x[r, c] (the largest element of each row).
//
// One block of 256 threads per row: each thread reduces its strided columns
// (float4 loads when the row start is 16-byte aligned, then a scalar tail),
// then warp shuffles and shared memory reduce across the block. fmaxf is
// exact, so the result does not depend on the order.
#define REDUCE_THREADS 256
#define FULL_MASK 0xffffffffu
#define LOWEST_FLOAT (-3.402823466e+38f)  // -FLT_MAX (NVRTC has no INFINITY)

__device__ __forceinline__ float warp_max(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value = fmaxf(value, __shfl_xor_sync(FULL_MASK, value, offset));
  }
  return value;
}

__global__ void __launch_bounds__(REDUCE_THREADS)
    max_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float partial[REDUCE_THREADS / 32];
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* in = x + static_cast<long long>(row) * cols;

  float best = LOWEST_FLOAT;
  int scalar_begin = 0;
  if ((reinterpret_cast<unsigned long long>(in) & 15ull) == 0) {
    const int vectors = cols / 4;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
      const float4 v = in4[i];
      best = fmaxf(best, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    scalar_begin = vectors * 4;
  }
  for (int c = scalar_begin + threadIdx.x; c < cols; c += blockDim.x) best = fmaxf(best, in[c]);

  best = warp_max(best);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = best;
  __syncthreads();
  if (warp == 0) {
    best = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : LOWEST_FLOAT;
    best = warp_max(best);
    if (lane == 0) y[row] = best;
  }
}
