// expect: correctness
// Accumulates in f16 (__hfma chain): every partial sum is rounded to f16,
// and the rounding errors of K additions add up well past the tolerance.
// @launch mm_lowp<<<dim3(ceil_div(N, 16), ceil_div(M, 16)), dim3(16, 16)>>>(A, B, C, M, N, K)
#include <cuda_fp16.h>
__global__ void mm_lowp(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  int col = blockIdx.x * 16 + threadIdx.x;
  int row = blockIdx.y * 16 + threadIdx.y;
  if (row >= M || col >= N) return;
  __half acc = __float2half(0.0f);
  for (int k = 0; k < K; ++k) acc = __hfma(A[(long long)row * K + k], B[(long long)k * N + col], acc);
  C[(long long)row * N + col] = acc;
}
