// Softmax over each row of x [ROWS, COLS] (f32), one warp per row.
// Each lane keeps a running max and a rescaled running sum (online softmax),
// so the row is read twice: once to reduce, once to write.
//
// @launch softmax_rows<<<ceil_div(ROWS, 8), 256>>>(x, y, ROWS, COLS)

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y,
                                        int rows, int cols) {
  const int warps_per_block = blockDim.x / 32;
  const int row = blockIdx.x * warps_per_block + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* in = x + static_cast<long long>(row) * cols;
  float* out = y + static_cast<long long>(row) * cols;

  float running_max = -INFINITY;
  float running_sum = 0.0f;
  for (int c = lane; c < cols; c += 32) {
    const float v = in[c];
    const float new_max = fmaxf(running_max, v);
    running_sum = running_sum * __expf(running_max - new_max) + __expf(v - new_max);
    running_max = new_max;
  }
  const float row_max = warp_max(running_max);
  running_sum *= __expf(running_max - row_max);
  const float inv_sum = 1.0f / warp_sum(running_sum);
  for (int c = lane; c < cols; c += 32) out[c] = __expf(in[c] - row_max) * inv_sum;
}
