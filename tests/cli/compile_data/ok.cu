// A kernel that compiles, with known resources: 4000 bytes of static shared
// memory, a launch bound of 256 threads, three parameters.
extern "C" __global__ void __launch_bounds__(256)
stage(const float* __restrict__ in, float* out, int n) {
  __shared__ float tile[1000];
  tile[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  if (threadIdx.x < n) out[threadIdx.x] = tile[(threadIdx.x + 1) % 1000] * INFINITY;
}
