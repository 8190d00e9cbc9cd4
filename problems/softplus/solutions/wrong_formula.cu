// expect: correctness
// Bug: stable form with max(x, 0) replaced by x.
// @launch softplus_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void softplus_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v + log1pf(expf(-fabsf(v)));
  }
}
