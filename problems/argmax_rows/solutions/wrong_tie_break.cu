// expect: correctness
// Ignores ties: a thread keeps its last maximal element (>=), and merging
// looks at values only, so a row whose maximum occurs several times reports
// an arbitrary one of them instead of the first.
// @launch argmax_ties<<<ROWS, 256>>>(x, y, ROWS, COLS)
__global__ void argmax_ties(const float* x, long long* y, int rows, int cols) {
  __shared__ float sv[256];
  __shared__ int si[256];
  const float* in = x + (long long)blockIdx.x * cols;
  float v = -3.402823466e+38f;
  int idx = 0;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    if (in[c] >= v) { v = in[c]; idx = c; }
  }
  sv[threadIdx.x] = v;
  si[threadIdx.x] = idx;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (threadIdx.x < s && sv[threadIdx.x + s] >= sv[threadIdx.x]) {
      sv[threadIdx.x] = sv[threadIdx.x + s];
      si[threadIdx.x] = si[threadIdx.x + s];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = si[0];
}
