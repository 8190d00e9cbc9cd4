// @scratch done: i32[ROWS]
// @launch zero<<<ceil_div(ROWS, 256), 256>>>(done, ROWS)
// @launch scan_half<<<2 * ROWS, 1>>>(x, y, done, ROWS, COLS)
// a23 trick: x12 with a flag but no fence on either side: the first half
// stores its outputs, then sets the flag with a plain store (no
// __threadfence, no atomic, no volatile); the second half polls it with
// __ldcg and reads the partner's output right after, with no fence. On a GPU
// nothing orders the data store before the flag store (weak stores to
// different addresses), nor the data load after the flag load: a
// memory-model race (the CUDA guide requires __threadfence() here).
// Targets: the race check counts an __ldcg load of memory another block
// stored to as a wait (acquire); x86 is TSO.
__global__ void zero(int* done, int rows) {
  int r = blockIdx.x * 256 + threadIdx.x;
  if (r < rows) done[r] = 0;
}
__global__ void scan_half(const float* x, float* y, int* done, int rows, int cols) {
  const int row = blockIdx.x % rows, half = blockIdx.x / rows;
  const int mid = cols / 2;
  const float* xr = x + (long long)row * cols;
  float* yr = y + (long long)row * cols;
  if (half == 0) {
    float s = 0.0f;
    for (int c = 0; c < mid; ++c) yr[c] = s += xr[c];
    done[row] = 1;  // plain store, no fence
  } else {
    while (__ldcg(&done[row]) == 0) {}
    float s = mid > 0 ? yr[mid - 1] : 0.0f;  // no fence after the poll
    for (int c = mid; c < cols; ++c) yr[c] = s += xr[c];
  }
}
