// expect: correctness
// Hard-codes the timed shape's K = 64 (B staged in a fixed 64 x 64 shared
// array): shapes with another K multiply the wrong number of terms.
// @launch ts_fixed<<<ceil_div(M, 64), 64>>>(A, B, C, M, N, K)
#define KDIM 64
__global__ void ts_fixed(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float Bs[KDIM][KDIM];
  for (int e = threadIdx.x; e < KDIM * KDIM; e += blockDim.x) {
    int k = e / KDIM, n = e % KDIM;
    Bs[k][n] = (k < K && n < N) ? B[(long long)k * N + n] : 0.0f;
  }
  __syncthreads();
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  for (int n = 0; n < N && n < KDIM; ++n) {
    float acc = 0.0f;
    for (int k = 0; k < KDIM; ++k) acc += (k < K ? A[(long long)row * K + k] : 0.0f) * Bs[k][n];
    C[(long long)row * N + n] = acc;
  }
}
