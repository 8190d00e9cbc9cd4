// expect: correctness
// Online softmax whose merge of (max, sum) pairs forgets to rescale the sums
// to the common maximum: sum = s1 + s2 instead of
// s1 * exp(m1 - m) + s2 * exp(m2 - m).
// @launch sm_online<<<ROWS, 256>>>(x, y, COLS)
__global__ void sm_online(const float* x, float* y, int cols) {
  __shared__ float sm[256];
  __shared__ float ss[256];
  const float* in = x + (long long)blockIdx.x * cols;
  float* out = y + (long long)blockIdx.x * cols;
  float m = -3.402823466e+38f, s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    float v = in[c];
    float nm = fmaxf(m, v);
    s = s * expf(m - nm) + expf(v - nm);
    m = nm;
  }
  sm[threadIdx.x] = m;
  ss[threadIdx.x] = s;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) {
      sm[threadIdx.x] = fmaxf(sm[threadIdx.x], sm[threadIdx.x + k]);
      ss[threadIdx.x] = ss[threadIdx.x] + ss[threadIdx.x + k];
    }
    __syncthreads();
  }
  float row_max = sm[0], inv = 1.0f / ss[0];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - row_max) * inv;
}
