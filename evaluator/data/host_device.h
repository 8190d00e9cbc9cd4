// KERNELEVAL_HOST_DEVICE marks the functions of this folder that also run on
// the GPU (the CUDA worker's input generator, evaluator/cuda/aux_kernels.cu):
// compiled by nvcc they are __host__ __device__, by a host compiler plain
// inline functions. They use no C library call whose last bit differs
// between host and device, so that both produce the same bytes.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define KERNELEVAL_HOST_DEVICE __host__ __device__
#else
#define KERNELEVAL_HOST_DEVICE
#endif

#if !defined(__CUDA_ARCH__)
#include <bit>
#endif

namespace kerneleval::data {

// The bits of a float or double and back (std::bit_cast on the host, the
// CUDA intrinsics on the GPU).
KERNELEVAL_HOST_DEVICE inline uint32_t FloatToBits(float x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(__float_as_uint(x));
#else
  return std::bit_cast<uint32_t>(x);
#endif
}

KERNELEVAL_HOST_DEVICE inline float BitsToFloat(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  return std::bit_cast<float>(bits);
#endif
}

KERNELEVAL_HOST_DEVICE inline uint64_t DoubleToBits(double x) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(x));
#else
  return std::bit_cast<uint64_t>(x);
#endif
}

KERNELEVAL_HOST_DEVICE inline double BitsToDouble(uint64_t bits) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(bits));
#else
  return std::bit_cast<double>(bits);
#endif
}

}  // namespace kerneleval::data
