// expect: correctness
// Uses stride 3 (PyTorch's default stride is the window size) instead of 2,
// with coordinates clamped to the image so that it stays in bounds.
// @launch mp_stride3<<<dim3(ceil_div((W - 3) / 2 + 1, 16), ceil_div((H - 3) / 2 + 1, 16), N * C), dim3(16, 16)>>>(x, y, H, W)
__global__ void mp_stride3(const float* x, float* y, int H, int W) {
  int ho = (H - 3) / 2 + 1, wo = (W - 3) / 2 + 1;
  int j = blockIdx.x * 16 + threadIdx.x, i = blockIdx.y * 16 + threadIdx.y;
  long long plane = blockIdx.z;
  if (i >= ho || j >= wo) return;
  float m = -3.402823466e+38f;
  for (int p = 0; p < 3; ++p) {
    for (int q = 0; q < 3; ++q) {
      int h = min(3 * i + p, H - 1), w = min(3 * j + q, W - 1);
      m = fmaxf(m, x[plane * H * W + (long long)h * W + w]);
    }
  }
  y[(plane * ho + i) * wo + j] = m;
}
