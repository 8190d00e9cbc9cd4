// Reference for gelu_bf16: y[i] = 0.5 x (1 + erf(x / sqrt(2))) for i in [0, N), bf16 in and out,
// computed in fp32 and rounded once to bf16.
//
// Memory-bound: a grid-stride loop moves 8 elements (one 16-byte vector of
// four __nv_bfloat162 pairs) per thread when x and y are 16-byte aligned, then a
// scalar loop covers the N % 8 tail (or everything, for unaligned pointers).
#include <cuda_bf16.h>

struct alignas(16) Packed8 {
  __nv_bfloat162 pair[4];
};

__device__ __forceinline__ float activation(float v) {
  return 0.5f * v * (1.0f + erff(v * 0.70710678118f));
}

__device__ __forceinline__ __nv_bfloat162 activation2(__nv_bfloat162 h) {
  const float2 f = __bfloat1622float2(h);
  return __floats2bfloat162_rn(activation(f.x), activation(f.y));
}

__global__ void __launch_bounds__(256)
    gelu_bf16_kernel(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y,
                     long long n) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long thread = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const unsigned long long addresses =
      reinterpret_cast<unsigned long long>(x) | reinterpret_cast<unsigned long long>(y);
  long long scalar_begin = 0;
  if ((addresses & 15ull) == 0) {
    const long long vectors = n / 8;
    const Packed8* x8 = reinterpret_cast<const Packed8*>(x);
    Packed8* y8 = reinterpret_cast<Packed8*>(y);
    for (long long i = thread; i < vectors; i += stride) {
      Packed8 v = x8[i];
      for (int p = 0; p < 4; ++p) v.pair[p] = activation2(v.pair[p]);
      y8[i] = v;
    }
    scalar_begin = vectors * 8;
  }
  for (long long i = scalar_begin + thread; i < n; i += stride) {
    y[i] = __float2bfloat16(activation(__bfloat162float(x[i])));
  }
}
