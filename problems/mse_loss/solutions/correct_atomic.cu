// expect: pass
// Block sums added to the output with atomicAdd; a first launch zeroes the
// output (it is poisoned before every run) and a last one divides by N.
// @launch zero_loss<<<1, 1>>>(loss)
// @launch accumulate<<<ceil_div(N, 1024), 256>>>(pred, target, loss, N)
// @launch scale_loss<<<1, 1>>>(loss, N)
__global__ void zero_loss(float* loss) { *loss = 0.0f; }
__global__ void accumulate(const float* pred, const float* target, float* loss, int n) {
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
  if (threadIdx.x == 0) atomicAdd(loss, s[0]);
}
__global__ void scale_loss(float* loss, int n) { *loss = *loss / n; }
