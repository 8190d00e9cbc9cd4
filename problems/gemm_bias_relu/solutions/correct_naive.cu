// expect: pass
// One thread per output: dot product, bias, ReLU.
// @launch lin_relu<<<dim3(ceil_div(N, 16), ceil_div(M, 16)), dim3(16, 16)>>>(x, W, bias, y, M, N, K)
__global__ void lin_relu(const float* x, const float* W, const float* bias, float* y, int M, int N,
                         int K) {
  int col = blockIdx.x * 16 + threadIdx.x;
  int row = blockIdx.y * 16 + threadIdx.y;
  if (row >= M || col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += x[(long long)row * K + k] * W[(long long)col * K + k];
  y[(long long)row * N + col] = fmaxf(acc + bias[col], 0.0f);
}
