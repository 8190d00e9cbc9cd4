// Reference for matvec: y[m] = sum_k A[m, k] * x[k], fp32.
//
// Memory-bound (A is read once). One warp per row, eight rows per block of
// 256 threads: lanes stride over the row (float4 loads when the row and x
// are 16-byte aligned, i.e. K % 4 == 0; scalar otherwise and for the tail),
// accumulate in fp32 and finish with a shuffle reduction. x is small and
// stays in L1/L2.
#define MATVEC_THREADS 256
#define ROWS_PER_BLOCK (MATVEC_THREADS / 32)
#define FULL_MASK 0xffffffffu

__global__ void __launch_bounds__(MATVEC_THREADS)
    matvec_kernel(const float* __restrict__ A, const float* __restrict__ x, float* __restrict__ y,
                  int M, int K) {
  const int row = blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= M) return;  // whole warps leave together
  const float* a = A + static_cast<long long>(row) * K;

  float sum = 0.0f;
  int scalar_begin = 0;
  if (((reinterpret_cast<unsigned long long>(a) | reinterpret_cast<unsigned long long>(x)) &
       15ull) == 0) {
    const int vectors = K / 4;
    const float4* a4 = reinterpret_cast<const float4*>(a);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    for (int i = lane; i < vectors; i += 32) {
      const float4 av = a4[i];
      const float4 xv = x4[i];
      sum = fmaf(av.x, xv.x, sum);
      sum = fmaf(av.y, xv.y, sum);
      sum = fmaf(av.z, xv.z, sum);
      sum = fmaf(av.w, xv.w, sum);
    }
    scalar_begin = vectors * 4;
  }
  for (int k = scalar_begin + lane; k < K; k += 32) sum = fmaf(a[k], x[k], sum);
  for (int offset = 16; offset > 0; offset >>= 1) sum += __shfl_xor_sync(FULL_MASK, sum, offset);
  if (lane == 0) y[row] = sum;
}
