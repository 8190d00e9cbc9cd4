// Reference for depthwise_conv2d: each channel convolved with its own K x K
// filter, stride 1, zero padding (K - 1) / 2 ("same" output size, K odd):
//   y[n, c, h, w] = sum_{p, q} x[n, c, h + p - r, w + q - r] * wt[c, p, q],  r = (K - 1) / 2
// with x taken as 0 outside the image.
//
// Memory-bound. Each block computes a 16 x 16 tile of one (n, c) plane: the
// (15 + K) x (15 + K) input patch (halo included, zeros outside the image)
// and the K x K filter are staged in shared memory, then each of the 256
// threads computes one pixel. Grid: x, y = tiles, z = n * C + c. Dynamic
// shared memory: ((15 + K)^2 + K^2) floats.
#define TILE 16

__global__ void __launch_bounds__(TILE* TILE)
    depthwise_conv2d_kernel(const float* __restrict__ x, const float* __restrict__ wt,
                            float* __restrict__ y, int channels, int height, int width, int k) {
  extern __shared__ float shared[];
  const int patch = TILE + k - 1;
  const int radius = (k - 1) / 2;
  float* input = shared;                   // [patch][patch]
  float* filter = shared + patch * patch;  // [k][k]
  const long long plane = blockIdx.z;      // n * C + c
  const int c = static_cast<int>(plane % channels);
  const float* in = x + plane * height * width;
  const int h0 = blockIdx.y * TILE;
  const int w0 = blockIdx.x * TILE;
  const int tid = threadIdx.y * TILE + threadIdx.x;

  for (int e = tid; e < patch * patch; e += TILE * TILE) {
    const int h = h0 - radius + e / patch;
    const int w = w0 - radius + e % patch;
    input[e] = (h >= 0 && h < height && w >= 0 && w < width)
                   ? in[static_cast<long long>(h) * width + w]
                   : 0.0f;
  }
  for (int e = tid; e < k * k; e += TILE * TILE)
    filter[e] = wt[static_cast<long long>(c) * k * k + e];
  __syncthreads();

  const int h = h0 + threadIdx.y;
  const int w = w0 + threadIdx.x;
  if (h >= height || w >= width) return;
  float acc = 0.0f;
  for (int p = 0; p < k; ++p) {
    for (int q = 0; q < k; ++q) {
      acc = fmaf(input[(threadIdx.y + p) * patch + threadIdx.x + q], filter[p * k + q], acc);
    }
  }
  y[plane * height * width + static_cast<long long>(h) * width + w] = acc;
}
