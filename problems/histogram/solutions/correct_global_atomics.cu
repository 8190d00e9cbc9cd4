// expect: pass
// Zeroes the bins in a first launch, then one global atomicAdd per byte.
// @launch clear_bins<<<1, 256>>>(counts)
// @launch count_bytes<<<ceil_div(N, 256), 256>>>(x, counts, N)
__global__ void clear_bins(int* counts) { counts[threadIdx.x] = 0; }
__global__ void count_bytes(const unsigned char* x, int* counts, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&counts[x[i]], 1);
}
