// Reference for cross_entropy: loss[b] = logsumexp_c(logits[b, c]) - logits[b, labels[b]]
// (per-sample cross-entropy of softmax(logits[b]) against class labels[b]).
//
// One block of 256 threads per row: an online (max, sum of exp(x - max))
// pair per thread over its strided classes, merged with warp shuffles and
// across warps through shared memory; thread 0 then subtracts the label's
// logit. exp() only sees non-positive arguments.
#define CE_THREADS 256
#define FULL_MASK 0xffffffffu
#define LOWEST_FLOAT (-3.402823466e+38f)  // -FLT_MAX (NVRTC has no INFINITY)

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

__global__ void __launch_bounds__(CE_THREADS)
    cross_entropy_kernel(const float* __restrict__ logits, const long long* __restrict__ labels,
                         float* __restrict__ loss, int batch, int classes) {
  __shared__ float warp_max[CE_THREADS / 32];
  __shared__ float warp_sum[CE_THREADS / 32];
  const int row = blockIdx.x;
  if (row >= batch) return;  // uniform across the block
  const float* in = logits + static_cast<long long>(row) * classes;

  float max = LOWEST_FLOAT;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < classes; c += blockDim.x) {
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
    if (lane == 0) loss[row] = (max - in[labels[row]]) + logf(sum);
  }
}
