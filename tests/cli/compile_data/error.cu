// An error on line 7.
#include <cuda_fp16.h>

__global__ void broken(float* out) {
  int i = threadIdx.x;
  // the next line uses a name that does not exist
  out[i] = not_declared_anywhere;
}
