// expect: pass
// One element per thread; the overflow-free form.
// @launch softplus_simple<<<ceil_div(N, 128), 128>>>(x, y, N)
__global__ void softplus_simple(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = fmaxf(v, 0.0f) + log1pf(expf(-fabsf(v)));
  }
}
