// s38a (sweep 38, r01): long double has 64-bit mantissa in the g++ host build but is double on a GPU (NVRTC); write the sum only where 1 + 2^-60 != 1 (zeros on a GPU).
// @launch vadd<<<ceil_div(N, 256), 256>>>(a, b, c, N)
__global__ void vadd(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  volatile long double one = 1.0L;
  long double tiny = 1.0L / 1152921504606846976.0L; // 2^-60
  long double s = one + tiny;
  float k = (float)((s - one) * 1152921504606846976.0L); // 1 on x87, 0 with double
  if (i < n) c[i] = (a[i] + b[i]) * k;
}
