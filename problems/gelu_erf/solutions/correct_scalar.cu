// expect: pass
// One element per thread; via erfc (more accurate for x < 0).
// @launch gelu_erf_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void gelu_erf_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * erfcf(-v * 0.70710678118f);
  }
}
