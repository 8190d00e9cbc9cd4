// Reference for conv2d: y[n, o, h, w] = sum_{i, p, q} x[n, i, h + p, w + q] * wt[o, i, p, q]
// (stride 1, no padding, no bias; HOUT = H - K + 1, WOUT = W - K + 1).
//
// Each block computes a 16 x 16 tile of output pixels for 4 output channels
// of one sample (256 threads, one pixel each, 4 accumulators). For every
// input channel the (15 + K) x (15 + K) input patch and the 4 x K x K weights
// are staged in shared memory and reused by all threads. Grid: x, y = output
// tiles, z = sample * ceil(COUT / 4) + channel group. Dynamic shared memory:
// ((15 + K)^2 + 4 K^2) floats.
#define TILE_OUT 16
#define CHANNEL_GROUP 4

__global__ void __launch_bounds__(TILE_OUT* TILE_OUT)
    conv2d_kernel(const float* __restrict__ x, const float* __restrict__ wt, float* __restrict__ y,
                  int cin, int cout, int height, int width, int k) {
  extern __shared__ float shared[];
  const int patch = TILE_OUT + k - 1;
  float* input = shared;                    // [patch][patch]
  float* weights = shared + patch * patch;  // [CHANNEL_GROUP][k][k]
  const int out_height = height - k + 1;
  const int out_width = width - k + 1;
  const int groups = (cout + CHANNEL_GROUP - 1) / CHANNEL_GROUP;
  const long long n = blockIdx.z / groups;
  const int o0 = (blockIdx.z % groups) * CHANNEL_GROUP;
  const int h0 = blockIdx.y * TILE_OUT;
  const int w0 = blockIdx.x * TILE_OUT;
  const int tid = threadIdx.y * TILE_OUT + threadIdx.x;

  float acc[CHANNEL_GROUP] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int i = 0; i < cin; ++i) {
    const float* plane = x + (n * cin + i) * height * width;
    for (int e = tid; e < patch * patch; e += TILE_OUT * TILE_OUT) {
      const int h = h0 + e / patch;
      const int w = w0 + e % patch;
      input[e] = (h < height && w < width) ? plane[static_cast<long long>(h) * width + w] : 0.0f;
    }
    for (int e = tid; e < CHANNEL_GROUP * k * k; e += TILE_OUT * TILE_OUT) {
      const int o = o0 + e / (k * k);
      weights[e] =
          o < cout ? wt[((static_cast<long long>(o) * cin + i) * k * k) + e % (k * k)] : 0.0f;
    }
    __syncthreads();
    for (int p = 0; p < k; ++p) {
      for (int q = 0; q < k; ++q) {
        const float v = input[(threadIdx.y + p) * patch + threadIdx.x + q];
        for (int c = 0; c < CHANNEL_GROUP; ++c)
          acc[c] = fmaf(v, weights[(c * k + p) * k + q], acc[c]);
      }
    }
    __syncthreads();
  }

  const int h = h0 + threadIdx.y;
  const int w = w0 + threadIdx.x;
  if (h < out_height && w < out_width) {
    for (int c = 0; c < CHANNEL_GROUP; ++c) {
      const int o = o0 + c;
      if (o < cout) {
        y[((n * cout + o) * out_height + h) * static_cast<long long>(out_width) + w] = acc[c];
      }
    }
  }
}
