// expect: correctness
// Bug: x^2 instead of x^3 in the cubic term.
// @launch gelu_tanh_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void gelu_tanh_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v)));
  }
}
