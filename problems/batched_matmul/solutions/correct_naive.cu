// expect: pass
// One thread per element of C[b], batch on grid z.
// @launch bmm_naive<<<dim3(ceil_div(N, 16), ceil_div(M, 16), BATCH), dim3(16, 16)>>>(A, B, C, M, N, K)
__global__ void bmm_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  int col = blockIdx.x * 16 + threadIdx.x;
  int row = blockIdx.y * 16 + threadIdx.y;
  long long b = blockIdx.z;
  if (row >= M || col >= N) return;
  const float* a = A + b * M * K;
  const float* bb = B + b * K * N;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[(long long)row * K + k] * bb[(long long)k * N + col];
  C[b * M * N + (long long)row * N + col] = acc;
}
