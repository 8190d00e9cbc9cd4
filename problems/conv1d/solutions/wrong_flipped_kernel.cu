// expect: correctness
// Flips the kernel (a true convolution, x[l + k] * w[KW - 1 - k]), while the
// problem asks for cross-correlation like every deep-learning framework.
// @launch conv1d_flip<<<dim3(ceil_div(L - KW + 1, 128), COUT, N), 128>>>(x, w, y, CIN, COUT, L, KW)
__global__ void conv1d_flip(const float* x, const float* w, float* y, int cin, int cout, int L,
                            int kw) {
  int lout = L - kw + 1;
  int l = blockIdx.x * blockDim.x + threadIdx.x;
  int o = blockIdx.y;
  long long n = blockIdx.z;
  if (l >= lout) return;
  float acc = 0.0f;
  for (int i = 0; i < cin; ++i) {
    const float* xr = x + (n * cin + i) * L;
    const float* wr = w + ((long long)o * cin + i) * kw;
    for (int k = 0; k < kw; ++k) acc += xr[l + k] * wr[kw - 1 - k];
  }
  y[(n * cout + o) * lout + l] = acc;
}
