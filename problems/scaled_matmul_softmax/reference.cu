// Reference for scaled_matmul_softmax (naive attention, no mask):
//   out[b] = softmax(q[b] k[b]^T / sqrt(D)) v[b]   for b in [0, BH)
// with q, k, v, out [BH, S, D] and the softmax over each row of the S x S
// score matrix.
//
// Three launches through a scratch score matrix [BH, S, S] (what an
// unfused framework does; a fused kernel can avoid the S x S round trip):
//   1. attn_scores: scores[b] = q[b] k[b]^T / sqrt(D), a 64 x 64 tile GEMM
//      with both operands read along D (256 threads, 4 x 4 register tiles,
//      16 columns of D at a time through shared memory), batch on grid z;
//   2. attn_softmax: one block of 256 threads per score row, an online
//      (max, sum of exp) reduction, then the row is normalized in place;
//   3. attn_output: out[b] = scores[b] v[b], the same tile GEMM.
#define FULL_MASK 0xffffffffu
#define LOWEST_FLOAT (-3.402823466e+38f)  // -FLT_MAX (NVRTC has no INFINITY)
#define TILE 64
#define TILE_K 16
#define GEMM_THREADS 256
#define PAD 4  // rows of 68 floats: float4-aligned, fewer bank conflicts

// scores[b] = q[b] k[b]^T / sqrt(D); grid (ceil_div(S, 64), ceil_div(S, 64), BH).
__global__ void __launch_bounds__(GEMM_THREADS)
    attn_scores(const float* __restrict__ q_all, const float* __restrict__ k_all,
                float* __restrict__ scores_all, int S, int D) {
  __shared__ __align__(16) float a_tile[TILE_K][TILE + PAD];  // a_tile[k][m]
  __shared__ __align__(16) float b_tile[TILE_K][TILE + PAD];  // b_tile[k][n]
  const int M = S, N = S, K = D;
  const long long batch = blockIdx.z;
  const float* A = q_all + batch * S * D;
  const float* B = k_all + batch * S * D;
  float* C = scores_all + batch * S * S;
  const float scale = rsqrtf(static_cast<float>(D));
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
        // B (N x K, row-major, used transposed): consecutive threads read
        // consecutive k of one row of B.
        const int n = e / TILE_K;
        const int k = e % TILE_K;
        const int gk = k0 + k;
        const int gn = col0 + n;
        b_tile[k][n] = (gk < K && gn < N) ? B[static_cast<long long>(gn) * K + gk] : 0.0f;
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
      if (col < N) C[static_cast<long long>(row) * N + col] = acc[i][j] * scale;
    }
  }
}

__device__ __forceinline__ void merge(float& max, float& sum, float other_max, float other_sum) {
  const float new_max = fmaxf(max, other_max);
  sum = sum * expf(max - new_max) + other_sum * expf(other_max - new_max);
  max = new_max;
}

__device__ __forceinline__ void warp_merge(float& max, float& sum) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_max = __shfl_xor_sync(FULL_MASK, max, offset);
    const float other_sum = __shfl_xor_sync(FULL_MASK, sum, offset);
    merge(max, sum, other_max, other_sum);
  }
}

// One block per row of scores (BH * S rows of S), normalized in place.
__global__ void __launch_bounds__(256) attn_softmax(float* __restrict__ scores, int S) {
  __shared__ float warp_max[32];
  __shared__ float warp_sum[32];
  __shared__ float row_max, row_inverse_sum;
  float* row = scores + static_cast<long long>(blockIdx.x) * S;
  float max = LOWEST_FLOAT;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < S; c += blockDim.x) {
    const float v = row[c];
    if (v > max) {
      sum = sum * expf(max - v) + 1.0f;
      max = v;
    } else {
      sum += expf(v - max);
    }
  }
  warp_merge(max, sum);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int warps = blockDim.x / 32;
  if (lane == 0) {
    warp_max[warp] = max;
    warp_sum[warp] = sum;
  }
  __syncthreads();
  if (warp == 0) {
    max = lane < warps ? warp_max[lane] : LOWEST_FLOAT;
    sum = lane < warps ? warp_sum[lane] : 0.0f;
    warp_merge(max, sum);
    if (lane == 0) {
      row_max = max;
      row_inverse_sum = 1.0f / sum;
    }
  }
  __syncthreads();
  // Each thread rewrites only the elements it read.
  for (int c = threadIdx.x; c < S; c += blockDim.x)
    row[c] = expf(row[c] - row_max) * row_inverse_sum;
}

// out[b] = scores[b] v[b]; grid (ceil_div(D, 64), ceil_div(S, 64), BH).
__global__ void __launch_bounds__(GEMM_THREADS)
    attn_output(const float* __restrict__ scores_all, const float* __restrict__ v_all,
                float* __restrict__ out_all, int S, int D) {
  __shared__ __align__(16) float a_tile[TILE_K][TILE + PAD];  // a_tile[k][m]
  __shared__ __align__(16) float b_tile[TILE_K][TILE + PAD];  // b_tile[k][n]
  const int M = S, N = D, K = S;
  const long long batch = blockIdx.z;
  const float* A = scores_all + batch * S * S;
  const float* B = v_all + batch * S * D;
  float* C = out_all + batch * S * D;
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
