// Reference for groupnorm (NCHW, G groups of C / G channels):
//   mean, var over the (C / G) * H * W elements of group g of sample n
//   y[n, c, h, w] = (x[n, c, h, w] - mean) / sqrt(var + 1e-5) * gamma[c] + beta[c]
//
// One block of 512 threads per (n, g); the group's elements are contiguous
// in NCHW. Three passes over the group (it is re-read from L2): the mean,
// then the mean of squared deviations (a two-pass variance, exact enough
// whatever the mean), then the output. Sums are fp32 per thread, reduced with
// warp shuffles and shared memory.
#define GN_THREADS 512
#define FULL_MASK 0xffffffffu
#define GN_EPS 1e-5f

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

__global__ void __launch_bounds__(GN_THREADS)
    groupnorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                     const float* __restrict__ beta, float* __restrict__ y, int channels,
                     int plane_size, int groups) {
  const int group = blockIdx.x % groups;
  const int channels_per_group = channels / groups;
  const long long group_size = static_cast<long long>(channels_per_group) * plane_size;
  const long long offset = static_cast<long long>(blockIdx.x) * group_size;
  const float* in = x + offset;
  float* out = y + offset;

  float sum = 0.0f;
  for (long long i = threadIdx.x; i < group_size; i += blockDim.x) sum += in[i];
  const float mean = block_sum(sum) / static_cast<float>(group_size);

  float squares = 0.0f;
  for (long long i = threadIdx.x; i < group_size; i += blockDim.x) {
    const float d = in[i] - mean;
    squares += d * d;
  }
  const float inverse_std = rsqrtf(block_sum(squares) / static_cast<float>(group_size) + GN_EPS);

  const int first_channel = group * channels_per_group;
  for (int j = 0; j < channels_per_group; ++j) {
    const float scale = gamma[first_channel + j] * inverse_std;
    const float shift = beta[first_channel + j] - mean * scale;
    const long long base = static_cast<long long>(j) * plane_size;
    for (int i = threadIdx.x; i < plane_size; i += blockDim.x) {
      out[base + i] = fmaf(in[base + i], scale, shift);
    }
  }
}
