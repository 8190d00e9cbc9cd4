// Reference for silu_f16: y[i] = x / (1 + exp(-x)) for i in [0, N), fp16 in and out,
// computed in fp32 and rounded once to fp16.
//
// Memory-bound: a grid-stride loop moves 8 elements (one 16-byte vector of
// four __half2 pairs) per thread when x and y are 16-byte aligned, then a
// scalar loop covers the N % 8 tail (or everything, for unaligned pointers).
#include <cuda_fp16.h>

struct alignas(16) Packed8 {
  __half2 pair[4];
};

__device__ __forceinline__ float activation(float v) { return v / (1.0f + expf(-v)); }

__device__ __forceinline__ __half2 activation2(__half2 h) {
  const float2 f = __half22float2(h);
  return __floats2half2_rn(activation(f.x), activation(f.y));
}

__global__ void __launch_bounds__(256)
    silu_f16_kernel(const __half* __restrict__ x, __half* __restrict__ y, long long n) {
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
    y[i] = __float2half(activation(__half2float(x[i])));
  }
}
