// expect: pass
// One element per thread; explicit comparisons.
// @launch hardtanh_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void hardtanh_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v < -1.0f ? -1.0f : (v > 1.0f ? 1.0f : v);
  }
}
