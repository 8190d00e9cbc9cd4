// expect: pass
// One thread per output pixel and channel, direct loops.
// @launch conv2d_direct<<<dim3(ceil_div((H - K + 1) * (W - K + 1), 128), COUT, N), 128>>>(x, wt, y, CIN, COUT, H, W, K)
__global__ void conv2d_direct(const float* x, const float* wt, float* y, int cin, int cout, int H,
                              int W, int K) {
  int ho = H - K + 1, wo = W - K + 1;
  int pix = blockIdx.x * blockDim.x + threadIdx.x;
  int o = blockIdx.y;
  long long n = blockIdx.z;
  if (pix >= ho * wo) return;
  int h = pix / wo, w = pix % wo;
  float acc = 0.0f;
  for (int i = 0; i < cin; ++i) {
    for (int p = 0; p < K; ++p) {
      for (int q = 0; q < K; ++q) {
        acc += x[((n * cin + i) * H + h + p) * W + w + q] * wt[(((long long)o * cin + i) * K + p) * K + q];
      }
    }
  }
  y[(n * cout + o) * ho * wo + pix] = acc;
}
