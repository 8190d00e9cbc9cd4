// expect: pass
// One thread per element of C, fp32 products and sum on CUDA cores.
// @launch mm_naive<<<dim3(ceil_div(N, 16), ceil_div(M, 16)), dim3(16, 16)>>>(A, B, C, M, N, K)
__global__ void mm_naive(const float* A, const float* B, float* C, int M, int N, int K) {
  const int col = blockIdx.x * 16 + threadIdx.x;
  const int row = blockIdx.y * 16 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[(long long)row * K + k] * B[(long long)k * N + col];
  C[(long long)row * N + col] = acc;
}
