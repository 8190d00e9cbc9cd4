// expect: pass
// One thread per row of C: reads its row of A once, loops over the columns
// of B (B is small and cached).
// @launch ts_rows<<<ceil_div(M, 128), 128>>>(A, B, C, M, N, K)
__global__ void ts_rows(const float* A, const float* B, float* C, int M, int N, int K) {
  int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const float* a = A + (long long)row * K;
  for (int n = 0; n < N; ++n) {
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc += a[k] * B[(long long)k * N + n];
    C[(long long)row * N + n] = acc;
  }
}
