// binary16 and bfloat16 <-> binary32 by bit manipulation, on the host and the
// GPU alike (the CUDA worker's input generator rounds with them), so that
// both round every value the same way.
#pragma once

#include <cstdint>

#include "evaluator/data/host_device.h"

namespace kerneleval::data {

// IEEE binary16 <-> binary32, round to nearest even. Overflow gives +-Inf,
// subnormals are produced and read exactly, NaN stays NaN (made quiet, the top
// payload bits kept).
KERNELEVAL_HOST_DEVICE inline uint16_t FloatToHalfBits(float value) {
  const uint32_t bits = FloatToBits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7FFFFFFFu;
  if (magnitude >= 0x7F800000u) {  // Inf or NaN
    if (magnitude == 0x7F800000u) return sign | 0x7C00u;
    // NaN: quiet bit set, top payload bits kept.
    return static_cast<uint16_t>(sign | 0x7E00u | ((magnitude >> 13) & 0x03FFu));
  }
  // 65520 = 65504 + half an ulp: ties to even round up to Inf (0x7BFF is odd).
  if (magnitude >= 0x477FF000u) return sign | 0x7C00u;
  if (magnitude < 0x38800000u) {                // below 2^-14: a half subnormal (or zero)
    if (magnitude < 0x33000000u) return sign;   // <= 2^-25 rounds to zero (2^-25: tie, even)
    const uint32_t exponent = magnitude >> 23;  // 102 .. 112
    const uint32_t mantissa = (magnitude & 0x007FFFFFu) | 0x00800000u;
    // value = mantissa * 2^(exponent - 150); in units of 2^-24: mantissa >> (126 - exponent).
    const uint32_t shift = 126 - exponent;  // 14 .. 24
    uint32_t quotient = mantissa >> shift;
    const uint32_t remainder = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (quotient & 1u))) ++quotient;
    return static_cast<uint16_t>(sign | quotient);  // 0x400 is the smallest normal: right
  }
  // Normal: rebias the exponent (127 -> 15) and drop 13 mantissa bits.
  uint32_t half = (magnitude - 0x38000000u) >> 13;
  const uint32_t remainder = magnitude & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;  // carry is right
  return static_cast<uint16_t>(sign | half);
}

KERNELEVAL_HOST_DEVICE inline float HalfBitsToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  const uint32_t mantissa = bits & 0x03FFu;
  if (exponent == 0x1F) {
    return BitsToFloat(sign | 0x7F800000u | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in binary32.
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-08f;
    return sign ? -magnitude : magnitude;
  }
  return BitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// bfloat16 (the top half of a binary32) <-> binary32, round to nearest even.
KERNELEVAL_HOST_DEVICE inline uint16_t FloatToBFloat16Bits(float value) {
  const uint32_t bits = FloatToBits(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // NaN: keep it quiet
  }
  // Round to nearest even on the dropped 16 bits; overflow carries into Inf,
  // subnormals round the same way (the encoding is monotone).
  const uint32_t rounding_bias = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

KERNELEVAL_HOST_DEVICE inline float BFloat16BitsToFloat(uint16_t bits) {
  return BitsToFloat(static_cast<uint32_t>(bits) << 16);
}

}  // namespace kerneleval::data
