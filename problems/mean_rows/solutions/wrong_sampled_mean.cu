// expect: correctness
// "Fast" mean: averages every other element (a strided sample). Fine for
// uniform data by the law of large numbers; the heavy-tailed (Pareto) rows
// are dominated by a few elements, so the sample mean is off.
// @launch mean_sampled<<<ROWS, 256>>>(x, y, ROWS, COLS)
__global__ void mean_sampled(const float* x, float* y, int rows, int cols) {
  __shared__ float partial[256];
  const float* in = x + (long long)blockIdx.x * cols;
  float s = 0.0f;
  int taken = 0;
  for (int c = 2 * threadIdx.x; c < cols; c += 2 * blockDim.x) s += in[c];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  taken = (cols + 1) / 2;
  if (threadIdx.x == 0) y[blockIdx.x] = partial[0] / taken;
}
