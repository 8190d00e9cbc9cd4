// expect: correctness
// Grid sized for two elements per thread (copied from a __half2 version) but
// the kernel does one: only the first half of y is written.
// @launch silu_k<<<ceil_div(N, 512), 256>>>(x, y, N)
#include <cuda_fp16.h>
__global__ void silu_k(const __half* x, __half* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = __half2float(x[i]);
    y[i] = __float2half(v / (1.0f + expf(-v)));
  }
}
