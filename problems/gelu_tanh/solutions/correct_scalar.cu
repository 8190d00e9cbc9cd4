// expect: pass
// One element per thread; 0.5 (1 + tanh(z)) = sigmoid(2 z).
// @launch gelu_tanh_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void gelu_tanh_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v / (1.0f + expf(-1.5957691216f * (v + 0.044715f * v * v * v)));
  }
}
