#include "evaluator/data/poison.h"

#include <algorithm>
#include <cstring>

#include "evaluator/data/dtype.h"
#include "evaluator/data/leftovers.h"

namespace kerneleval::data {

uint64_t PoisonBits(v1::DType dtype, uint64_t integer_draw) {
  switch (dtype) {
    case v1::DTYPE_F64:
      return kPoisonF64;
    case v1::DTYPE_F32:
      return kPoisonF32;
    case v1::DTYPE_F16:
      return kPoisonF16;
    case v1::DTYPE_BF16:
      return kPoisonBF16;
    case v1::DTYPE_I64:
      return IntegerPoisonBits(integer_draw, /*wide=*/true);
    case v1::DTYPE_I32:
      return IntegerPoisonBits(integer_draw, /*wide=*/false);
    case v1::DTYPE_I8:
    case v1::DTYPE_U8:
    case v1::DTYPE_BOOL:
      return kPoisonByte;
    default:
      return 0;
  }
}

void FillPoison(v1::DType dtype, void* data, size_t elements, uint64_t integer_draw) {
  const size_t size = DTypeSize(dtype);
  if (size == 0 || elements == 0) return;
  char* bytes = static_cast<char*>(data);
  if (size == 1) {
    std::memset(bytes, kPoisonByte, elements);
    return;
  }
  // Little-endian: the low `size` bytes of the 64-bit pattern are the element.
  const uint64_t bits = PoisonBits(dtype, integer_draw);
  char element[8];
  std::memcpy(element, &bits, sizeof(element));
  // Fill one element, then double the filled prefix (memcpy-speed for 100M+).
  std::memcpy(bytes, element, size);
  size_t filled = size;
  const size_t total = size * elements;
  while (filled < total) {
    const size_t chunk = std::min(filled, total - filled);
    std::memcpy(bytes + filled, bytes, chunk);
    filled += chunk;
  }
}

std::string PoisonedBuffer(v1::DType dtype, size_t elements, uint64_t integer_draw) {
  std::string bytes(DTypeSize(dtype) * elements, '\0');
  FillPoison(dtype, bytes.data(), elements, integer_draw);
  return bytes;
}

bool IsPoison(std::string_view bytes, v1::DType dtype, size_t index, uint64_t integer_draw) {
  const size_t size = DTypeSize(dtype);
  if (size == 0 || (index + 1) * size > bytes.size()) return false;
  const uint64_t bits = PoisonBits(dtype, integer_draw);
  return std::memcmp(bytes.data() + index * size, &bits, size) == 0;
}

size_t CountPoison(std::string_view bytes, v1::DType dtype, uint64_t integer_draw) {
  const size_t size = DTypeSize(dtype);
  if (size == 0) return 0;
  const uint64_t bits = PoisonBits(dtype, integer_draw);
  size_t count = 0;
  for (size_t offset = 0; offset + size <= bytes.size(); offset += size) {
    count += std::memcmp(bytes.data() + offset, &bits, size) == 0;
  }
  return count;
}

void FillLeftovers(v1::DType dtype, void* data, size_t elements, uint64_t draw) {
  if (!TakesLeftovers(dtype)) {
    FillPoison(dtype, data, elements, draw);
    return;
  }
  char* bytes = static_cast<char*>(data);
  const bool wide = dtype == v1::DTYPE_I64;
  for (size_t i = 0; i < elements; ++i) {
    const uint64_t value = LeftoverElementBits(draw, i, wide);
    if (!wide) {
      const auto element = static_cast<uint32_t>(value);
      std::memcpy(bytes + i * sizeof(element), &element, sizeof(element));
    } else {
      const auto element = value;
      std::memcpy(bytes + i * sizeof(element), &element, sizeof(element));
    }
  }
}

}  // namespace kerneleval::data
