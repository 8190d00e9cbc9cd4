// Reference for prod_rows: y[r] = prod_c x[r, c].
//
// One block of 256 threads per row: each thread multiplies its strided
// columns (1 is the identity), warp shuffles and shared memory combine the
// partial products. Inputs are close to 1 in log space, so products of
// thousands of factors stay far from fp32 overflow and underflow.
#define PROD_THREADS 256
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_product(float value) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    value *= __shfl_xor_sync(FULL_MASK, value, offset);
  }
  return value;
}

__global__ void __launch_bounds__(PROD_THREADS)
    prod_rows_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  __shared__ float partial[PROD_THREADS / 32];
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* in = x + static_cast<long long>(row) * cols;

  float product = 1.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) product *= in[c];
  product = warp_product(product);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = product;
  __syncthreads();
  if (warp == 0) {
    product = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : 1.0f;
    product = warp_product(product);
    if (lane == 0) y[row] = product;
  }
}
