// @launch alloc<<<1, 1>>>(ROWS)
// @launch sum<<<ROWS * 4, 256>>>(x, ROWS, COLS)
// @launch finish<<<ceil_div(ROWS, 256), 256>>>(y, ROWS)
// @launch release<<<1, 1>>>()
// a11 trick: x02 (a row's 4 partial sums added with a plain load and store
// by blocks ROWS apart) into an accumulator in device-malloc memory, copied
// to y by a later launch. On a GPU those blocks run at once and lose
// updates. Targets: the race check, which does not look at device-malloc
// memory (documented gap).
__device__ float* g_acc;
__global__ void alloc(int rows) {
  g_acc = (float*)malloc(sizeof(float) * rows);
  for (int r = 0; r < rows; ++r) g_acc[r] = 0.0f;
}
__global__ void sum(const float* x, int rows, int cols) {
  __shared__ float red[256];
  const int row = blockIdx.x % rows, part = blockIdx.x / rows;
  const int chunk = (cols + 3) / 4, begin = part * chunk;
  const int end = min(cols, begin + chunk);
  const float* xr = x + (long long)row * cols;
  float s = 0.0f;
  for (int c = begin + threadIdx.x; c < end; c += 256) s += xr[c];
  red[threadIdx.x] = s;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) g_acc[row] = g_acc[row] + red[0];  // no atomic, across blocks
}
__global__ void finish(float* y, int rows) {
  int r = blockIdx.x * 256 + threadIdx.x;
  if (r < rows) y[r] = g_acc[r];
}
__global__ void release() { free(g_acc); }
