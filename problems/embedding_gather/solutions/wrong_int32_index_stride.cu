// expect: correctness
// Reads the int64 indices through an int32 pointer (the plan passes the
// buffer to a void* parameter): index b is taken from the low/high halves of
// the wrong elements.
// @launch gather_i32<<<ceil_div(B * D, 256), 256>>>(weight, indices, y, B, D)
__global__ void gather_i32(const float* weight, const void* indices, float* y, int B, int D) {
  long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= (long long)B * D) return;
  long long b = e / D, d = e % D;
  int index = static_cast<const int*>(indices)[b];
  y[e] = weight[(long long)index * D + d];
}
