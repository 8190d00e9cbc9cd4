// Reference for maxpool2d: 3 x 3 windows, stride 2, no padding:
//   y[n, c, i, j] = max_{p, q < 3} x[n, c, 2 i + p, 2 j + q]
// with HOUT = (H - 3) / 2 + 1, WOUT = (W - 3) / 2 + 1.
//
// Memory-bound. A grid-stride loop gives each thread one output at a time
// (consecutive threads take consecutive outputs of a row, so the nine loads
// of a warp fall on a few contiguous segments).
#define POOL 3
#define STRIDE 2

__global__ void __launch_bounds__(256)
    maxpool2d_kernel(const float* __restrict__ x, float* __restrict__ y, long long planes,
                     int height, int width) {
  const int out_height = (height - POOL) / STRIDE + 1;
  const int out_width = (width - POOL) / STRIDE + 1;
  const long long total = planes * out_height * out_width;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride) {
    const int j = static_cast<int>(e % out_width);
    const int i = static_cast<int>((e / out_width) % out_height);
    const long long plane = e / (static_cast<long long>(out_width) * out_height);
    const float* in =
        x + plane * height * width + static_cast<long long>(STRIDE * i) * width + STRIDE * j;
    float best = in[0];
    for (int p = 0; p < POOL; ++p) {
      for (int q = 0; q < POOL; ++q) best = fmaxf(best, in[p * width + q]);
    }
    y[e] = best;
  }
}
