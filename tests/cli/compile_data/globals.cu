// A kernel with a module-scope __device__ variable: a launch counter.
__device__ unsigned launches;

extern "C" __global__ void count(float* out) {
  if (threadIdx.x == 0) out[0] = static_cast<float>(atomicAdd(&launches, 1u));
}
