// expect: correctness
// Picks the label's logit from row 0 (logits[labels[b]]) instead of row b.
// @launch ce_bug<<<ceil_div(B, 8), 256>>>(logits, labels, loss, B, C)
__global__ void ce_bug(const float* logits, const long long* labels, float* loss, int B, int C) {
  int row = blockIdx.x * 8 + threadIdx.x / 32;
  int lane = threadIdx.x % 32;
  if (row >= B) return;
  const float* in = logits + (long long)row * C;
  float m = in[0];
  for (int c = lane; c < C; c += 32) m = fmaxf(m, in[c]);
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  float s = 0.0f;
  for (int c = lane; c < C; c += 32) s += expf(in[c] - m);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) loss[row] = m + logf(s) - logits[labels[row]];
}
