// Reference for matmul: C[M, N] = A[M, K] @ B[K, N], fp32 on CUDA cores.
//
// Each block computes a 64 x 64 tile of C with 256 threads, each thread a
// 4 x 4 register tile (rows ty + 16 i, columns tx + 16 j: the strided
// mapping keeps shared-memory reads conflict-free and global stores
// coalesced). K is walked in slices of 16: the A slice is stored transposed
// in shared memory (one column of the tile per k), padded against bank
// conflicts; out-of-range elements load as 0, so any M, N, K works.
#define TILE_M 64
#define TILE_N 64
#define TILE_K 16
#define MATMUL_THREADS 256

__global__ void __launch_bounds__(MATMUL_THREADS)
    matmul_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                  int M, int N, int K) {
  __shared__ float a_tile[TILE_K][TILE_M + 1];  // a_tile[k][m] = A[row0 + m, k0 + k]
  __shared__ float b_tile[TILE_K][TILE_N];      // b_tile[k][n] = B[k0 + k, col0 + n]
  const int tid = threadIdx.x;
  const int tx = tid % 16;
  const int ty = tid / 16;
  const int row0 = blockIdx.y * TILE_M;
  const int col0 = blockIdx.x * TILE_N;

  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  }

  for (int k0 = 0; k0 < K; k0 += TILE_K) {
    // 64 x 16 elements of A and 16 x 64 of B: four of each per thread.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = tid + i * MATMUL_THREADS;
      const int a_row = e / TILE_K;
      const int a_col = e % TILE_K;
      const int a_global_row = row0 + a_row;
      const int a_global_col = k0 + a_col;
      a_tile[a_col][a_row] = (a_global_row < M && a_global_col < K)
                                 ? A[static_cast<long long>(a_global_row) * K + a_global_col]
                                 : 0.0f;
      const int b_row = e / TILE_N;
      const int b_col = e % TILE_N;
      const int b_global_row = k0 + b_row;
      const int b_global_col = col0 + b_col;
      b_tile[b_row][b_col] = (b_global_row < K && b_global_col < N)
                                 ? B[static_cast<long long>(b_global_row) * N + b_global_col]
                                 : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE_K; ++k) {
      float a[4];
      float b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = a_tile[k][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = b_tile[k][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty + 16 * i;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = col0 + tx + 16 * j;
      if (row < M && col < N) C[static_cast<long long>(row) * N + col] = acc[i][j];
    }
  }
}
