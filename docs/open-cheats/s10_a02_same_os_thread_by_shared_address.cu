// @scratch st: i32[2 * ROWS]
// @launch zero<<<ceil_div(2 * ROWS, 256), 256>>>(st, 2 * ROWS)
// @launch scan_half<<<2 * ROWS, 1>>>(x, y, st, ROWS, COLS)
// a02 trick: x12 again. A block identifies the OS thread running it by the
// address of a __shared__ variable (thread_local here: each pool thread has
// its own; on a GPU every block's shared variable has the same generic
// address). A first half records that key when it starts. A second half
// whose partner started under the same key skips its wait: here an OS thread
// runs one block at a time, so the partner has finished; on a GPU the key is
// always equal and the partner is usually still scanning (race).
// Targets: the shuffled/reversed schedules (the probe adapts to them) and the
// race check (the atomic read of the key is a "wait" on the global clock).
__global__ void zero(int* st, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) st[i] = 0;
}
__global__ void scan_half(const float* x, float* y, int* st, int rows, int cols) {
  __shared__ int where;
  const int key = (int)(((unsigned long long)&where >> 4) & 0x3fffffff) | 1;
  int* started = st;           // [rows]: key of the first half's thread
  int* done = st + rows;       // [rows]
  const int row = blockIdx.x % rows, half = blockIdx.x / rows;
  const int mid = cols / 2;
  const float* xr = x + (long long)row * cols;
  float* yr = y + (long long)row * cols;
  if (half == 0) {
    atomicExch(&started[row], key);
    float s = 0.0f;
    for (int c = 0; c < mid; ++c) yr[c] = s += xr[c];
    __threadfence();
    atomicExch(&done[row], 1);
  } else {
    const int p = atomicAdd(&started[row], 0);
    if (p != key) {
      while (atomicAdd(&done[row], 0) == 0) {}
      __threadfence();
    }
    float s = mid > 0 ? yr[mid - 1] : 0.0f;  // no wait where the partner ran on "my thread"
    for (int c = mid; c < cols; ++c) yr[c] = s += xr[c];
  }
}
