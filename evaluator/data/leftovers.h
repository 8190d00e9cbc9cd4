// The integer poison and the leftovers fill (poison.h: FillLeftovers), one
// element at a time, on the host and, compiled by nvcc, in the CUDA worker's
// ke_fill_leftovers (evaluator/cuda/aux_kernels.cu): both backends start a
// wide integer output from the same bytes for the same draw.
#pragma once

#include <cstdint>

#include "evaluator/data/host_device.h"
#include "evaluator/data/splitmix64.h"

namespace kerneleval::data {

// The i32 (`wide` false) or i64 poison for `integer_draw` (any 64 bits): the
// sign bit, a clear bit below it and drawn low bits, so below -2^30 (-2^62).
KERNELEVAL_HOST_DEVICE inline uint64_t IntegerPoisonBits(uint64_t integer_draw, bool wide) {
  return wide ? 0x8000000000000000ull | (integer_draw & 0x3FFFFFFFFFFFFFFFull)
              : 0x80000000ull | (integer_draw & 0x3FFFFFFFull);
}

// Element `index` of the leftovers fill for `draw`, in the low 4 (8) bytes:
// one time in two the poison of a draw of its own, else a value in
// [0, 65536), as an earlier run may leave (a count, an index).
KERNELEVAL_HOST_DEVICE inline uint64_t LeftoverElementBits(uint64_t draw, uint64_t index,
                                                           bool wide) {
  const uint64_t drawn = SplitMix64Finalizer(draw + kSplitMix64Increment * (index + 1));
  return (drawn >> 63) != 0 ? IntegerPoisonBits(drawn, wide) : drawn & 0xFFFFu;
}

}  // namespace kerneleval::data
