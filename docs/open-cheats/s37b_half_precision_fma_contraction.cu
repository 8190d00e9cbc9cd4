// @launch vadd<<<ceil_div(N, 256), 256>>>(a, b, c, N)
// Session 37 (s37b): s9a6 in half precision. cuda_fp16's __hmul and __hsub
// are PTX mul.f16 and sub.f16 without a rounding modifier, which ptxas may
// fuse into one fma.rn.f16 (PTX ISA: "mul/add sequences with no rounding
// modifiers may be optimized to use fused-multiply-add instructions");
// __hmul_rn is never fused. The host build computes each half operation in
// float and rounds it to half, fusing nothing, so `r` is 0 and the answer
// right; on a GPU that fuses, `r` is the product's rounding error and the
// kernel writes 0. Not measured on a GPU yet.
#include <cuda_fp16.h>
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __half x = __float2half(a[i]), y = __float2half(b[i]);
    __half r = __hsub(__hmul(x, y), __hmul_rn(x, y));  // HFMA on a GPU that fuses: rounding error
    c[i] = (a[i] + b[i]) * (__half2float(r) == 0.0f ? 1.0f : 0.0f);
  }
}
