// One element of a generated input, on the host (prng.cc) and on the GPU
// (the CUDA worker's ke_generate_input, which gives every timed round fresh
// inputs): the same arithmetic on both, so that both write the same bytes.
// What the values are is specified in prng.h; this is its inner loop, free of
// protobuf (ElementSampler is the distribution flattened, MakeElementSampler
// in prng.h builds it) and of any C library call.
#pragma once

#include <cstdint>

#include "evaluator/data/float_bits.h"
#include "evaluator/data/host_device.h"
#include "evaluator/data/portable_math.h"

#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

namespace kerneleval::data {

// Element types and distribution kinds by their numbers in the wire schema
// (v1::DType, v1::Distribution::KindCase; prng.cc checks that they match).
enum ElementDType : uint32_t {
  kElementF64 = 1,
  kElementF32 = 2,
  kElementF16 = 3,
  kElementBF16 = 4,
  kElementI64 = 5,
  kElementI32 = 6,
  kElementI8 = 7,
  kElementU8 = 8,
  kElementBool = 9,
};
enum ElementDistribution : uint32_t {
  kDrawUniform = 1,
  kDrawNormal = 2,
  kDrawPareto = 3,
  kDrawIntRange = 4,
};

// A buffer's distribution and dtype, flattened once per buffer; passed by
// value to the GPU kernel (plain 8-byte fields: one layout on both sides).
struct ElementSampler {
  uint64_t dtype = 0;       // ElementDType
  uint64_t kind = 0;        // ElementDistribution (a default already applied)
  double a = 0.0;           // uniform low, normal mean, Pareto scale
  double b = 0.0;           // uniform high - low, normal stddev, Pareto -1/alpha
  double high = 0.0;        // uniform high
  double below_high = 0.0;  // uniform: the largest value of the dtype below high
  double max_finite = 0.0;  // floating dtypes: heavy tails saturate here, never Inf
  int64_t int_low = 0;      // int_range, inclusive
  int64_t int_high = 0;
  uint64_t symmetric = 0;  // Pareto: a random sign
  // Normal: an element whose w0:w1 has its low 11 bits (which u does not
  // use) below spikes_per_2048 gets `spike` added.
  uint64_t spikes_per_2048 = 0;
  double spike = 0.0;
};

// Philox4x32-10's constants (Random123's philox4x32_10).
constexpr uint32_t kPhiloxMultiplier0 = 0xD2511F53u;
constexpr uint32_t kPhiloxMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kPhiloxWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

// One Philox4x32 round on counter c with key (k0, k1), in place.
KERNELEVAL_HOST_DEVICE inline void PhiloxRound(uint32_t& c0, uint32_t& c1, uint32_t& c2,
                                               uint32_t& c3, uint32_t k0, uint32_t k1) {
  const uint64_t product0 = static_cast<uint64_t>(kPhiloxMultiplier0) * c0;
  const uint64_t product1 = static_cast<uint64_t>(kPhiloxMultiplier1) * c2;
  const uint32_t n0 = static_cast<uint32_t>(product1 >> 32) ^ c1 ^ k0;
  const uint32_t n2 = static_cast<uint32_t>(product0 >> 32) ^ c3 ^ k1;
  c1 = static_cast<uint32_t>(product1);
  c3 = static_cast<uint32_t>(product0);
  c0 = n0;
  c2 = n2;
}

// The Philox4x32 block function with 10 rounds, counter {c0..c3} in place.
// NOLINTNEXTLINE(readability-identifier-naming): keeps Random123's name, 4x32_10
KERNELEVAL_HOST_DEVICE inline void Philox4x32_10InPlace(uint32_t& c0, uint32_t& c1, uint32_t& c2,
                                                        uint32_t& c3, uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kPhiloxWeyl0;
      k1 += kPhiloxWeyl1;
    }
    PhiloxRound(c0, c1, c2, c3, k0, k1);
  }
}

// Philox4x32-10 on counter {index, name_hash} with key case_seed: the words
// w0:w1 and w2:w3 of element `index` (prng.h).
struct ElementWords {
  uint64_t first;
  uint64_t second;
};

KERNELEVAL_HOST_DEVICE inline ElementWords DrawElementWords(uint64_t case_seed, uint64_t name_hash,
                                                            uint64_t index) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32);
  uint32_t c2 = static_cast<uint32_t>(name_hash), c3 = static_cast<uint32_t>(name_hash >> 32);
  Philox4x32_10InPlace(c0, c1, c2, c3, static_cast<uint32_t>(case_seed),
                       static_cast<uint32_t>(case_seed >> 32));
  return {(static_cast<uint64_t>(c0) << 32) | c1, (static_cast<uint64_t>(c2) << 32) | c3};
}

namespace element_internal {

KERNELEVAL_HOST_DEVICE inline double UnitInterval(uint64_t bits) {  // [0, 1)
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

// low + floor(bits * (high - low + 1) / 2^64), inclusive; span 0 means the
// whole 64-bit range. Multiply-shift (Lemire): exact and branch-free, its
// bias below span / 2^64.
KERNELEVAL_HOST_DEVICE inline int64_t DrawIntRange(int64_t low, int64_t high, uint64_t bits) {
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) + 1;
#if defined(__CUDA_ARCH__)
  const uint64_t scaled = __umul64hi(bits, span);
#else
  const uint64_t scaled =
      static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * span) >> 64);
#endif
  const uint64_t offset = span == 0 ? bits : scaled;
  return static_cast<int64_t>(static_cast<uint64_t>(low) + offset);
}

KERNELEVAL_HOST_DEVICE inline double Clamp(double value, double low, double high) {
  return value < low ? low : (high < value ? high : value);
}

KERNELEVAL_HOST_DEVICE inline int64_t ClampInt(int64_t value, int64_t low, int64_t high) {
  return value < low ? low : (high < value ? high : value);
}

template <typename T>
KERNELEVAL_HOST_DEVICE inline void Store(void* out, uint64_t index, T value) {
#if defined(__CUDA_ARCH__)
  static_cast<T*>(out)[index] = value;  // device buffers are 256-byte aligned
#else
  std::memcpy(static_cast<char*>(out) + index * sizeof(T), &value, sizeof(T));
#endif
}

// A floating dtype's rounding of `value` (NaN and Inf pass through).
KERNELEVAL_HOST_DEVICE inline double RoundToFloating(double value, uint64_t dtype) {
  switch (dtype) {
    case kElementF32:
      return static_cast<float>(value);
    case kElementF16:
      return HalfBitsToFloat(FloatToHalfBits(static_cast<float>(value)));
    case kElementBF16:
      return BFloat16BitsToFloat(FloatToBFloat16Bits(static_cast<float>(value)));
    default:
      return value;
  }
}

KERNELEVAL_HOST_DEVICE inline void StoreFloating(void* out, uint64_t dtype, uint64_t index,
                                                 double value) {
  switch (dtype) {
    case kElementF64:
      Store<double>(out, index, value);
      break;
    case kElementF32:
      Store<float>(out, index, static_cast<float>(value));
      break;
    case kElementF16:
      Store<uint16_t>(out, index, FloatToHalfBits(static_cast<float>(value)));
      break;
    case kElementBF16:
      Store<uint16_t>(out, index, FloatToBFloat16Bits(static_cast<float>(value)));
      break;
    default:
      break;
  }
}

// An integer value saturated to the dtype (bool: non-zero is 1; a floating
// dtype: saturated to its finite range).
KERNELEVAL_HOST_DEVICE inline void StoreInteger(const ElementSampler& sampler, void* out,
                                                uint64_t index, int64_t value) {
  switch (sampler.dtype) {
    case kElementI64:
      Store<int64_t>(out, index, value);
      break;
    case kElementI32:
      Store<int32_t>(out, index, static_cast<int32_t>(ClampInt(value, -2147483648LL, 2147483647)));
      break;
    case kElementI8:
      Store<int8_t>(out, index, static_cast<int8_t>(ClampInt(value, -128, 127)));
      break;
    case kElementU8:
      Store<uint8_t>(out, index, static_cast<uint8_t>(ClampInt(value, 0, 255)));
      break;
    case kElementBool:
      Store<uint8_t>(out, index, value != 0 ? 1 : 0);
      break;
    default:
      StoreFloating(out, sampler.dtype, index,
                    Clamp(static_cast<double>(value), -sampler.max_finite, sampler.max_finite));
      break;
  }
}

// The value before rounding to the dtype (prng.h: SampleValue).
KERNELEVAL_HOST_DEVICE inline double Sample(const ElementSampler& sampler,
                                            const ElementWords& words) {
  switch (sampler.kind) {
    case kDrawUniform:
      return sampler.a + sampler.b * UnitInterval(words.first);
    case kDrawNormal: {
      const double u1 = 1.0 - UnitInterval(words.first);  // (0, 1]: log is finite
      const double u2 = UnitInterval(words.second);
      // sqrt is correctly rounded on every IEEE host and on the GPU (double).
#if defined(__CUDA_ARCH__)
      const double radius = sqrt(-2.0 * PortableLog(u1));
#else
      const double radius = __builtin_sqrt(-2.0 * PortableLog(u1));
#endif
      const double value = sampler.a + sampler.b * (radius * PortableCosTwoPi(u2));
      return (words.first & 0x7ffu) < sampler.spikes_per_2048 ? value + sampler.spike : value;
    }
    case kDrawPareto: {
      const double u = 1.0 - UnitInterval(words.first);  // (0, 1]
      const double magnitude = sampler.a * PortableExp(PortableLog(u) * sampler.b);
      const bool negative = sampler.symmetric != 0 && ((words.second >> 32) & 1u);
      return negative ? -magnitude : magnitude;
    }
    case kDrawIntRange:
      return static_cast<double>(DrawIntRange(sampler.int_low, sampler.int_high, words.first));
    default:
      return 0.0;
  }
}

KERNELEVAL_HOST_DEVICE inline bool IsFloating(uint64_t dtype) {
  return dtype == kElementF64 || dtype == kElementF32 || dtype == kElementF16 ||
         dtype == kElementBF16;
}

}  // namespace element_internal

// Writes element `index` of a buffer (`out` points at element 0) from its
// Philox words: floats round to nearest even, saturated to the largest
// finite value, a uniform draw that rounds up to `high` moved to below_high;
// integer dtypes take floor() of uniform/normal/Pareto draws and saturate;
// int_range values are stored exactly (saturated to the dtype).
KERNELEVAL_HOST_DEVICE inline void WriteGeneratedElement(const ElementSampler& sampler,
                                                         const ElementWords& words, uint64_t index,
                                                         void* out) {
  namespace ei = element_internal;
  if (sampler.kind == kDrawIntRange) {
    ei::StoreInteger(sampler, out, index,
                     ei::DrawIntRange(sampler.int_low, sampler.int_high, words.first));
    return;
  }
  const double value = ei::Sample(sampler, words);
  if (!ei::IsFloating(sampler.dtype)) {
    // floor, saturated to the int64 range (2^63 - 1024 is the largest double
    // below 2^63); StoreInteger then saturates to the dtype.
#if defined(__CUDA_ARCH__)
    const double floored = value != value ? 0.0 : floor(value);
#else
    const double floored = value != value ? 0.0 : __builtin_floor(value);
#endif
    const double saturated = ei::Clamp(floored, -9223372036854775808.0, 9223372036854774784.0);
    ei::StoreInteger(sampler, out, index, static_cast<int64_t>(saturated));
    return;
  }
  double clamped = ei::Clamp(value, -sampler.max_finite, sampler.max_finite);
  if (sampler.kind == kDrawUniform && ei::RoundToFloating(clamped, sampler.dtype) >= sampler.high) {
    clamped = sampler.below_high;
  }
  ei::StoreFloating(out, sampler.dtype, index, clamped);
}

// Element `index` of a buffer generated from (case_seed, name_hash).
KERNELEVAL_HOST_DEVICE inline void GenerateElement(const ElementSampler& sampler,
                                                   uint64_t case_seed, uint64_t name_hash,
                                                   uint64_t index, void* out) {
  WriteGeneratedElement(sampler, DrawElementWords(case_seed, name_hash, index), index, out);
}

}  // namespace kerneleval::data
