#include "evaluator/data/dtype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace kerneleval::data {
namespace {

TEST(DTypeTest, SizesAndNamesRoundTrip) {
  const struct {
    v1::DType dtype;
    const char* name;
    size_t size;
  } cases[] = {{v1::DTYPE_F64, "f64", 8},   {v1::DTYPE_F32, "f32", 4}, {v1::DTYPE_F16, "f16", 2},
               {v1::DTYPE_BF16, "bf16", 2}, {v1::DTYPE_I64, "i64", 8}, {v1::DTYPE_I32, "i32", 4},
               {v1::DTYPE_I8, "i8", 1},     {v1::DTYPE_U8, "u8", 1},   {v1::DTYPE_BOOL, "bool", 1}};
  for (const auto& c : cases) {
    EXPECT_EQ(DTypeSize(c.dtype), c.size) << c.name;
    EXPECT_EQ(DTypeName(c.dtype), c.name);
    auto parsed = ParseDType(c.name);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, c.dtype);
    auto enum_spelling = ParseDType(v1::DType_Name(c.dtype));
    ASSERT_TRUE(enum_spelling.ok());
    EXPECT_EQ(*enum_spelling, c.dtype);
  }
  EXPECT_EQ(DTypeSize(v1::DTYPE_UNSPECIFIED), 0u);
  EXPECT_EQ(DTypeName(v1::DTYPE_UNSPECIFIED), "unspecified");
  EXPECT_FALSE(ParseDType("float").ok());
  EXPECT_FALSE(ParseDType("").ok());
  EXPECT_TRUE(IsFloatingDType(v1::DTYPE_BF16));
  EXPECT_FALSE(IsFloatingDType(v1::DTYPE_I32));
  EXPECT_TRUE(IsIntegerDType(v1::DTYPE_U8));
  EXPECT_FALSE(IsIntegerDType(v1::DTYPE_BOOL));
}

TEST(DTypeTest, HalfKnownValues) {
  EXPECT_EQ(FloatToHalfBits(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalfBits(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalfBits(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalfBits(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalfBits(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalfBits(65519.996f), 0x7BFF);  // just below the tie
  EXPECT_EQ(FloatToHalfBits(65520.0f), 0x7C00);    // tie with odd 0x7BFF: to Inf
  EXPECT_EQ(FloatToHalfBits(1e10f), 0x7C00);
  EXPECT_EQ(FloatToHalfBits(-std::numeric_limits<float>::infinity()), 0xFC00);
  // Ties to even: 1 + 2^-11 is halfway between 0x3C00 and 0x3C01.
  EXPECT_EQ(FloatToHalfBits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(FloatToHalfBits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(FloatToHalfBits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);
  // Subnormals: 2^-24 is the smallest; 2^-25 ties to even (zero).
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(FloatToHalfBits(std::ldexp(3.0f, -25)), 0x0002);     // 1.5 * 2^-24: tie to even
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
  EXPECT_EQ(FloatToHalfBits(std::ldexp(1023.5f, -24)), 0x0400);  // rounds up into the normals
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::denorm_min()), 0x0000);
  // NaN stays NaN and becomes quiet.
  const uint16_t nan = FloatToHalfBits(std::bit_cast<float>(0x7F800001u));
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  EXPECT_NE(nan & 0x0200, 0);
  EXPECT_EQ(FloatToHalfBits(std::numeric_limits<float>::quiet_NaN()) & 0x7E00, 0x7E00);

  EXPECT_EQ(HalfBitsToFloat(0x3C00), 1.0f);
  EXPECT_EQ(HalfBitsToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(HalfBitsToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfBitsToFloat(0x03FF), std::ldexp(1023.0f, -24));
  EXPECT_TRUE(std::signbit(HalfBitsToFloat(0x8000)));
  EXPECT_EQ(HalfBitsToFloat(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(HalfBitsToFloat(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(0x7E00)));
  EXPECT_TRUE(std::isnan(HalfBitsToFloat(0x7C01)));
}

TEST(DTypeTest, HalfRoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float value = HalfBitsToFloat(static_cast<uint16_t>(bits));
    const uint16_t back = FloatToHalfBits(value);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(HalfBitsToFloat(back))) << std::hex << bits;
    } else {
      EXPECT_EQ(back, bits) << std::hex << bits;
    }
  }
}

#if defined(__FLT16_MAX__)
// GCC's _Float16 conversion (libgcc, correctly rounded) as an independent oracle.
TEST(DTypeTest, HalfMatchesCompilerFloat16) {
  std::mt19937 rng(7);
  int checked = 0;
  for (int i = 0; i < 2000000; ++i) {
    // Random bit patterns around the half range (exponents 100..150) and below.
    uint32_t bits = rng();
    const uint32_t exponent = 95 + rng() % 60;
    bits = (bits & 0x807FFFFFu) | (exponent << 23);
    const float value = std::bit_cast<float>(bits);
    const _Float16 oracle = static_cast<_Float16>(value);
    uint16_t oracle_bits;
    std::memcpy(&oracle_bits, &oracle, 2);
    ASSERT_EQ(FloatToHalfBits(value), oracle_bits) << std::hexfloat << value;
    ++checked;
  }
  EXPECT_EQ(checked, 2000000);
}
#endif

TEST(DTypeTest, BFloat16KnownValues) {
  EXPECT_EQ(FloatToBFloat16Bits(1.0f), 0x3F80);
  EXPECT_EQ(FloatToBFloat16Bits(-1.0f), 0xBF80);
  EXPECT_EQ(FloatToBFloat16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // tie: even
  EXPECT_EQ(FloatToBFloat16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(FloatToBFloat16Bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_EQ(FloatToBFloat16Bits(std::numeric_limits<float>::max()), 0x7F80);  // -> Inf
  EXPECT_EQ(FloatToBFloat16Bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(FloatToBFloat16Bits(std::ldexp(1.0f, -133)), 0x0001);  // subnormal, exact
  EXPECT_EQ(FloatToBFloat16Bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  const uint16_t nan = FloatToBFloat16Bits(std::bit_cast<float>(0x7F800001u));
  EXPECT_TRUE(std::isnan(BFloat16BitsToFloat(nan)));  // the low payload bit alone would be lost
  EXPECT_EQ(FloatToBFloat16Bits(std::numeric_limits<float>::quiet_NaN()), 0x7FC0);
  EXPECT_EQ(BFloat16BitsToFloat(0x4049), std::bit_cast<float>(0x40490000u));
  EXPECT_EQ(DTypeMaxFinite(v1::DTYPE_BF16), std::bit_cast<float>(0x7F7F0000u));
}

TEST(DTypeTest, BFloat16RoundTripsEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float value = BFloat16BitsToFloat(static_cast<uint16_t>(bits));
    const uint16_t back = FloatToBFloat16Bits(value);
    if (std::isnan(value)) {
      EXPECT_TRUE(std::isnan(BFloat16BitsToFloat(back)));
    } else {
      EXPECT_EQ(back, bits) << std::hex << bits;
    }
  }
}

TEST(DTypeTest, RoundToDType) {
  EXPECT_EQ(RoundToDType(0.1, v1::DTYPE_F64), 0.1);
  EXPECT_EQ(RoundToDType(0.1, v1::DTYPE_F32), static_cast<double>(0.1f));
  EXPECT_EQ(RoundToDType(1.0 + 1e-4, v1::DTYPE_F16), 1.0);
  EXPECT_EQ(RoundToDType(1.0 + 1e-3, v1::DTYPE_F16), 1.0009765625);
  EXPECT_EQ(RoundToDType(1e6, v1::DTYPE_F16), std::numeric_limits<double>::infinity());
  EXPECT_EQ(RoundToDType(1.003, v1::DTYPE_BF16), 1.0);
  EXPECT_EQ(RoundToDType(2.5, v1::DTYPE_I32), 2.0);  // half to even
  EXPECT_EQ(RoundToDType(3.5, v1::DTYPE_I32), 4.0);
  EXPECT_EQ(RoundToDType(-2.5, v1::DTYPE_I32), -2.0);
  EXPECT_EQ(RoundToDType(300, v1::DTYPE_I8), 127.0);
  EXPECT_EQ(RoundToDType(-300, v1::DTYPE_I8), -128.0);
  EXPECT_EQ(RoundToDType(-5, v1::DTYPE_U8), 0.0);
  EXPECT_EQ(RoundToDType(1e30, v1::DTYPE_I32), 2147483647.0);
  EXPECT_EQ(RoundToDType(1e30, v1::DTYPE_I64), 9223372036854775807.0);
  EXPECT_EQ(RoundToDType(std::nan(""), v1::DTYPE_I32), 0.0);
  EXPECT_EQ(RoundToDType(0.25, v1::DTYPE_BOOL), 1.0);
  EXPECT_EQ(RoundToDType(0.0, v1::DTYPE_BOOL), 0.0);
}

TEST(DTypeTest, ReadWriteEveryDType) {
  const v1::DType dtypes[] = {v1::DTYPE_F64,  v1::DTYPE_F32, v1::DTYPE_F16,
                              v1::DTYPE_BF16, v1::DTYPE_I64, v1::DTYPE_I32,
                              v1::DTYPE_I8,   v1::DTYPE_U8,  v1::DTYPE_BOOL};
  const double values[] = {0.0, 1.0, -3.0, 100.0, 0.375, 7.0};
  for (const v1::DType dtype : dtypes) {
    std::string buffer(DTypeSize(dtype) * 6, '\x5A');
    for (size_t i = 0; i < 6; ++i) WriteElement(buffer.data(), dtype, i, values[i]);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_EQ(ReadElement(buffer, dtype, i), RoundToDType(values[i], dtype))
          << DTypeName(dtype) << " element " << i;
    }
  }
  // Little-endian layout of f32 1.0.
  std::string f32(4, '\0');
  WriteElement(f32.data(), v1::DTYPE_F32, 0, 1.0);
  EXPECT_EQ(f32, std::string("\x00\x00\x80\x3F", 4));
  // i64 beyond 2^53 is exact through ReadIntegerElement.
  const int64_t big = (int64_t{1} << 60) + 1;
  std::string i64(8, '\0');
  std::memcpy(i64.data(), &big, 8);
  EXPECT_EQ(ReadIntegerElement(i64.data(), v1::DTYPE_I64, 0), big);
  // A bool byte that is neither 0 nor 1 reads as itself.
  const std::string poisoned_bool("\xFF", 1);
  EXPECT_EQ(ReadElement(poisoned_bool, v1::DTYPE_BOOL, 0), 255.0);
  EXPECT_EQ(ReadIntegerElement(poisoned_bool.data(), v1::DTYPE_BOOL, 0), 255);
}

}  // namespace
}  // namespace kerneleval::data
