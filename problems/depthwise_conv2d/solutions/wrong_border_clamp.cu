// expect: correctness
// Clamps coordinates at the border (replicate padding) instead of reading
// zeros: every pixel within K / 2 of an edge is wrong.
// @launch dw_clamp<<<dim3(ceil_div(H * W, 128), N * C), 128>>>(x, wt, y, C, H, W, K)
__global__ void dw_clamp(const float* x, const float* wt, float* y, int C, int H, int W, int K) {
  int pix = blockIdx.x * blockDim.x + threadIdx.x;
  long long plane = blockIdx.y;
  if (pix >= H * W) return;
  int h = pix / W, w = pix % W, r = (K - 1) / 2;
  int c = (int)(plane % C);
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) {
    for (int q = 0; q < K; ++q) {
      int hh = min(max(h + p - r, 0), H - 1), ww = min(max(w + q - r, 0), W - 1);
      acc += x[plane * H * W + (long long)hh * W + ww] * wt[(long long)c * K * K + p * K + q];
    }
  }
  y[plane * H * W + pix] = acc;
}
