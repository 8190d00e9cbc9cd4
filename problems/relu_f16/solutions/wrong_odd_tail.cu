// expect: correctness
// Processes __half2 pairs only: for an odd N the last element is never written.
// @launch relu_pairs<<<ceil_div(N, 512), 256>>>(x, y, N)
#include <cuda_fp16.h>
__global__ void relu_pairs(const __half* x, __half* y, int n) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p < n / 2) {
    __half2 h = reinterpret_cast<const __half2*>(x)[p];
    float2 f = __half22float2(h);
    reinterpret_cast<__half2*>(y)[p] = __floats2half2_rn(fmaxf(f.x, 0.0f), fmaxf(f.y, 0.0f));
  }
}
