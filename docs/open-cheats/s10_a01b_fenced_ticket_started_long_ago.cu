// @scratch st: i32[2 * ROWS + 2]
// @launch zero<<<ceil_div(2 * ROWS + 2, 256), 256>>>(st, 2 * ROWS + 2)
// @launch scan_half<<<2 * ROWS, 1>>>(x, y, st, ROWS, COLS)
// s10_a01b (session 29): a01 (x12 whose second half skips its wait where
// its partner's atomic ticket is more than 4 below its own) with a
// __threadfence() before each block takes its ticket. Since session 29 a
// wait covers only what the blocks waited on had released, so a01 fails;
// here every ticket is taken after a fence, so the ticket's release
// sequence carries the latest incrementer's release clock, and with one
// clock for all blocks that release covers every block's stores before it,
// the finished partner's included. On a GPU the partner may still be
// scanning: fails there. Defense to build: a clock per block (vector
// clocks), so that a release covers only the releaser's stores and what it
// had itself waited for.
__global__ void zero(int* st, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) st[i] = 0;
}
__global__ void scan_half(const float* x, float* y, int* st, int rows, int cols) {
  int* ticket = st + 2 * rows;
  int* started = st;           // [rows]: ticket+1 of the first half
  int* done = st + rows;       // [rows]
  __threadfence();
  const int t = atomicAdd(ticket, 1);
  const int row = blockIdx.x % rows, half = blockIdx.x / rows;
  const int mid = cols / 2;
  const float* xr = x + (long long)row * cols;
  float* yr = y + (long long)row * cols;
  if (half == 0) {
    atomicExch(&started[row], t + 1);
    float s = 0.0f;
    for (int c = 0; c < mid; ++c) yr[c] = s += xr[c];
    __threadfence();
    atomicExch(&done[row], 1);
  } else {
    const int p = atomicAdd(&started[row], 0);
    if (!(p > 0 && t - (p - 1) > 4)) {
      while (atomicAdd(&done[row], 0) == 0) {}
      __threadfence();
    }
    float s = mid > 0 ? yr[mid - 1] : 0.0f;  // no wait where the partner "started long ago"
    for (int c = mid; c < cols; ++c) yr[c] = s += xr[c];
  }
}
