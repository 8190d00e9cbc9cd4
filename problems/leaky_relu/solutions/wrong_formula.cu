// expect: correctness
// Bug: negative slope 0.1 instead of 0.01 (a common mix-up).
// @launch leaky_relu_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void leaky_relu_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v > 0.0f ? v : 0.1f * v;
  }
}
