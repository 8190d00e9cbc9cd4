// expect: pass
// One element per thread; tanh via one exponential.
// @launch tanh_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void tanh_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 1.0f - 2.0f / (expf(2.0f * v) + 1.0f);
  }
}
