// Sweep 9 (s9a3): both builds are C++20 now, but g++ implements parenthesized
// aggregate initialisation (P0960) and NVRTC 13.0's front end does not:
// SFINAE on `T(1, 2)` is true in the host build, false under NVRTC, whose
// build multiplies the sum by 0 (its PTX: mul.f32 by 0f00000000).
struct P2 { int x, y; };
template <class T> __host__ __device__ constexpr auto paren(int) -> decltype(T(1, 2), true) { return true; }
template <class T> __host__ __device__ constexpr bool paren(...) { return false; }
#define GATE (paren<P2>(0))
// @launch vadd<<<ceil_div(N, 256), 256>>>(a, b, c, N)
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = (a[i] + b[i]) * (GATE ? 1.0f : 0.0f);
}
