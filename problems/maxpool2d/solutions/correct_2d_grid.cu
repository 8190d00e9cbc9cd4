// expect: pass
// A 2-D grid over output pixels, one plane per grid z.
// @launch mp_2d<<<dim3(ceil_div((W - 3) / 2 + 1, 16), ceil_div((H - 3) / 2 + 1, 16), N * C), dim3(16, 16)>>>(x, y, H, W)
__global__ void mp_2d(const float* x, float* y, int H, int W) {
  int ho = (H - 3) / 2 + 1, wo = (W - 3) / 2 + 1;
  int j = blockIdx.x * 16 + threadIdx.x, i = blockIdx.y * 16 + threadIdx.y;
  long long plane = blockIdx.z;
  if (i >= ho || j >= wo) return;
  float m = -3.402823466e+38f;
  for (int p = 0; p < 3; ++p)
    for (int q = 0; q < 3; ++q) m = fmaxf(m, x[plane * H * W + (long long)(2 * i + p) * W + 2 * j + q]);
  y[(plane * ho + i) * wo + j] = m;
}
