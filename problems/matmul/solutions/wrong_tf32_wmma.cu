// expect: correctness
// TF32 tensor cores through WMMA (16 x 16 x 8, fp32 accumulator): each
// input keeps 10 of its 23 mantissa bits, so sums of K products drift past
// the fp32 tolerance. The problem asks for fp32 on CUDA cores: computing it
// in TF32 is the precision downcast the check must catch (on the CPU
// backend too, whose WMMA reads tf32 inputs as a tensor core does).
// @launch mm_tf32<<<dim3(ceil_div(N, 16), ceil_div(M, 16)), 32>>>(A, B, C, M, N, K)
#include <mma.h>
using namespace nvcuda;

__global__ void mm_tf32(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ __align__(32) float a_tile[16 * 8];
  __shared__ __align__(32) float b_tile[8 * 16];
  __shared__ __align__(32) float c_tile[16 * 16];
  const int row0 = blockIdx.y * 16;
  const int col0 = blockIdx.x * 16;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  for (int k0 = 0; k0 < K; k0 += 8) {
    for (int e = threadIdx.x; e < 128; e += 32) {
      const int ar = e / 8, ac = e % 8;  // a_tile: 16 x 8
      a_tile[e] = (row0 + ar < M && k0 + ac < K) ? A[(long long)(row0 + ar) * K + k0 + ac] : 0.0f;
      const int br = e / 16, bc = e % 16;  // b_tile: 8 x 16
      b_tile[e] = (k0 + br < K && col0 + bc < N) ? B[(long long)(k0 + br) * N + col0 + bc] : 0.0f;
    }
    __syncwarp();
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
    wmma::load_matrix_sync(a, a_tile, 8);
    wmma::load_matrix_sync(b, b_tile, 16);
    for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);
    for (int i = 0; i < b.num_elements; ++i) b.x[i] = wmma::__float_to_tf32(b.x[i]);
    wmma::mma_sync(acc, a, b, acc);
    __syncwarp();
  }
  wmma::store_matrix_sync(c_tile, acc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = threadIdx.x; e < 256; e += 32) {
    const int r = e / 16, c = e % 16;
    if (row0 + r < M && col0 + c < N) C[(long long)(row0 + r) * N + col0 + c] = c_tile[e];
  }
}
