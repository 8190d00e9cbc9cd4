// The poison pattern written into every output and scratch buffer before a
// kernel runs, so that an element the kernel never wrote fails the check
// (and memory that once held a reference result is never handed over).
//   f64  0x7FF80000DEADBEEF  quiet NaN with a recognisable payload
//   f32  0x7FC0DEAD          quiet NaN with a recognisable payload
//   f16  0x7E00              the canonical quiet NaN
//   bf16 0x7FC0              the canonical quiet NaN
//   i64 i32 i8 u8 bool       every byte 0xFF (-1 / 255; bool 0xFF is neither 0 nor 1)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kerneleval/v1/common.pb.h"

namespace kerneleval::data {

inline constexpr uint64_t kPoisonF64 = 0x7FF80000DEADBEEFull;
inline constexpr uint32_t kPoisonF32 = 0x7FC0DEADu;
inline constexpr uint16_t kPoisonF16 = 0x7E00u;
inline constexpr uint16_t kPoisonBF16 = 0x7FC0u;
inline constexpr uint8_t kPoisonByte = 0xFFu;

// The poison bits of one element, in the low DTypeSize(dtype) bytes.
uint64_t PoisonBits(v1::DType dtype);

// Writes the poison pattern over `elements` elements at `data`.
void FillPoison(v1::DType dtype, void* data, size_t elements);

// A fresh buffer of `elements` poisoned elements.
std::string PoisonedBuffer(v1::DType dtype, size_t elements);

// Whether element `index` still holds the poison bits exactly.
bool IsPoison(std::string_view bytes, v1::DType dtype, size_t index);

// How many elements still hold the poison bits (e.g. "412 elements never written").
size_t CountPoison(std::string_view bytes, v1::DType dtype);

}  // namespace kerneleval::data
