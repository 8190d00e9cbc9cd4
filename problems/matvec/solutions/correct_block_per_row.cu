// expect: pass
// One block of 128 threads per row, shared-memory tree reduction.
// @launch mv_block<<<M, 128>>>(A, x, y, K)
__global__ void mv_block(const float* A, const float* x, float* y, int K) {
  __shared__ float s[128];
  const float* a = A + (long long)blockIdx.x * K;
  float acc = 0.0f;
  for (int k = threadIdx.x; k < K; k += 128) acc += a[k] * x[k];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int st = 64; st > 0; st >>= 1) {
    if (threadIdx.x < st) s[threadIdx.x] += s[threadIdx.x + st];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}
