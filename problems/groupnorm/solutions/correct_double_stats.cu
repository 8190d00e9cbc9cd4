// expect: pass
// One pass for the statistics, sum and sum of squares accumulated in double
// (no cancellation problem at this precision), then a second pass to write.
// @launch gn_double<<<N * G, 256>>>(x, gamma, beta, y, C, H * W, G)
__global__ void gn_double(const float* x, const float* gamma, const float* beta, float* y, int C,
                          int hw, int G) {
  __shared__ double s1[256];
  __shared__ double s2[256];
  int cpg = C / G;
  long long size = (long long)cpg * hw;
  const float* in = x + (long long)blockIdx.x * size;
  float* out = y + (long long)blockIdx.x * size;
  double a = 0.0, b = 0.0;
  for (long long i = threadIdx.x; i < size; i += blockDim.x) {
    double v = in[i];
    a += v;
    b += v * v;
  }
  s1[threadIdx.x] = a;
  s2[threadIdx.x] = b;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      s1[threadIdx.x] += s1[threadIdx.x + s];
      s2[threadIdx.x] += s2[threadIdx.x + s];
    }
    __syncthreads();
  }
  double mean = s1[0] / size;
  double var = s2[0] / size - mean * mean;
  float rstd = (float)(1.0 / sqrt(var + 1e-5));
  int c0 = (blockIdx.x % G) * cpg;
  for (long long i = threadIdx.x; i < size; i += blockDim.x) {
    int c = c0 + (int)(i / hw);
    out[i] = ((in[i] - (float)mean) * rstd) * gamma[c] + beta[c];
  }
}
