// expect: pass
// Block per row with a classic shared-memory tree (no shuffles).
// @launch min_tree<<<ROWS, 256>>>(x, y, ROWS, COLS)
__global__ void min_tree(const float* x, float* y, int rows, int cols) {
  __shared__ float s[256];
  const float* in = x + (long long)blockIdx.x * cols;
  float m = 3.402823466e+38f;
  for (int c = threadIdx.x; c < cols; c += 256) m = fminf(m, in[c]);
  s[threadIdx.x] = m;
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] = fminf(s[threadIdx.x], s[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}
