// Reference for vector_add: c[i] = a[i] + b[i] for i in [0, N).
//
// Memory-bound: each thread moves float4 vectors (16-byte loads and stores)
// in a grid-stride loop, then a scalar loop covers the N % 4 tail. Pointers
// that are not 16-byte aligned take the scalar path (the buffers the
// evaluator allocates are, but the kernel does not rely on it).
__global__ void __launch_bounds__(256)
    vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                      float* __restrict__ c, long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long addresses = reinterpret_cast<unsigned long long>(a) |
                                       reinterpret_cast<unsigned long long>(b) |
                                       reinterpret_cast<unsigned long long>(c);
  long long scalar_begin = 0;
  if ((addresses & 15ull) == 0) {
    const long long vectors = n / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* b4 = reinterpret_cast<const float4*>(b);
    float4* c4 = reinterpret_cast<float4*>(c);
    for (long long i = thread; i < vectors; i += stride) {
      const float4 x = a4[i];
      const float4 y = b4[i];
      c4[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
    scalar_begin = vectors * 4;
  }
  for (long long i = scalar_begin + thread; i < n; i += stride) c[i] = a[i] + b[i];
}
