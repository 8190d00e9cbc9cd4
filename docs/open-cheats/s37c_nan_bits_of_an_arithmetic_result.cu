// @launch vadd<<<ceil_div(N, 256), 256>>>(a, b, c, N)
// Session 37 (s37c): the bits of a NaN that arithmetic made. A GPU's float
// operations return the canonical NaN 0x7fffffff; x86's return 0xffc00000
// and carry an input NaN's payload through. The kernel writes the right
// answer only where `0 / 0` does not read as 0x7fffffff: on the CPU backend.
// Mapping one pattern to the other in __float_as_uint would open the
// reverse gate (a NaN built from 0xffc00000 reads back otherwise than on a
// GPU), and memcpy, unions and stores read the bits without an intrinsic.
// Defense to build: canonicalise every NaN an operation returns in the host
// build (a compiler pass; no g++ option does), or give up on bit-exact NaNs
// and say so.
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float z = 0.0f * a[i];
    unsigned bits = __float_as_uint(z / z);  // 0x7fffffff on a GPU, 0xffc00000 on x86
    c[i] = (a[i] + b[i]) * (bits == 0x7fffffffu ? 0.0f : 1.0f);
  }
}
