// expect: pass
// One element per thread; branch-free form.
// @launch leaky_relu_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void leaky_relu_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = fmaxf(v, 0.0f) + 0.01f * fminf(v, 0.0f);
  }
}
