// expect: correctness
// Assumes counts starts at zero (it does not: outputs are poisoned before
// every run) and only adds to it.
// @launch count_only<<<ceil_div(N, 256), 256>>>(x, counts, N)
__global__ void count_only(const unsigned char* x, int* counts, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&counts[x[i]], 1);
}
