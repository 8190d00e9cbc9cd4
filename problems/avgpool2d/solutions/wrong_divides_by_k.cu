// expect: correctness
// Divides the window sum by K instead of K * K.
// @launch ap_bad<<<dim3(ceil_div(W / K, 16), ceil_div(H / K, 16), N * C), dim3(16, 16)>>>(x, y, H, W, K)
__global__ void ap_bad(const float* x, float* y, int H, int W, int K) {
  int ho = H / K, wo = W / K;
  int j = blockIdx.x * 16 + threadIdx.x, i = blockIdx.y * 16 + threadIdx.y;
  long long plane = blockIdx.z;
  if (i >= ho || j >= wo) return;
  float s = 0.0f;
  for (int p = 0; p < K; ++p)
    for (int q = 0; q < K; ++q) s += x[plane * H * W + (long long)(K * i + p) * W + K * j + q];
  y[(plane * ho + i) * wo + j] = s / K;
}
