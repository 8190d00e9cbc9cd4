#include "evaluator/data/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace kerneleval::data {

// Tensors travel as little-endian bytes; element access below is memcpy.
static_assert(std::endian::native == std::endian::little);
namespace {

template <typename T>
T Load(const void* data, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(data) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void Store(void* data, size_t index, T value) {
  std::memcpy(static_cast<char*>(data) + index * sizeof(T), &value, sizeof(T));
}

// Round half to even, saturate to [lo, hi]; NaN -> 0.
template <typename Int>
Int SaturatingRound(double value) {
  if (std::isnan(value)) return 0;
  constexpr double lo = static_cast<double>(std::numeric_limits<Int>::min());
  // For int64 the max is not representable: 2^63 is the first value above it.
  constexpr double hi_exclusive = static_cast<double>(std::numeric_limits<Int>::max()) + 1.0;
  const double rounded = std::nearbyint(value);  // default mode: to nearest even
  if (rounded <= lo) return std::numeric_limits<Int>::min();
  if (rounded >= hi_exclusive) return std::numeric_limits<Int>::max();
  return static_cast<Int>(rounded);
}

struct DTypeInfo {
  v1::DType dtype;
  std::string_view name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {v1::DTYPE_F64, "f64", 8},   {v1::DTYPE_F32, "f32", 4}, {v1::DTYPE_F16, "f16", 2},
    {v1::DTYPE_BF16, "bf16", 2}, {v1::DTYPE_I64, "i64", 8}, {v1::DTYPE_I32, "i32", 4},
    {v1::DTYPE_I8, "i8", 1},     {v1::DTYPE_U8, "u8", 1},   {v1::DTYPE_BOOL, "bool", 1},
};

}  // namespace

size_t DTypeSize(v1::DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info.size;
  }
  return 0;
}

std::string_view DTypeName(v1::DType dtype) {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return info.name;
  }
  return "unspecified";
}

absl::StatusOr<v1::DType> ParseDType(std::string_view name) {
  for (const auto& info : kDTypes) {
    if (info.name == name || v1::DType_Name(info.dtype) == name) return info.dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype \"", std::string(name), "\" (expected f64 f32 f16 bf16 i64 i32 i8 u8 bool)"));
}

bool IsFloatingDType(v1::DType dtype) {
  return dtype == v1::DTYPE_F64 || dtype == v1::DTYPE_F32 || dtype == v1::DTYPE_F16 ||
         dtype == v1::DTYPE_BF16;
}

bool IsIntegerDType(v1::DType dtype) {
  return dtype == v1::DTYPE_I64 || dtype == v1::DTYPE_I32 || dtype == v1::DTYPE_I8 ||
         dtype == v1::DTYPE_U8;
}

double DTypeMaxFinite(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_F64:
      return std::numeric_limits<double>::max();
    case v1::DTYPE_F32:
      return std::numeric_limits<float>::max();
    case v1::DTYPE_F16:
      return 65504.0;
    case v1::DTYPE_BF16:
      return BFloat16BitsToFloat(0x7F7F);
    case v1::DTYPE_I64:
      return static_cast<double>(std::numeric_limits<int64_t>::max());
    case v1::DTYPE_I32:
      return std::numeric_limits<int32_t>::max();
    case v1::DTYPE_I8:
      return std::numeric_limits<int8_t>::max();
    case v1::DTYPE_U8:
      return std::numeric_limits<uint8_t>::max();
    case v1::DTYPE_BOOL:
      return 1.0;
    default:
      return 0.0;
  }
}

double DTypeSmallestNormal(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_F64:
      return std::numeric_limits<double>::min();
    case v1::DTYPE_F32:
      return std::numeric_limits<float>::min();
    case v1::DTYPE_F16:
      return std::ldexp(1.0, -14);
    case v1::DTYPE_BF16:
      return std::numeric_limits<float>::min();  // same exponent range
    default:
      return 1.0;
  }
}

double RoundToDType(double value, v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_F64:
      return value;
    case v1::DTYPE_F32:
      return static_cast<float>(value);
    case v1::DTYPE_F16:
      return HalfBitsToFloat(FloatToHalfBits(static_cast<float>(value)));
    case v1::DTYPE_BF16:
      return BFloat16BitsToFloat(FloatToBFloat16Bits(static_cast<float>(value)));
    case v1::DTYPE_I64:
      return static_cast<double>(SaturatingRound<int64_t>(value));
    case v1::DTYPE_I32:
      return SaturatingRound<int32_t>(value);
    case v1::DTYPE_I8:
      return SaturatingRound<int8_t>(value);
    case v1::DTYPE_U8:
      return SaturatingRound<uint8_t>(value);
    case v1::DTYPE_BOOL:
      return value != 0.0 ? 1.0 : 0.0;  // NaN != 0
    default:
      return value;
  }
}

double ReadElement(const void* data, v1::DType dtype, size_t index) {
  switch (dtype) {
    case v1::DTYPE_F64:
      return Load<double>(data, index);
    case v1::DTYPE_F32:
      return Load<float>(data, index);
    case v1::DTYPE_F16:
      return HalfBitsToFloat(Load<uint16_t>(data, index));
    case v1::DTYPE_BF16:
      return BFloat16BitsToFloat(Load<uint16_t>(data, index));
    case v1::DTYPE_I64:
      return static_cast<double>(Load<int64_t>(data, index));
    case v1::DTYPE_I32:
      return Load<int32_t>(data, index);
    case v1::DTYPE_I8:
      return Load<int8_t>(data, index);
    case v1::DTYPE_U8:
    case v1::DTYPE_BOOL:  // BOOL: the raw byte, see dtype.h
      return Load<uint8_t>(data, index);
    default:
      return std::numeric_limits<double>::quiet_NaN();
  }
}

double ReadElement(std::string_view bytes, v1::DType dtype, size_t index) {
  return ReadElement(bytes.data(), dtype, index);
}

void WriteElement(void* data, v1::DType dtype, size_t index, double value) {
  switch (dtype) {
    case v1::DTYPE_F64:
      Store<double>(data, index, value);
      break;
    case v1::DTYPE_F32:
      Store<float>(data, index, static_cast<float>(value));
      break;
    case v1::DTYPE_F16:
      Store<uint16_t>(data, index, FloatToHalfBits(static_cast<float>(value)));
      break;
    case v1::DTYPE_BF16:
      Store<uint16_t>(data, index, FloatToBFloat16Bits(static_cast<float>(value)));
      break;
    case v1::DTYPE_I64:
      Store<int64_t>(data, index, SaturatingRound<int64_t>(value));
      break;
    case v1::DTYPE_I32:
      Store<int32_t>(data, index, SaturatingRound<int32_t>(value));
      break;
    case v1::DTYPE_I8:
      Store<int8_t>(data, index, SaturatingRound<int8_t>(value));
      break;
    case v1::DTYPE_U8:
      Store<uint8_t>(data, index, SaturatingRound<uint8_t>(value));
      break;
    case v1::DTYPE_BOOL:
      Store<uint8_t>(data, index, value != 0.0 ? 1 : 0);
      break;
    default:
      break;
  }
}

int64_t ReadIntegerElement(const void* data, v1::DType dtype, size_t index) {
  switch (dtype) {
    case v1::DTYPE_I64:
      return Load<int64_t>(data, index);
    case v1::DTYPE_I32:
      return Load<int32_t>(data, index);
    case v1::DTYPE_I8:
      return Load<int8_t>(data, index);
    case v1::DTYPE_U8:
    case v1::DTYPE_BOOL:  // BOOL: the raw byte, see dtype.h
      return Load<uint8_t>(data, index);
    default:
      return 0;
  }
}

}  // namespace kerneleval::data
