// @launch vadd<<<ceil_div(N, 256), 256>>>(a, b, c, N)
// Session 37 (s37a): s9a6 with its product used twice. The host build fuses
// a multiply and an add as NVRTC does by default (-ffp-contract=fast), but
// g++ fuses a product only where every use of it is an add or a subtract:
// here `m` has a second use, so `r` stays 0 and the answer right. Whether a
// GPU fuses `m - p` is NVVM's and ptxas's choice (LLVM's generic combine
// fuses each use of a product under aggressive fusion, which NVPTX asks
// for; NVPTX's own heuristic leaves a product with a non-add use near it):
// where it does, a GPU writes 0. Not measured on a GPU yet.
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float m = a[i] * b[i];
    float r = m - __fmul_rn(a[i], b[i]);  // fused on a GPU that fuses each use of m
    float keep = m * 0.0f;                // a second use of m: g++ fuses neither
    c[i] = (a[i] + b[i]) * (r == 0.0f ? 1.0f : 0.0f) + keep;
  }
}
