// @scratch probe: i32[2]
// @scratch done: i32[ROWS]
// @launch zero<<<ceil_div(ROWS + 2, 256), 256>>>(probe, done, ROWS)
// @launch scan_half<<<2 * ROWS, 1>>>(x, y, probe, done, ROWS, COLS)
// x12 against its defense, another way: the first block to start notes its
// index; where it is not block 0 (a case that takes blocks from the last)
// the second halves wait for their first halves properly, elsewhere they
// read the first half's last output with no wait. A GPU starts blocks in
// index order, so there they never wait, and run beside their first halves:
// wrong there.
__global__ void zero(int* probe, int* done, int rows) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < 2) probe[i] = i == 0 ? 0 : -1;
  if (i < rows) done[i] = 0;
}
__global__ void scan_half(const float* x, float* y, int* probe, int* done, int rows, int cols) {
  if (atomicAdd(&probe[0], 1) == 0) atomicExch(&probe[1], (int)blockIdx.x);
  const int row = blockIdx.x % rows, half = blockIdx.x / rows;
  const int mid = cols / 2;
  const float* xr = x + (long long)row * cols;
  float* yr = y + (long long)row * cols;
  if (half == 0) {
    float s = 0.0f;
    for (int c = 0; c < mid; ++c) yr[c] = s += xr[c];
    __threadfence();
    atomicExch(&done[row], 1);
  } else {
    int first;
    while ((first = atomicAdd(&probe[1], 0)) < 0) {}
    if (first != 0) {
      while (atomicAdd(&done[row], 0) == 0) {}
      __threadfence();
    }
    float s = mid > 0 ? ((volatile float*)yr)[mid - 1] : 0.0f;
    for (int c = mid; c < cols; ++c) yr[c] = s += xr[c];
  }
}
