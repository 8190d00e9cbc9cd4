// @scratch part: f32[4 * ROWS]
// @scratch cnt: i32[ROWS]
// @launch zero<<<ceil_div(ROWS, 256), 256>>>(cnt, ROWS)
// @launch sum<<<ROWS * 4, 256>>>(x, y, part, cnt, ROWS, COLS)
// a08 trick: the "last block" reduction (each of a row's 4 blocks stores its
// partial, then counts itself in with atomicAdd; the last one adds the
// partials) WITHOUT __threadfence on either side. On a GPU atomicAdd is
// relaxed: a writer's partial store may become visible after its count, and
// the last block's plain loads are not ordered after its atomic (no
// acquire); the CUDA guide's threadFenceReduction sample needs the fence.
// A memory-model race (seldom observed in practice on current GPUs).
// Targets: the race check takes any atomic on memory another block stored to
// as a wait with acquire/release meaning; the host is x86 (TSO) and every
// emulated atomic is seq_cst.
__global__ void zero(int* cnt, int rows) {
  int r = blockIdx.x * 256 + threadIdx.x;
  if (r < rows) cnt[r] = 0;
}
__global__ void sum(const float* __restrict__ x, float* __restrict__ y, float* __restrict__ part,
                    int* __restrict__ cnt, int rows, int cols) {
  __shared__ float red[256];
  __shared__ bool last;
  const int row = blockIdx.x % rows, p = blockIdx.x / rows;
  const int chunk = (cols + 3) / 4, begin = p * chunk;
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
    part[p * rows + row] = red[0];
    // no __threadfence()
    last = atomicAdd(&cnt[row], 1) == 3;
  }
  __syncthreads();
  if (last && threadIdx.x == 0) {
    float t = 0.0f;
    for (int q = 0; q < 4; ++q) t += part[q * rows + row];  // no fence, relaxed atomic only
    y[row] = t;
  }
}
