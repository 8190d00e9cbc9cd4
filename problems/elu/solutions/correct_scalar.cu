// expect: pass
// One element per thread; expf(x) - 1 (within tolerance of expm1).
// @launch elu_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void elu_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v > 0.0f ? v : expf(v) - 1.0f;
  }
}
