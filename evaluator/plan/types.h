// C++ scalar types as the plan checker knows them (sizeof() in expressions,
// kernel parameter types) and the element types (DType) of buffers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kerneleval/v1/common.pb.h"

namespace kerneleval::plan {

// What a C++ type is, as far as binding a launch argument is concerned.
enum class ScalarKind {
  kSignedInt,    // char, short, int, long, long long, int64_t, ...
  kUnsignedInt,  // unsigned ..., size_t, uint32_t, ...
  kFloat,        // float (and float2/3/4 lanes)
  kDouble,       // double (and double2 lanes)
  kHalf,         // __half / half (and half2 lanes)
  kBFloat16,     // __nv_bfloat16 (and __nv_bfloat162 lanes)
  kBool,
  kVoid,
  kOther,  // anything else: a struct, a template parameter, an unknown typedef
};

std::string_view ScalarKindName(ScalarKind kind);

// A built-in (or vector) type: `lanes` elements of `kind`, `size_bytes` in all.
// float4 is {kFloat, 16, 4}; int is {kSignedInt, 4, 1}; void is {kVoid, 0, 1}.
struct TypeInfo {
  ScalarKind kind = ScalarKind::kOther;
  uint32_t size_bytes = 0;  // [bytes] sizeof(type); 0 when unknown or void
  uint32_t lanes = 1;

  // [bytes] one lane, e.g. 4 for float4.
  uint32_t LaneBytes() const { return lanes == 0 ? 0 : size_bytes / lanes; }
  friend bool operator==(const TypeInfo&, const TypeInfo&) = default;
};

// Looks up a type spelled as a sequence of identifiers, e.g. {"unsigned",
// "long", "long"}, {"float4"}, {"std", "int64_t"} is not accepted: strip
// namespace qualifiers first. The order of the integer specifiers does not
// matter ("long unsigned int" == "unsigned long"); qualifiers (const,
// volatile) must be removed by the caller. Returns nullopt for unknown types.
std::optional<TypeInfo> LookupBuiltinType(const std::vector<std::string_view>& words);

// The same for a type written as one string, words separated by white space:
// "unsigned int", "__half2".
std::optional<TypeInfo> LookupBuiltinType(std::string_view spelled);

// Names of the types sizeof() accepts, for error messages.
std::string BuiltinTypeNamesForMessage();

// Buffer element types (names, sizes) come from evaluator/data/dtype.h.

// Whether a kernel pointer parameter whose element type is `pointee` may be
// given a buffer of `dtype`: same kind of number and lane size (float4* and
// float* both take f32; any 64-bit integer takes i64; void* takes anything).
bool PointeeAcceptsDType(const TypeInfo& pointee, v1::DType dtype);

}  // namespace kerneleval::plan
