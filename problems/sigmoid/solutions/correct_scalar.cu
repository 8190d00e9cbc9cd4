// expect: pass
// One element per thread; sigmoid(x) = (1 + tanh(x / 2)) / 2.
// @launch sigmoid_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void sigmoid_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * tanhf(0.5f * v) + 0.5f;
  }
}
