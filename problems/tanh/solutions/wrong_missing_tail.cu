// expect: correctness
// float4-vectorised, but the N % 4 tail is never written (poisoned outputs
// stay NaN on every shape whose N is not a multiple of 4).
// @launch tanh_vec<<<ceil_div(N, 1024), 256>>>(x, y, N)
__global__ void tanh_vec(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n / 4) {
    float4 v = reinterpret_cast<const float4*>(x)[i];
    v.x = tanhf(v.x);
    v.y = tanhf(v.y);
    v.z = tanhf(v.z);
    v.w = tanhf(v.w);
    reinterpret_cast<float4*>(y)[i] = v;
  }
}
