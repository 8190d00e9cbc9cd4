// expect: correctness
// float4 loads over K / 4 vectors, but the K % 4 leftover columns are never
// added (and rows are assumed 16-byte aligned).
// @launch mv_vec<<<ceil_div(M, 8), 256>>>(A, x, y, M, K)
__global__ void mv_vec(const float* A, const float* x, float* y, int M, int K) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= M) return;
  const float* a = A + (long long)row * K;
  float s = 0.0f;
  if (K % 4 == 0) {
    for (int i = lane; i < K / 4; i += 32) {
      float4 av = reinterpret_cast<const float4*>(a)[i];
      float4 xv = reinterpret_cast<const float4*>(x)[i];
      s += av.x * xv.x + av.y * xv.y + av.z * xv.z + av.w * xv.w;
    }
  } else {
    for (int k = lane; k < K - K % 4; k += 32) s += a[k] * x[k];
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) y[row] = s;
}
