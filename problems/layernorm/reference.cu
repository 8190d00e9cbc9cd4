// Reference for layernorm: per row r,
//   mean = sum_c x[r, c] / COLS,  var = sum_c (x[r, c] - mean)^2 / COLS  (biased)
//   y[r, c] = (x[r, c] - mean) / sqrt(var + 1e-5) * gamma[c] + beta[c].
//
// One block of 256 threads per row. Each thread runs Welford's algorithm
// over its strided columns (numerically stable: no E[x^2] - E[x]^2
// cancellation); the (count, mean, M2) triples are merged with warp shuffles
// (Chan et al.), then across warps through shared memory. A second pass
// writes the normalised row.
#define LAYERNORM_THREADS 256
#define LAYERNORM_EPS 1e-5f
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ void welford_merge(float& count, float& mean, float& m2,
                                              float other_count, float other_mean,
                                              float other_m2) {
  const float total = count + other_count;
  if (total == 0.0f) return;
  const float delta = other_mean - mean;
  const float other_weight = other_count / total;
  mean += delta * other_weight;
  m2 += other_m2 + delta * delta * count * other_weight;
  count = total;
}

__device__ __forceinline__ void warp_welford(float& count, float& mean, float& m2) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_count = __shfl_xor_sync(FULL_MASK, count, offset);
    const float other_mean = __shfl_xor_sync(FULL_MASK, mean, offset);
    const float other_m2 = __shfl_xor_sync(FULL_MASK, m2, offset);
    welford_merge(count, mean, m2, other_count, other_mean, other_m2);
  }
}

__global__ void __launch_bounds__(LAYERNORM_THREADS)
    layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                     const float* __restrict__ beta, float* __restrict__ y, int rows, int cols) {
  __shared__ float warp_count[LAYERNORM_THREADS / 32];
  __shared__ float warp_mean[LAYERNORM_THREADS / 32];
  __shared__ float warp_m2[LAYERNORM_THREADS / 32];
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* in = x + static_cast<long long>(row) * cols;
  float* out = y + static_cast<long long>(row) * cols;

  float count = 0.0f;
  float mean = 0.0f;
  float m2 = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = in[c];
    count += 1.0f;
    const float delta = v - mean;
    mean += delta / count;
    m2 += delta * (v - mean);
  }
  warp_welford(count, mean, m2);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warps = blockDim.x / 32;
  if (lane == 0) {
    warp_count[warp] = count;
    warp_mean[warp] = mean;
    warp_m2[warp] = m2;
  }
  __syncthreads();
  if (warp == 0) {
    count = lane < warps ? warp_count[lane] : 0.0f;
    mean = lane < warps ? warp_mean[lane] : 0.0f;
    m2 = lane < warps ? warp_m2[lane] : 0.0f;
    warp_welford(count, mean, m2);
    if (lane == 0) {
      warp_mean[0] = mean;
      warp_m2[0] = m2;
    }
  }
  __syncthreads();
  const float row_mean = warp_mean[0];
  const float inverse_std = rsqrtf(warp_m2[0] / static_cast<float>(cols) + LAYERNORM_EPS);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    out[c] = (in[c] - row_mean) * inverse_std * gamma[c] + beta[c];
  }
}
