// expect: correctness
// erf(x) instead of erf(x / sqrt(2)).
// @launch gelu_k<<<ceil_div(N, 256), 256>>>(x, y, N)
#include <cuda_bf16.h>
__global__ void gelu_k(const __nv_bfloat16* x, __nv_bfloat16* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = __bfloat162float(x[i]);
    y[i] = __float2bfloat16(0.5f * v * (1.0f + erff(v)));
  }
}
