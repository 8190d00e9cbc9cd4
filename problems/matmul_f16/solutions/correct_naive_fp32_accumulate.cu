// expect: pass
// One thread per element of C; products and sum in fp32, one rounding at the end.
// @launch mm_naive<<<dim3(ceil_div(N, 16), ceil_div(M, 16)), dim3(16, 16)>>>(A, B, C, M, N, K)
#include <cuda_fp16.h>
__global__ void mm_naive(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  int col = blockIdx.x * 16 + threadIdx.x;
  int row = blockIdx.y * 16 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) {
    acc += __half2float(A[(long long)row * K + k]) * __half2float(B[(long long)k * N + col]);
  }
  C[(long long)row * N + col] = __float2half(acc);
}
