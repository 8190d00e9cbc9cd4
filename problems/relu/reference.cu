// Reference for relu: y[i] = max(x[i], 0) for i in [0, N).
//
// Memory-bound: float4 loads and stores in a grid-stride loop, a scalar loop
// for the N % 4 tail, and a scalar path for pointers that are not 16-byte
// aligned.
__device__ __forceinline__ float relu(float v) { return v > 0.0f ? v : 0.0f; }

__global__ void __launch_bounds__(256)
    relu_kernel(const float* __restrict__ x, float* __restrict__ y, long long n) {
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
      const float4 v = x4[i];
      y4[i] = make_float4(relu(v.x), relu(v.y), relu(v.z), relu(v.w));
    }
    scalar_begin = vectors * 4;
  }
  for (long long i = scalar_begin + thread; i < n; i += stride) y[i] = relu(x[i]);
}
