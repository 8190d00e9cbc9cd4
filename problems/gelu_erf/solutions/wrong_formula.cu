// expect: correctness
// Bug: divides by 2 instead of sqrt(2) inside erf.
// @launch gelu_erf_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void gelu_erf_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + erff(v * 0.5f));
  }
}
