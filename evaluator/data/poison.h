// The poison pattern written into every output and scratch buffer before a
// kernel runs, so that an element the kernel never wrote fails the check
// (and memory that once held a reference result is never handed over).
//   f64  0x7FF80000DEADBEEF  quiet NaN with a recognisable payload
//   f32  0x7FC0DEAD          quiet NaN with a recognisable payload
//   f16  0x7E00              the canonical quiet NaN
//   bf16 0x7FC0              the canonical quiet NaN
//   i32                      0x80000000 | (draw & 0x3FFFFFFF): below -2^30, drawn per run
//   i64                      the same in 64 bits: below -2^62, drawn per run
//   i8 u8 bool               every byte 0xFF (-1 / 255; bool 0xFF is neither 0 nor 1)
// Wide integers are drawn (`integer_draw`, from the worker's own randomness,
// once per run): with a fixed -1, a histogram whose counts the problem
// leaves undefined on entry took -1 as their initial value and skipped the
// clearing launch (sweep 38, s38c; on the GPU backend too, whose poison is
// the same). A drawn value below -2^30 is no count, index or size either.
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

// The poison bits of one element, in the low DTypeSize(dtype) bytes;
// `integer_draw` (any 64 bits) picks the i32 and i64 poison.
uint64_t PoisonBits(v1::DType dtype, uint64_t integer_draw = 0);

// Writes the poison pattern over `elements` elements at `data`.
void FillPoison(v1::DType dtype, void* data, size_t elements, uint64_t integer_draw = 0);

// A fresh buffer of `elements` poisoned elements.
std::string PoisonedBuffer(v1::DType dtype, size_t elements, uint64_t integer_draw = 0);

// Whether element `index` still holds the poison bits exactly.
bool IsPoison(std::string_view bytes, v1::DType dtype, size_t index, uint64_t integer_draw = 0);

// How many elements still hold the poison bits (e.g. "412 elements never written").
size_t CountPoison(std::string_view bytes, v1::DType dtype, uint64_t integer_draw = 0);

// Writes poison mixed with leftovers over `elements` elements at `data`:
// each i32 or i64 element, drawn from `draw` (any 64 bits) and its index, is
// either (one time in two) in the poison's range, below -2^30 (-2^62), or a
// value in [0, 65536), as an earlier run may leave (a count, an index);
// every other dtype gets the poison. What every integer output and scratch
// buffer starts every run as, on both backends (the CUDA worker's
// ke_fill_leftovers writes the same bytes, data/leftovers.h): a problem
// that leaves an output undefined on entry gets what a
// GPU's memory may hold. A uniform poison let a histogram skip its clearing
// launch: it took any bin below -2^29 as never written (sweep 41, c07), or
// recovered the one poison value from the sum of its bins (sweep 39, s39c).
// An element never written still fails: it is poison, or a drawn value
// that is the right one about once in 65536.
void FillLeftovers(v1::DType dtype, void* data, size_t elements, uint64_t draw);

// Whether FillLeftovers mixes leftovers into `dtype` (i32, i64) rather than
// writing its poison.
inline bool TakesLeftovers(v1::DType dtype) {
  return dtype == v1::DTYPE_I32 || dtype == v1::DTYPE_I64;
}

}  // namespace kerneleval::data
