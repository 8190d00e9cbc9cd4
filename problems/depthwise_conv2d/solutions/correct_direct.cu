// expect: pass
// One thread per output pixel, bounds checked per tap.
// @launch dw_direct<<<dim3(ceil_div(H * W, 128), N * C), 128>>>(x, wt, y, C, H, W, K)
__global__ void dw_direct(const float* x, const float* wt, float* y, int C, int H, int W, int K) {
  int pix = blockIdx.x * blockDim.x + threadIdx.x;
  long long plane = blockIdx.y;
  if (pix >= H * W) return;
  int h = pix / W, w = pix % W, r = (K - 1) / 2;
  int c = (int)(plane % C);
  float acc = 0.0f;
  for (int p = 0; p < K; ++p) {
    for (int q = 0; q < K; ++q) {
      int hh = h + p - r, ww = w + q - r;
      if (hh >= 0 && hh < H && ww >= 0 && ww < W) {
        acc += x[plane * H * W + (long long)hh * W + ww] * wt[(long long)c * K * K + p * K + q];
      }
    }
  }
  y[plane * H * W + pix] = acc;
}
