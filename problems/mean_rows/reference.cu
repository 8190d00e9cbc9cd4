// Reference for mean_rows: y[r] = (1 / COLS) sum_c x[r, c].
//
// One block of 256 threads per row. Rows whose start is 16-byte aligned are
// read as float4 (then a scalar tail); the others element by element. Each
// thread accumulates in fp32; the block reduces with warp shuffles, then
// across warps through shared memory.
#define MEAN_THREADS 256
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value += __shfl_xor_sync(FULL_MASK, value, offset);
  }
  return value;
}

__global__ void __launch_bounds__(MEAN_THREADS)
    mean_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float partial[MEAN_THREADS / 32];
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* in = x + static_cast<long long>(row) * cols;

  float sum = 0.0f;
  int scalar_begin = 0;
  if ((reinterpret_cast<unsigned long long>(in) & 15ull) == 0) {
    const int vectors = cols / 4;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
      const float4 v = in4[i];
      sum += (v.x + v.y) + (v.z + v.w);
    }
    scalar_begin = vectors * 4;
  }
  for (int c = scalar_begin + threadIdx.x; c < cols; c += blockDim.x) sum += in[c];

  sum = warp_sum(sum);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : 0.0f;
    sum = warp_sum(sum);
    if (lane == 0) y[row] = sum / static_cast<float>(cols);
  }
}
