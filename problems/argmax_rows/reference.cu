// Reference for argmax_rows: y[r] = the column of the largest element of row r;
// on ties the smallest such column (first occurrence, as torch.argmax).
//
// One block of 256 threads per row: each thread scans its strided columns
// keeping (value, column) of its best element, then the pairs are merged with
// warp shuffles and across warps through shared memory. The merge prefers the
// better value, and on equal values the smaller column, so the result does
// not depend on the reduction order.
#define ARG_THREADS 256
#define FULL_MASK 0xffffffffu
#define IDENTITY_VALUE (-3.402823466e+38f)  // -FLT_MAX (NVRTC has no INFINITY)
#define IDENTITY_COLUMN 0x7fffffff

__device__ __forceinline__ void merge(float& value, int& column, float other_value,
                                      int other_column) {
  if (other_value > value || (other_value == value && other_column < column)) {
    value = other_value;
    column = other_column;
  }
}

__device__ __forceinline__ void warp_merge(float& value, int& column) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_value = __shfl_xor_sync(FULL_MASK, value, offset);
    const int other_column = __shfl_xor_sync(FULL_MASK, column, offset);
    merge(value, column, other_value, other_column);
  }
}

__global__ void __launch_bounds__(ARG_THREADS)
    argmax_rows_kernel(const float* __restrict__ x, long long* __restrict__ y, int rows, int cols) {
  __shared__ float warp_value[ARG_THREADS / 32];
  __shared__ int warp_column[ARG_THREADS / 32];
  const int row = blockIdx.x;
  if (row >= rows) return;  // uniform across the block
  const float* in = x + static_cast<long long>(row) * cols;

  // Columns are visited in increasing order per thread: a strict comparison
  // keeps the first occurrence.
  float value = IDENTITY_VALUE;
  int column = IDENTITY_COLUMN;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = in[c];
    if (v > value || column == IDENTITY_COLUMN) {
      value = v;
      column = c;
    }
  }
  warp_merge(value, column);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) {
    warp_value[warp] = value;
    warp_column[warp] = column;
  }
  __syncthreads();
  if (warp == 0) {
    const bool valid = lane < static_cast<int>(blockDim.x / 32);
    value = valid ? warp_value[lane] : IDENTITY_VALUE;
    column = valid ? warp_column[lane] : IDENTITY_COLUMN;
    warp_merge(value, column);
    if (lane == 0) y[row] = column;
  }
}
