// Reference for batched_matmul: C[b] = A[b] @ B[b] for b in [0, BATCH), fp32.
//
// The 64 x 64 tile GEMM of matmul_rect with the batch on grid z: each block
// offsets A, B and C to its batch, then computes one tile of C[b] (256
// threads, a 4 x 4 register tile each, K in slices of 16 through shared
// memory). Out-of-range elements load as 0, so any M, N, K works.
#define TILE 64
#define TILE_K 16
#define GEMM_THREADS 256
#define PAD 4  // rows of 68 floats: float4-aligned, fewer bank conflicts

// C[b] = A[b] B[b]; grid (ceil_div(N, 64), ceil_div(M, 64), BATCH), 256 threads.
__global__ void __launch_bounds__(GEMM_THREADS)
    batched_matmul_kernel(const float* __restrict__ A_all, const float* __restrict__ B_all,
                          float* __restrict__ C_all, int M, int N, int K) {
  __shared__ __align__(16) float a_tile[TILE_K][TILE + PAD];  // a_tile[k][m]
  __shared__ __align__(16) float b_tile[TILE_K][TILE + PAD];  // b_tile[k][n]
  const long long batch = blockIdx.z;
  const float* A = A_all + batch * M * K;
  const float* B = B_all + batch * K * N;
  float* C = C_all + batch * M * N;
  const int tx = threadIdx.x % 16;  // 4 columns each: tx * 4 .. tx * 4 + 3
  const int ty = threadIdx.x / 16;  // 4 rows each: ty * 4 .. ty * 4 + 3
  const int row0 = blockIdx.y * TILE;
  const int col0 = blockIdx.x * TILE;

  float acc[4][4];
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0f;
  }

  for (int k0 = 0; k0 < K; k0 += TILE_K) {
    // 64 x 16 elements of each operand, four per thread; out-of-range
    // elements load as 0, so any M, N, K works.
    for (int e = threadIdx.x; e < TILE * TILE_K; e += GEMM_THREADS) {
      {
        // A: consecutive threads read consecutive k of a row.
        const int m = e / TILE_K;
        const int k = e % TILE_K;
        const int gm = row0 + m;
        const int gk = k0 + k;
        a_tile[k][m] = (gm < M && gk < K) ? A[static_cast<long long>(gm) * K + gk] : 0.0f;
      }
      {
        // B (K x N, row-major): consecutive threads read consecutive n.
        const int k = e / TILE;
        const int n = e % TILE;
        const int gk = k0 + k;
        const int gn = col0 + n;
        b_tile[k][n] = (gk < K && gn < N) ? B[static_cast<long long>(gk) * N + gn] : 0.0f;
      }
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE_K; ++k) {
      const float4 a = *reinterpret_cast<const float4*>(&a_tile[k][ty * 4]);
      const float4 b = *reinterpret_cast<const float4*>(&b_tile[k][tx * 4]);
      const float av[4] = {a.x, a.y, a.z, a.w};
      const float bv[4] = {b.x, b.y, b.z, b.w};
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }

  for (int i = 0; i < 4; ++i) {
    const int row = row0 + ty * 4 + i;
    if (row >= M) continue;
    for (int j = 0; j < 4; ++j) {
      const int col = col0 + tx * 4 + j;
      if (col < N) C[static_cast<long long>(row) * N + col] = acc[i][j];
    }
  }
}
