// Element types of tensors: sizes, names, IEEE half/bfloat16 conversions and
// element access on little-endian byte buffers. Pure C++: no CUDA headers, so
// the same code serves the CPU backend, the worker and the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "evaluator/data/float_bits.h"
#include "kerneleval/v1/common.pb.h"

namespace kerneleval::data {

// Bytes per element: f64/i64 8, f32/i32 4, f16/bf16 2, i8/u8/bool 1;
// 0 for DTYPE_UNSPECIFIED or a value this build does not know.
size_t DTypeSize(v1::DType dtype);

// Short name used in signatures and the CLI: "f64" "f32" "f16" "bf16" "i64"
// "i32" "i8" "u8" "bool"; "unspecified" for anything else.
std::string_view DTypeName(v1::DType dtype);

// Inverse of DTypeName; also accepts the enum spelling ("DTYPE_F32").
absl::StatusOr<v1::DType> ParseDType(std::string_view name);

bool IsFloatingDType(v1::DType dtype);  // f64 f32 f16 bf16
bool IsIntegerDType(v1::DType dtype);   // i64 i32 i8 u8 (not bool)

// Largest finite value of a floating dtype (f16: 65504); integer dtypes:
// their maximum; bool: 1.
double DTypeMaxFinite(v1::DType dtype);
// Smallest positive normal value of a floating dtype (f16: 2^-14); 1 for the
// others. Used as the floor of relative errors.
double DTypeSmallestNormal(v1::DType dtype);

// FloatToHalfBits, HalfBitsToFloat, FloatToBFloat16Bits, BFloat16BitsToFloat:
// float_bits.h.

// The value `value` becomes when stored as `dtype`, as a double.
// Floats round to nearest even (double -> float -> half is correctly rounded:
// binary32 has >= 2p+2 bits for p = 11 and p = 8, so double rounding is
// innocuous). Integers round half to even and saturate to the type's range;
// NaN becomes 0. Bool: 1 for any non-zero value (NaN included), else 0.
double RoundToDType(double value, v1::DType dtype);

// Element `index` of a little-endian buffer of `dtype`, as a double. i64 values
// beyond 2^53 lose precision (compare.h compares integers without doubles).
// Bool reads the stored byte as is: a valid bool is 0 or 1, and anything else
// (e.g. the poison byte 0xFF of an unwritten output) must never equal one.
// Precondition: (index + 1) * DTypeSize(dtype) bytes are readable.
double ReadElement(const void* data, v1::DType dtype, size_t index);
double ReadElement(std::string_view bytes, v1::DType dtype, size_t index);

// Stores RoundToDType(value, dtype) as element `index`.
// Precondition: (index + 1) * DTypeSize(dtype) bytes are writable.
void WriteElement(void* data, v1::DType dtype, size_t index, double value);

// Element `index` of an integer or bool buffer as an exact int64 (u8 and bool
// zero-extended, bool as its raw byte). Precondition: IsIntegerDType(dtype) or dtype is bool.
int64_t ReadIntegerElement(const void* data, v1::DType dtype, size_t index);

}  // namespace kerneleval::data
