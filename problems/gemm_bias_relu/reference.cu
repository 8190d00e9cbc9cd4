// Reference for gemm_bias_relu: y = relu(x @ W^T + bias), x [M, K], W [N, K],
// bias [N], y [M, N], fp32 (a linear layer followed by ReLU, fused).
//
// The 64 x 64 tile GEMM of matmul_transposed_b (256 threads, a 4 x 4 register
// tile each, K in slices of 16 through shared memory) with the bias and the
// ReLU applied to the accumulators before the single store.
#define TILE 64
#define TILE_K 16
#define GEMM_THREADS 256
#define PAD 4  // rows of 68 floats: float4-aligned, fewer bank conflicts

// Y = relu(X W^T + bias); grid (ceil_div(N, 64), ceil_div(M, 64)), 256 threads.
__global__ void __launch_bounds__(GEMM_THREADS)
    gemm_bias_relu_kernel(const float* __restrict__ X, const float* __restrict__ W,
                          const float* __restrict__ bias, float* __restrict__ Y, int M, int N,
                          int K) {
  __shared__ __align__(16) float a_tile[TILE_K][TILE + PAD];  // a_tile[k][m]
  __shared__ __align__(16) float b_tile[TILE_K][TILE + PAD];  // b_tile[k][n]
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
        a_tile[k][m] = (gm < M && gk < K) ? X[static_cast<long long>(gm) * K + gk] : 0.0f;
      }
      {
        // B (N x K, row-major, used transposed): consecutive threads read
        // consecutive k of one row of B.
        const int n = e / TILE_K;
        const int k = e % TILE_K;
        const int gk = k0 + k;
        const int gn = col0 + n;
        b_tile[k][n] = (gk < K && gn < N) ? W[static_cast<long long>(gn) * K + gk] : 0.0f;
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
      if (col < N) Y[static_cast<long long>(row) * N + col] = fmaxf(acc[i][j] + bias[col], 0.0f);
    }
  }
}
