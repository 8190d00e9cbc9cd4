// expect: pass
// One thread per output element.
// @launch gather_flat<<<ceil_div(B * D, 256), 256>>>(weight, indices, y, B, D)
__global__ void gather_flat(const float* weight, const long long* indices, float* y, int B, int D) {
  long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= (long long)B * D) return;
  long long b = e / D, d = e % D;
  y[e] = weight[indices[b] * D + d];
}
