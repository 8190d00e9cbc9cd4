// expect: correctness
// Classic 16 x 16 shared-memory tiling, but the K loop runs K / 16 times
// (floor): the last K % 16 products are dropped whenever K is not a
// multiple of 16.
// @launch mm_tiled<<<dim3(ceil_div(N, 16), ceil_div(M, 16)), dim3(16, 16)>>>(A, B, C, M, N, K)
__global__ void mm_tiled(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[16][16];
  __shared__ float Bs[16][16];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
  float acc = 0.0f;
  for (int t = 0; t < K / 16; ++t) {
    As[ty][tx] = row < M ? A[(long long)row * K + t * 16 + tx] : 0.0f;
    Bs[ty][tx] = col < N ? B[(long long)(t * 16 + ty) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < 16; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[(long long)row * N + col] = acc;
}
