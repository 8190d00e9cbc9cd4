// expect: pass
// One element per thread; GELU through erfc.
// @launch gelu_simple<<<ceil_div(N, 256), 256>>>(x, y, N)
#include <cuda_bf16.h>
__global__ void gelu_simple(const __nv_bfloat16* x, __nv_bfloat16* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = __bfloat162float(x[i]);
    y[i] = __float2bfloat16(0.5f * v * erfcf(-v * 0.70710678118f));
  }
}
