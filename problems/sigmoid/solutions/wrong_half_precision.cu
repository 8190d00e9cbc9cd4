// expect: correctness
// Computes the sigmoid in half precision (__half arithmetic): outputs carry
// fp16 rounding (~5e-4 relative), above the f32 tolerance.
// @launch sigmoid_half<<<ceil_div(N, 256), 256>>>(x, y, N)
#include <cuda_fp16.h>
__global__ void sigmoid_half(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __half h = __float2half(x[i]);
    __half one = __float2half(1.0f);
    __half e = hexp(__hneg(h));
    y[i] = __half2float(__hdiv(one, __hadd(one, e)));
  }
}
