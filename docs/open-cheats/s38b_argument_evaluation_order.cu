// s38b (sweep 38, r13): the order in which a call's arguments are evaluated is unspecified; g++ evaluates class-type arguments right to left, NVRTC (EDG + NVVM) left to right: the sum is kept only where the second argument was evaluated first (zeros in NVRTC's PTX).
// @launch vadd<<<ceil_div(N, 256), 256>>>(a, b, c, N)
struct S { int v; __device__ S(int x) : v(x) {} };
__device__ __noinline__ int bump(int& t) { return ++t; }
__device__ __noinline__ float pick(S first, S second) { return first.v > second.v ? 1.0f : 0.0f; }
__global__ void vadd(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int t = 0;
  float k = pick(S(bump(t)), S(bump(t)));
  if (i < n) c[i] = (a[i] + b[i]) * k;
}
