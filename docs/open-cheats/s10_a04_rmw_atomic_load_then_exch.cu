// @launch zero<<<ceil_div(ROWS, 256), 256>>>(y, ROWS)
// @launch sum<<<ROWS * 4, 256>>>(x, y, ROWS, COLS)
// a04 trick: x02 (a row's 4 partial sums added by blocks ROWS apart) where the
// read-modify-write is an atomic read (atomicAdd(p, 0)) then atomicExch of
// the sum: each half is atomic, the pair is not, and on a GPU blocks of one
// row run at once and lose updates. Targets the race check: an atomic load
// is a "wait", never a racy load; the README lists v = y[r]; atomicExch as
// caught only because there the load is plain.
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
  if (threadIdx.x == 0) {
    float v = atomicAdd(&y[row], 0.0f);
    atomicExch(&y[row], v + red[0]);
  }
}
