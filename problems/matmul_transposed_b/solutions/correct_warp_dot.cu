// expect: pass
// One warp per element of C: both operands are contiguous along K, so the
// 32 lanes read coalesced and reduce with shuffles.
// @launch mtb_warp<<<ceil_div(M * N, 8), 256>>>(A, B, C, M, N, K)
__global__ void mtb_warp(const float* A, const float* B, float* C, int M, int N, int K) {
  long long e = (long long)blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (e >= (long long)M * N) return;
  int row = (int)(e / N), col = (int)(e % N);
  const float* a = A + (long long)row * K;
  const float* b = B + (long long)col * K;
  float acc = 0.0f;
  for (int k = lane; k < K; k += 32) acc += a[k] * b[k];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) C[e] = acc;
}
