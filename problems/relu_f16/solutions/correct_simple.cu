// expect: pass
// One element per thread, compared in fp32.
// @launch relu_half<<<ceil_div(N, 256), 256>>>(x, y, N)
#include <cuda_fp16.h>
__global__ void relu_half(const __half* x, __half* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __half2float(x[i]) > 0.0f ? x[i] : __float2half(0.0f);
}
