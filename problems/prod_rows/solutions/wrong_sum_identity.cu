// expect: correctness
// Adapted from a sum reduction: threads without a column of their own pad
// the shared-memory tree with 0 (the identity of +, not of *), so every row
// shorter than the block comes out as 0.
// @launch prod_tree<<<ROWS, 256>>>(x, y, ROWS, COLS)
__global__ void prod_tree(const float* x, float* y, int rows, int cols) {
  __shared__ float s[256];
  const float* in = x + (long long)blockIdx.x * cols;
  float p = 1.0f;
  for (int c = threadIdx.x; c < cols; c += 256) p *= in[c];
  s[threadIdx.x] = threadIdx.x < cols ? p : 0.0f;
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] *= s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}
