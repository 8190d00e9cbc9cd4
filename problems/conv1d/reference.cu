// Reference for conv1d: y[n, o, l] = sum_{i, k} x[n, i, l + k] * w[o, i, k]
// (stride 1, no padding, no bias; LOUT = L - KW + 1).
//
// Each block computes 128 consecutive output positions for 8 output
// channels of one sample (256 threads: thread t owns position t % 128 and
// output channels t / 128, t / 128 + 2, ...). The weights of the 8 channels
// sit in shared memory for the whole block; for each input channel the
// needed window of x (128 + KW - 1 values) is staged in shared memory and
// reused by the 8 channels and the KW taps. Dynamic shared memory:
// (8 * CIN * KW + 127 + KW) floats.
#define CONV_POSITIONS 128
#define CONV_CHANNELS 8
#define CONV_THREADS 256
#define CHANNELS_PER_THREAD (CONV_CHANNELS * CONV_POSITIONS / CONV_THREADS)  // 4

__global__ void __launch_bounds__(CONV_THREADS)
    conv1d_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                  int cin, int cout, int length, int kw) {
  extern __shared__ float shared[];
  const int out_length = length - kw + 1;
  float* weights = shared;                            // [CONV_CHANNELS][cin * kw]
  float* window = shared + CONV_CHANNELS * cin * kw;  // [CONV_POSITIONS + kw - 1]
  const int l0 = blockIdx.x * CONV_POSITIONS;
  const int o0 = blockIdx.y * CONV_CHANNELS;
  const long long n = blockIdx.z;

  const int taps = cin * kw;
  for (int e = threadIdx.x; e < CONV_CHANNELS * taps; e += blockDim.x) {
    const int o = o0 + e / taps;
    weights[e] = o < cout ? w[static_cast<long long>(o) * taps + e % taps] : 0.0f;
  }

  const int position = threadIdx.x % CONV_POSITIONS;
  const int first_channel = threadIdx.x / CONV_POSITIONS;  // 0 or 1
  float acc[CHANNELS_PER_THREAD];
  for (int j = 0; j < CHANNELS_PER_THREAD; ++j) acc[j] = 0.0f;

  const int window_size = CONV_POSITIONS + kw - 1;
  for (int i = 0; i < cin; ++i) {
    __syncthreads();  // the previous window is no longer read (and weights are ready)
    const float* row = x + (n * cin + i) * length;
    for (int e = threadIdx.x; e < window_size; e += blockDim.x) {
      window[e] = l0 + e < length ? row[l0 + e] : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < kw; ++k) {
      const float v = window[position + k];
      for (int j = 0; j < CHANNELS_PER_THREAD; ++j) {
        const int c = first_channel + 2 * j;
        acc[j] = fmaf(v, weights[c * taps + i * kw + k], acc[j]);
      }
    }
  }

  const int l = l0 + position;
  if (l < out_length) {
    for (int j = 0; j < CHANNELS_PER_THREAD; ++j) {
      const int o = o0 + first_channel + 2 * j;
      if (o < cout) y[(n * cout + o) * out_length + l] = acc[j];
    }
  }
}
