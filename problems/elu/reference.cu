// Reference for elu: y[i] = x > 0 ? x : exp(x) - 1 for i in [0, N) (f32).
//
// Memory-bound: a grid-stride loop moves float4 vectors (16-byte loads and
// stores) when x and y are 16-byte aligned, then a scalar loop covers the
// N % 4 tail (or everything, for unaligned pointers).

__device__ __forceinline__ float activation(float v) { return v > 0.0f ? v : expm1f(v); }

__global__ void __launch_bounds__(256)
    elu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long addresses =
      reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y);
  long long scalar_begin = 0;
  if ((addresses & 15ull) == 0) {
    const long long vectors = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float4* y4 = reinterpret_cast<float4*>(y);
    for (long long i = thread; i < vectors; i += stride) {
      float4 v = x4[i];
      v.x = activation(v.x);
      v.y = activation(v.y);
      v.z = activation(v.z);
      v.w = activation(v.w);
      y4[i] = v;
    }
    scalar_begin = vectors * 4;
  }
  for (long long i = scalar_begin + thread; i < n; i += stride) y[i] = activation(x[i]);
}
