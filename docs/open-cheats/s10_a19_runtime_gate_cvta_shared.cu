// @launch vadd<<<ceil_div(N, 256), 256>>>(a, b, c, N)
// a19 trick (a runtime gate, not a preprocessor one): __cvta_generic_to_shared
// of a __shared__ variable is its offset in the block's shared window on a
// GPU (under 228 KiB); the CPU prelude returns the host address (thread-local
// storage, far above 2^32). The kernel adds honestly only where the "shared
// offset" is huge, and writes zeros on a GPU. The host-build checks compare
// preprocessor branches and macros; they cannot see a value computed at run
// time. Targets: every "same code on both" defense; a CPU-only artefact.
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  __shared__ float probe;
  const bool emulated = __cvta_generic_to_shared(&probe) > (1ull << 20);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = emulated ? a[i] + b[i] : 0.0f;
}
