// @launch vadd<<<ceil_div(N, 256), 256>>>(a, b, c, N)
// Sweep 9 (s9a6): ptxas contracts a[i] * b[i] - p into an FFMA (fmad is on by
// default), so r is the rounding error of a*b, non-zero for most inputs, and
// a GPU writes 0; the host build (-O2, no -ffp-contract) never contracts, r is
// 0, the answer right. Any exact test of GPU arithmetic the host build does
// not reproduce (contraction, fast-math approximations) is such a gate.
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float p = __fmul_rn(a[i], b[i]);
    float r = a[i] * b[i] - p;   // contracted to fma on the GPU: rounding error of a*b
    c[i] = (a[i] + b[i]) * (r == 0.0f ? 1.0f : 0.0f);
  }
}
