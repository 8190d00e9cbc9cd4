#include "evaluator/data/poison.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "evaluator/data/compare.h"
#include "evaluator/data/dtype.h"

namespace kerneleval::data {
namespace {

const v1::DType kAll[] = {v1::DTYPE_F64,  v1::DTYPE_F32, v1::DTYPE_F16,
                          v1::DTYPE_BF16, v1::DTYPE_I64, v1::DTYPE_I32,
                          v1::DTYPE_I8,   v1::DTYPE_U8,  v1::DTYPE_BOOL};

TEST(PoisonTest, Patterns) {
  EXPECT_EQ(PoisonedBuffer(v1::DTYPE_F32, 2), std::string("\xAD\xDE\xC0\x7F\xAD\xDE\xC0\x7F", 8));
  EXPECT_EQ(PoisonedBuffer(v1::DTYPE_F16, 2), std::string("\x00\x7E\x00\x7E", 4));
  EXPECT_EQ(PoisonedBuffer(v1::DTYPE_BF16, 1), std::string("\xC0\x7F", 2));
  EXPECT_EQ(PoisonedBuffer(v1::DTYPE_F64, 1), std::string("\xEF\xBE\xAD\xDE\x00\x00\xF8\x7F", 8));
  EXPECT_EQ(PoisonedBuffer(v1::DTYPE_I32, 2, 0x76543210ull),
            std::string("\x10\x32\x54\xB6\x10\x32\x54\xB6", 8));
  EXPECT_EQ(PoisonedBuffer(v1::DTYPE_I64, 1, ~0ull),
            std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xBF", 8));
  EXPECT_EQ(PoisonedBuffer(v1::DTYPE_BOOL, 3), std::string(3, '\xFF'));
  EXPECT_EQ(PoisonedBuffer(v1::DTYPE_UNSPECIFIED, 3), "");
}

TEST(PoisonTest, FloatPoisonIsAQuietNaN) {
  EXPECT_TRUE(std::isnan(std::bit_cast<float>(kPoisonF32)));
  EXPECT_NE(kPoisonF32 & 0x00400000u, 0u);  // quiet bit
  EXPECT_TRUE(std::isnan(std::bit_cast<double>(kPoisonF64)));
  EXPECT_NE(kPoisonF64 & 0x0008000000000000ull, 0u);
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(kPoisonF16)));
  EXPECT_NE(kPoisonF16 & 0x0200u, 0u);
  EXPECT_TRUE(std::isnan(BFloat16BitsToFloat(kPoisonBF16)));
  EXPECT_NE(kPoisonBF16 & 0x0040u, 0u);
  for (const v1::DType dtype : kAll) {
    const std::string buffer = PoisonedBuffer(dtype, 1);
    if (IsFloatingDType(dtype)) {
      EXPECT_TRUE(std::isnan(ReadElement(buffer, dtype, 0)));
    }
  }
}

TEST(PoisonTest, FillsOddSizesCompletely) {
  for (const size_t elements : {size_t{1}, size_t{3}, size_t{1000003}}) {
    for (const v1::DType dtype : kAll) {
      std::string buffer(DTypeSize(dtype) * elements, '\0');
      FillPoison(dtype, buffer.data(), elements);
      ASSERT_EQ(CountPoison(buffer, dtype), elements) << DTypeName(dtype);
      ASSERT_TRUE(IsPoison(buffer, dtype, elements - 1));
    }
  }
}

// The wide integer poison is drawn per run (the workers draw
// `integer_draw`): a fixed -1 was taken as a histogram's initial counts
// (sweep 38, s38c). Whatever the draw, it stays below -2^30 (-2^62), no
// count, index or size; byte-sized types keep 0xFF.
TEST(PoisonTest, WideIntegerPoisonIsDrawnAndFarBelowZero) {
  std::mt19937_64 draws(7);
  std::set<int32_t> seen;
  for (int k = 0; k < 100; ++k) {
    const uint64_t draw = draws();
    const std::string i32 = PoisonedBuffer(v1::DTYPE_I32, 1, draw);
    const std::string i64 = PoisonedBuffer(v1::DTYPE_I64, 1, draw);
    int32_t v32 = 0;
    int64_t v64 = 0;
    std::memcpy(&v32, i32.data(), 4);
    std::memcpy(&v64, i64.data(), 8);
    EXPECT_LT(v32, -(int32_t{1} << 30));
    EXPECT_LT(v64, -(int64_t{1} << 62));
    seen.insert(v32);
    EXPECT_EQ(PoisonedBuffer(v1::DTYPE_U8, 2, draw), std::string(2, '\xFF'));
    EXPECT_EQ(CountPoison(i32, v1::DTYPE_I32, draw), 1u);
  }
  EXPECT_GT(seen.size(), 95u);
}

// Wide integers start as poison mixed with leftovers, element by element: a
// histogram took any bin below -2^29 as never written (sweep 41, c07) or
// recovered the one poison value from its sum (sweep 39, s39c).
TEST(PoisonTest, WideIntegersStartAsPoisonMixedWithSmallLeftovers) {
  constexpr size_t kElements = 4096;
  for (const v1::DType dtype : {v1::DTYPE_I32, v1::DTYPE_I64}) {
    const size_t size = DTypeSize(dtype);
    std::string first(kElements * size, '\0');
    std::string again(kElements * size, '\0');
    std::string other(kElements * size, '\0');
    FillLeftovers(dtype, first.data(), kElements, 11);
    FillLeftovers(dtype, again.data(), kElements, 11);
    FillLeftovers(dtype, other.data(), kElements, 12);
    EXPECT_EQ(first, again);  // a function of the draw and the index
    EXPECT_NE(first, other);
    size_t poison = 0, leftovers = 0;
    std::set<int64_t> values;
    for (size_t i = 0; i < kElements; ++i) {
      int64_t value = 0;
      if (dtype == v1::DTYPE_I32) {
        int32_t v = 0;
        std::memcpy(&v, first.data() + i * size, size);
        value = v;
        poison += value < -(int64_t{1} << 30);
      } else {
        std::memcpy(&value, first.data() + i * size, size);
        poison += value < -(int64_t{1} << 62);
      }
      leftovers += value >= 0 && value < 65536;
      values.insert(value);
    }
    EXPECT_EQ(poison + leftovers, kElements) << dtype;
    // One in two each: 2048 +- 32 (1 sigma).
    EXPECT_GT(poison, 1800u) << dtype;
    EXPECT_GT(leftovers, 1800u) << dtype;
    EXPECT_GT(values.size(), 3900u) << dtype;  // drawn per element
  }
  // Every other dtype gets the poison.
  std::string f32(16 * 4, '\0');
  FillLeftovers(v1::DTYPE_F32, f32.data(), 16, 11);
  EXPECT_EQ(f32, PoisonedBuffer(v1::DTYPE_F32, 16));
  std::string u8(16, '\0');
  FillLeftovers(v1::DTYPE_U8, u8.data(), 16, 11);
  EXPECT_EQ(u8, std::string(16, '\xFF'));
}

TEST(PoisonTest, CountsWrittenElements) {
  std::string buffer = PoisonedBuffer(v1::DTYPE_F32, 10);
  WriteElement(buffer.data(), v1::DTYPE_F32, 3, 1.5);
  WriteElement(buffer.data(), v1::DTYPE_F32, 7, std::nan(""));  // a NaN, but not the poison
  EXPECT_EQ(CountPoison(buffer, v1::DTYPE_F32), 8u);
  EXPECT_FALSE(IsPoison(buffer, v1::DTYPE_F32, 3));
  EXPECT_FALSE(IsPoison(buffer, v1::DTYPE_F32, 7));
  EXPECT_TRUE(IsPoison(buffer, v1::DTYPE_F32, 9));
  EXPECT_FALSE(IsPoison(buffer, v1::DTYPE_F32, 10));  // out of range
}

// An output left as poison fails the comparison for every dtype, whatever
// the expected values are (here: every value the dtype's default inputs take).
TEST(PoisonTest, UnwrittenOutputFailsEveryDType) {
  for (const v1::DType dtype : kAll) {
    internal::Tensor expected;
    expected.set_name("y");
    expected.set_dtype(dtype);
    expected.set_elements(4);
    std::string data(DTypeSize(dtype) * 4, '\0');
    const double values[] = {0.0, 1.0, -1.0, 100.0};
    for (int i = 0; i < 4; ++i) {
      WriteElement(data.data(), dtype, i, dtype == v1::DTYPE_BOOL ? i % 2 : values[i]);
    }
    expected.set_data(data);
    internal::Tensor got = expected;
    got.set_data(PoisonedBuffer(dtype, 4));
    const ToleranceValues tol = DefaultTolerance(dtype);
    const v1::OutputCheck check = CompareTensor(expected, got, {4}, tol.atol, tol.rtol);
    EXPECT_FALSE(check.passed()) << DTypeName(dtype);
    // u8 poison 255 differs from every expected value here; so does -1 for
    // signed types except expected -1 itself.
    EXPECT_GE(check.mismatches(), 3u) << DTypeName(dtype);
  }
}

}  // namespace
}  // namespace kerneleval::data
