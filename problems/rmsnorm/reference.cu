// Reference for rmsnorm: y[r, c] = x[r, c] / sqrt(mean_c(x[r, c]^2) + 1e-6) * weight[c].
//
// One block of 256 threads per row. Pass 1: each thread accumulates the
// squares of its strided columns in fp32; warp shuffles and shared memory
// give the block's sum, shared by every thread. Pass 2 writes the scaled row.
// Rows are read as float4 when they (and y's rows) start 16-byte aligned.
#define RMS_THREADS 256
#define FULL_MASK 0xffffffffu
#define RMS_EPS 1e-6f

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

__global__ void __launch_bounds__(RMS_THREADS)
    rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                   float* __restrict__ y, int rows, int cols) {
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* in = x + static_cast<long long>(row) * cols;
  float* out = y + static_cast<long long>(row) * cols;
  const bool vectorized =
      ((reinterpret_cast<unsigned long long>(in) | reinterpret_cast<unsigned long long>(out) |
        reinterpret_cast<unsigned long long>(weight)) &
       15ull) == 0;
  const int vectors = vectorized ? cols / 4 : 0;
  const float4* in4 = reinterpret_cast<const float4*>(in);

  float squares = 0.0f;
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    const float4 v = in4[i];
    squares += (v.x * v.x + v.y * v.y) + (v.z * v.z + v.w * v.w);
  }
  for (int c = vectors * 4 + threadIdx.x; c < cols; c += blockDim.x) squares += in[c] * in[c];
  const float inverse_rms = rsqrtf(block_sum(squares) / static_cast<float>(cols) + RMS_EPS);

  const float4* weight4 = reinterpret_cast<const float4*>(weight);
  float4* out4 = reinterpret_cast<float4*>(out);
  for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
    const float4 v = in4[i];
    const float4 w = weight4[i];
    out4[i] = make_float4(v.x * inverse_rms * w.x, v.y * inverse_rms * w.y, v.z * inverse_rms * w.z,
                          v.w * inverse_rms * w.w);
  }
  for (int c = vectors * 4 + threadIdx.x; c < cols; c += blockDim.x) {
    out[c] = in[c] * inverse_rms * weight[c];
  }
}
