// expect: correctness
// Normalises each channel with its own statistics (instance norm) instead of
// pooling the C / G channels of a group: right only when G == C.
// @launch gn_instance<<<N * C, 256>>>(x, gamma, beta, y, C, H * W)
__global__ void gn_instance(const float* x, const float* gamma, const float* beta, float* y, int C,
                            int hw) {
  __shared__ float s1[256];
  __shared__ float s2[256];
  const float* in = x + (long long)blockIdx.x * hw;
  float* out = y + (long long)blockIdx.x * hw;
  int c = blockIdx.x % C;
  float a = 0.0f;
  for (int i = threadIdx.x; i < hw; i += blockDim.x) a += in[i];
  s1[threadIdx.x] = a;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) s1[threadIdx.x] += s1[threadIdx.x + s];
    __syncthreads();
  }
  float mean = s1[0] / hw;
  float b = 0.0f;
  for (int i = threadIdx.x; i < hw; i += blockDim.x) b += (in[i] - mean) * (in[i] - mean);
  s2[threadIdx.x] = b;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) s2[threadIdx.x] += s2[threadIdx.x + s];
    __syncthreads();
  }
  float rstd = rsqrtf(s2[0] / hw + 1e-5f);
  for (int i = threadIdx.x; i < hw; i += blockDim.x) out[i] = (in[i] - mean) * rstd * gamma[c] + beta[c];
}
