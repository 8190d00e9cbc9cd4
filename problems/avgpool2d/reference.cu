// Reference for avgpool2d: non-overlapping K x K windows (stride K, no
// padding, a partial last window dropped):
//   y[n, c, i, j] = (1 / K^2) sum_{p, q < K} x[n, c, K i + p, K j + q]
// with HOUT = H / K, WOUT = W / K (integer division).
//
// Memory-bound. A grid-stride loop gives each thread one output at a time;
// consecutive threads take consecutive outputs of a row.
__global__ void __launch_bounds__(256)
    avgpool2d_kernel(const float* __restrict__ x, float* __restrict__ y, long long planes,
                     int height, int width, int k) {
  const int out_height = height / k;
  const int out_width = width / k;
  const long long total = planes * out_height * out_width;
  const float scale = 1.0f / static_cast<float>(k * k);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long e = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride) {
    const int j = static_cast<int>(e % out_width);
    const int i = static_cast<int>((e / out_width) % out_height);
    const long long plane = e / (static_cast<long long>(out_width) * out_height);
    const float* in = x + plane * height * width + static_cast<long long>(k * i) * width + k * j;
    float sum = 0.0f;
    for (int p = 0; p < k; ++p) {
      for (int q = 0; q < k; ++q) sum += in[p * width + q];
    }
    y[e] = sum * scale;
  }
}
