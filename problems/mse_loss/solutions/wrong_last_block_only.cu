// expect: correctness
// Every block stores its partial sum straight into the output (a plain store
// where an atomicAdd was needed): the result is one block's share.
// @launch mse_racy<<<ceil_div(N, 1024), 256>>>(pred, target, loss, N)
__global__ void mse_racy(const float* pred, const float* target, float* loss, int n) {
  __shared__ float s[256];
  float acc = 0.0f;
  for (int i = blockIdx.x * 1024 + threadIdx.x; i < n && i < (blockIdx.x + 1) * 1024; i += 256) {
    float d = pred[i] - target[i];
    acc += d * d;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) *loss = s[0] / n;
}
