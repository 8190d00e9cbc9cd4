// Reference for batchnorm_inference (NCHW, per-channel running statistics):
//   y[n, c, h, w] = (x[n, c, h, w] - mean[c]) / sqrt(var[c] + 1e-5) * gamma[c] + beta[c]
//
// Memory-bound. Grid: x = one (n, c) plane of H * W elements, y = chunks of
// 2048 elements of that plane. Each block folds its channel's statistics
// into one scale and shift, then streams the chunk (float4 when the plane
// starts 16-byte aligned, scalar otherwise and for the tail).
#define BN_THREADS 256
#define BN_CHUNK 2048
#define BN_EPS 1e-5f

__global__ void __launch_bounds__(BN_THREADS)
    batchnorm_kernel(const float* __restrict__ x, const float* __restrict__ mean,
                     const float* __restrict__ var, const float* __restrict__ gamma,
                     const float* __restrict__ beta, float* __restrict__ y, int channels,
                     int plane_size) {
  const long long plane = blockIdx.x;  // n * C + c
  const int c = static_cast<int>(plane % channels);
  const float scale = gamma[c] * rsqrtf(var[c] + BN_EPS);
  const float shift = beta[c] - mean[c] * scale;
  const float* in = x + plane * plane_size;
  float* out = y + plane * plane_size;
  const int begin = blockIdx.y * BN_CHUNK;
  const int end = min(begin + BN_CHUNK, plane_size);
  if (begin >= end) return;

  int scalar_begin = begin;
  if (((reinterpret_cast<unsigned long long>(in) | reinterpret_cast<unsigned long long>(out)) &
       15ull) == 0) {
    // begin is a multiple of 4 (BN_CHUNK is), so in + begin stays aligned.
    const int vectors = (end - begin) / 4;
    const float4* in4 = reinterpret_cast<const float4*>(in + begin);
    float4* out4 = reinterpret_cast<float4*>(out + begin);
    for (int i = threadIdx.x; i < vectors; i += blockDim.x) {
      const float4 v = in4[i];
      out4[i] = make_float4(fmaf(v.x, scale, shift), fmaf(v.y, scale, shift),
                            fmaf(v.z, scale, shift), fmaf(v.w, scale, shift));
    }
    scalar_begin = begin + vectors * 4;
  }
  for (int i = scalar_begin + threadIdx.x; i < end; i += blockDim.x) {
    out[i] = fmaf(in[i], scale, shift);
  }
}
