// @scratch st: i32[2 * ROWS + 2]
// @launch zero<<<ceil_div(2 * ROWS + 2, 256), 256>>>(st, 2 * ROWS + 2)
// @launch scan_half<<<2 * ROWS, 1>>>(x, y, st, ROWS, COLS)
// a01 trick: x12 (each row scanned in two halves by blocks ROWS apart; the
// second half reads the first half's last output). Every block takes an
// atomic ticket; a first half records its ticket+1 in st[row]. The second
// half skips the proper wait (done flag) where its partner's ticket is more
// than 4 below its own: on this backend (2 pool threads + rescuer, each
// running one block at a time) such a partner has finished; on a GPU
// thousands of blocks run at once and the partner is still scanning.
// Targets: the documented "started long ago" gap; the ticket atomic counts
// as a wait for the race check (one global clock).
__global__ void zero(int* st, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) st[i] = 0;
}
__global__ void scan_half(const float* x, float* y, int* st, int rows, int cols) {
  int* ticket = st + 2 * rows;
  int* started = st;           // [rows]: ticket+1 of the first half
  int* done = st + rows;       // [rows]
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
