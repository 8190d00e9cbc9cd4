#include "evaluator/plan/types.h"

#include <array>
#include <utility>

#include "evaluator/data/dtype.h"
#include "evaluator/plan/strings.h"

namespace kerneleval::plan {
namespace {

struct NamedType {
  std::string_view name;
  TypeInfo info;
};

constexpr ScalarKind kS = ScalarKind::kSignedInt;
constexpr ScalarKind kU = ScalarKind::kUnsignedInt;

// Single-identifier types. Sizes are those of nvcc/NVRTC on a 64-bit (LP64)
// host: long is 8 bytes.
constexpr std::array kNamedTypes = {
    NamedType{"float", {ScalarKind::kFloat, 4, 1}},
    NamedType{"double", {ScalarKind::kDouble, 8, 1}},
    NamedType{"half", {ScalarKind::kHalf, 2, 1}},
    NamedType{"__half", {ScalarKind::kHalf, 2, 1}},
    NamedType{"__nv_bfloat16", {ScalarKind::kBFloat16, 2, 1}},
    NamedType{"nv_bfloat16", {ScalarKind::kBFloat16, 2, 1}},
    NamedType{"bool", {ScalarKind::kBool, 1, 1}},
    NamedType{"void", {ScalarKind::kVoid, 0, 1}},
    NamedType{"size_t", {kU, 8, 1}},
    NamedType{"ptrdiff_t", {kS, 8, 1}},
    NamedType{"intptr_t", {kS, 8, 1}},
    NamedType{"uintptr_t", {kU, 8, 1}},
    NamedType{"int64_t", {kS, 8, 1}},
    NamedType{"uint64_t", {kU, 8, 1}},
    NamedType{"int32_t", {kS, 4, 1}},
    NamedType{"uint32_t", {kU, 4, 1}},
    NamedType{"int16_t", {kS, 2, 1}},
    NamedType{"uint16_t", {kU, 2, 1}},
    NamedType{"int8_t", {kS, 1, 1}},
    NamedType{"uint8_t", {kU, 1, 1}},
    NamedType{"float1", {ScalarKind::kFloat, 4, 1}},
    NamedType{"float2", {ScalarKind::kFloat, 8, 2}},
    NamedType{"float3", {ScalarKind::kFloat, 12, 3}},
    NamedType{"float4", {ScalarKind::kFloat, 16, 4}},
    NamedType{"double1", {ScalarKind::kDouble, 8, 1}},
    NamedType{"double2", {ScalarKind::kDouble, 16, 2}},
    NamedType{"int2", {kS, 8, 2}},
    NamedType{"int3", {kS, 12, 3}},
    NamedType{"int4", {kS, 16, 4}},
    NamedType{"uint2", {kU, 8, 2}},
    NamedType{"uint3", {kU, 12, 3}},
    NamedType{"uint4", {kU, 16, 4}},
    NamedType{"char4", {kS, 4, 4}},
    NamedType{"uchar4", {kU, 4, 4}},
    NamedType{"half2", {ScalarKind::kHalf, 4, 2}},
    NamedType{"__half2", {ScalarKind::kHalf, 4, 2}},
    NamedType{"__nv_bfloat162", {ScalarKind::kBFloat16, 4, 2}},
    NamedType{"nv_bfloat162", {ScalarKind::kBFloat16, 4, 2}},
};

// "signed", "unsigned", "short", "long", "int", "char" in any order, as C++
// allows. Returns nullopt for an invalid combination ("short long").
std::optional<TypeInfo> IntegerSpecifiers(const std::vector<std::string_view>& words) {
  int n_signed = 0, n_unsigned = 0, n_short = 0, n_long = 0, n_int = 0, n_char = 0;
  for (std::string_view word : words) {
    if (word == "signed") {
      ++n_signed;
    } else if (word == "unsigned") {
      ++n_unsigned;
    } else if (word == "short") {
      ++n_short;
    } else if (word == "long") {
      ++n_long;
    } else if (word == "int") {
      ++n_int;
    } else if (word == "char") {
      ++n_char;
    } else {
      return std::nullopt;
    }
  }
  if (n_signed + n_unsigned > 1 || n_short > 1 || n_long > 2 || n_int > 1 || n_char > 1) {
    return std::nullopt;
  }
  if ((n_short && n_long) || (n_char && (n_short || n_long || n_int))) {
    return std::nullopt;
  }
  // Plain char is signed on every target nvcc supports (x86-64, aarch64 with
  // nvcc's -fsigned-char default for device code).
  const ScalarKind kind = n_unsigned ? kU : kS;
  if (n_char) {
    return TypeInfo{kind, 1, 1};
  }
  if (n_short) {
    return TypeInfo{kind, 2, 1};
  }
  if (n_long) {
    return TypeInfo{kind, 8, 1};
  }
  return TypeInfo{kind, 4, 1};
}

}  // namespace

std::string_view ScalarKindName(ScalarKind kind) {
  switch (kind) {
    case ScalarKind::kSignedInt:
      return "signed integer";
    case ScalarKind::kUnsignedInt:
      return "unsigned integer";
    case ScalarKind::kFloat:
      return "float";
    case ScalarKind::kDouble:
      return "double";
    case ScalarKind::kHalf:
      return "half";
    case ScalarKind::kBFloat16:
      return "bfloat16";
    case ScalarKind::kBool:
      return "bool";
    case ScalarKind::kVoid:
      return "void";
    case ScalarKind::kOther:
      break;
  }
  return "other";
}

std::optional<TypeInfo> LookupBuiltinType(const std::vector<std::string_view>& words) {
  if (words.empty()) {
    return std::nullopt;
  }
  if (words.size() == 1) {
    for (const NamedType& named : kNamedTypes) {
      if (named.name == words[0]) {
        return named.info;
      }
    }
  }
  return IntegerSpecifiers(words);
}

std::optional<TypeInfo> LookupBuiltinType(std::string_view spelled) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < spelled.size()) {
    while (i < spelled.size() && detail::IsAsciiSpace(spelled[i])) {
      ++i;
    }
    const size_t start = i;
    while (i < spelled.size() && !detail::IsAsciiSpace(spelled[i])) {
      ++i;
    }
    if (i > start) {
      words.push_back(spelled.substr(start, i - start));
    }
  }
  return LookupBuiltinType(words);
}

std::string BuiltinTypeNamesForMessage() {
  return "float, double, half, __half, __nv_bfloat16, bool, char, short, int, unsigned, long, "
         "long long (with signed/unsigned), size_t, ptrdiff_t, [u]int{8,16,32,64}_t, "
         "float2/3/4, double2, int2/3/4, uint2/3/4, half2, __nv_bfloat162";
}

bool PointeeAcceptsDType(const TypeInfo& pointee, v1::DType dtype) {
  if (pointee.kind == ScalarKind::kVoid) {
    return data::DTypeSize(dtype) != 0;
  }
  const uint32_t lane = pointee.LaneBytes();
  const bool is_integer =
      pointee.kind == ScalarKind::kSignedInt || pointee.kind == ScalarKind::kUnsignedInt;
  switch (dtype) {
    case v1::DTYPE_F64:
      return pointee.kind == ScalarKind::kDouble && lane == 8;
    case v1::DTYPE_F32:
      return pointee.kind == ScalarKind::kFloat && lane == 4;
    case v1::DTYPE_F16:
      return pointee.kind == ScalarKind::kHalf && lane == 2;
    case v1::DTYPE_BF16:
      return pointee.kind == ScalarKind::kBFloat16 && lane == 2;
    case v1::DTYPE_I64:
      return is_integer && lane == 8;
    case v1::DTYPE_I32:
      return is_integer && lane == 4;
    case v1::DTYPE_I8:
    case v1::DTYPE_U8:
      return is_integer && lane == 1;
    case v1::DTYPE_BOOL:
      return (is_integer || pointee.kind == ScalarKind::kBool) && lane == 1;
    default:
      break;
  }
  return false;
}

}  // namespace kerneleval::plan
