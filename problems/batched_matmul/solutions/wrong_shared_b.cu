// expect: correctness
// Offsets A and C by the batch but not B: every batch is multiplied by B[0].
// @launch bmm_bug<<<dim3(ceil_div(N, 16), ceil_div(M, 16), BATCH), dim3(16, 16)>>>(A, B, C, M, N, K)
__global__ void bmm_bug(const float* A, const float* B, float* C, int M, int N, int K) {
  int col = blockIdx.x * 16 + threadIdx.x;
  int row = blockIdx.y * 16 + threadIdx.y;
  long long b = blockIdx.z;
  if (row >= M || col >= N) return;
  const float* a = A + b * M * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += a[(long long)row * K + k] * B[(long long)k * N + col];
  C[b * M * N + (long long)row * N + col] = acc;
}
