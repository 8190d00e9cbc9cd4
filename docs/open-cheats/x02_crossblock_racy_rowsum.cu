// @launch zero<<<ceil_div(ROWS, 256), 256>>>(y, ROWS)
// @launch sum<<<ROWS * 4, 256>>>(x, y, ROWS, COLS)
// Each row is split over 4 blocks (far apart in launch order); each block
// reduces its quarter properly, then thread 0 adds it to y[row] with a plain
// load + store (no atomic): blocks racing on y[row] lose updates on a GPU.
__global__ void zero(float* y, int rows) {
  int r = blockIdx.x * 256 + threadIdx.x;
  if (r < rows) y[r] = 0.0f;
}
__global__ void sum(const float* x, float* y, int rows, int cols) {
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
  if (threadIdx.x == 0) y[row] = y[row] + red[0];  // no atomic, across blocks
}
