// expect: pass
// Tensor cores through WMMA (fp16 fragments, fp32 accumulator): one warp per
// 16 x 16 tile of C. Tiles are staged through shared memory with zero padding,
// so any M, N, K works. The CPU backend emulates WMMA (each lane holds the
// whole tile; evaluator/cpu/README.md).
// @launch mm_wmma<<<dim3(ceil_div(N, 16), ceil_div(M, 16)), 32>>>(A, B, C, M, N, K)
#include <cuda_fp16.h>
#include <mma.h>
using namespace nvcuda;

__global__ void mm_wmma(const __half* A, const __half* B, __half* C, int M, int N, int K) {
  __shared__ __align__(32) __half a_tile[16 * 16];
  __shared__ __align__(32) __half b_tile[16 * 16];
  __shared__ __align__(32) float c_tile[16 * 16];
  const int row0 = blockIdx.y * 16;
  const int col0 = blockIdx.x * 16;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < K; k0 += 16) {
    for (int e = threadIdx.x; e < 256; e += 32) {
      const int r = e / 16;
      const int c = e % 16;
      a_tile[e] = (row0 + r < M && k0 + c < K) ? A[(long long)(row0 + r) * K + k0 + c]
                                                : __float2half(0.0f);
      b_tile[e] = (k0 + r < K && col0 + c < N) ? B[(long long)(k0 + r) * N + col0 + c]
                                                : __float2half(0.0f);
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
    wmma::load_matrix_sync(a, a_tile, 16);
    wmma::load_matrix_sync(b, b_tile, 16);
    wmma::mma_sync(acc, a, b, acc);
    __syncwarp();
  }
  wmma::store_matrix_sync(c_tile, acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = threadIdx.x; e < 256; e += 32) {
    const int r = e / 16;
    const int c = e % 16;
    if (row0 + r < M && col0 + c < N) {
      C[(long long)(row0 + r) * N + col0 + c] = __float2half(c_tile[e]);
    }
  }
}
