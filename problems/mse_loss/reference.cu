// Reference for mse_loss: loss = (1 / N) sum_i (pred[i] - target[i])^2, one number.
//
// Two launches, deterministic (no floating-point atomics): partial_sums
// gives every block a grid-stride share of the elements (float4 loads when
// both inputs are 16-byte aligned) and stores its block sum in the scratch
// array; finalize sums those partials with one block and divides by N.
#define MSE_THREADS 256
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

__global__ void __launch_bounds__(MSE_THREADS)
    partial_sums(const float* __restrict__ pred, const float* __restrict__ target,
                 float* __restrict__ partial, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  float sum = 0.0f;
  long long scalar_begin = 0;
  if (((reinterpret_cast<unsigned long long>(pred) | reinterpret_cast<unsigned long long>(target)) &
       15ull) == 0) {
    const long long vectors = n / 4;
    const float4* p4 = reinterpret_cast<const float4*>(pred);
    const float4* t4 = reinterpret_cast<const float4*>(target);
    for (long long i = thread; i < vectors; i += stride) {
      const float4 p = p4[i];
      const float4 t = t4[i];
      const float dx = p.x - t.x, dy = p.y - t.y, dz = p.z - t.z, dw = p.w - t.w;
      sum += (dx * dx + dy * dy) + (dz * dz + dw * dw);
    }
    scalar_begin = vectors * 4;
  }
  for (long long i = scalar_begin + thread; i < n; i += stride) {
    const float d = pred[i] - target[i];
    sum += d * d;
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partial[blockIdx.x] = sum;
}

__global__ void __launch_bounds__(1024)
    finalize(const float* __restrict__ partial, float* __restrict__ loss, int blocks, long long n) {
  float sum = 0.0f;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) sum += partial[i];
  sum = block_sum(sum);
  if (threadIdx.x == 0) *loss = sum / static_cast<float>(n);
}
