// expect: pass
// Two elements per thread through __half2, with a scalar thread for an odd N.
// @launch silu_pairs<<<ceil_div(ceil_div(N, 2), 128), 128>>>(x, y, N)
#include <cuda_fp16.h>
__device__ float silu(float v) { return v / (1.0f + expf(-v)); }
__global__ void silu_pairs(const __half* x, __half* y, int n) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  int i = 2 * p;
  if (i + 1 < n) {
    __half2 h = reinterpret_cast<const __half2*>(x)[p];
    float2 f = __half22float2(h);
    reinterpret_cast<__half2*>(y)[p] = __floats2half2_rn(silu(f.x), silu(f.y));
  } else if (i < n) {
    y[i] = __float2half(silu(__half2float(x[i])));
  }
}
