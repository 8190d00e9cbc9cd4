// expect: correctness
// Off-by-one bounds check: the last element is never written.
// @launch elu_k<<<ceil_div(N, 256), 256>>>(x, y, N)
__global__ void elu_k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n - 1) {
    float v = x[i];
    y[i] = v > 0.0f ? v : expm1f(v);
  }
}
