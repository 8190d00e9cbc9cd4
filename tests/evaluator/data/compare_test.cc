#include "evaluator/data/compare.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "evaluator/data/dtype.h"
#include "evaluator/data/poison.h"

namespace kerneleval::data {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

internal::Tensor MakeTensor(v1::DType dtype, const std::vector<double>& values,
                            const std::string& name = "y") {
  internal::Tensor t;
  t.set_name(name);
  t.set_dtype(dtype);
  t.set_elements(values.size());
  std::string data(DTypeSize(dtype) * values.size(), '\0');
  for (size_t i = 0; i < values.size(); ++i) WriteElement(data.data(), dtype, i, values[i]);
  t.set_data(data);
  return t;
}

internal::Tensor F32(const std::vector<float>& values) {
  internal::Tensor t;
  t.set_name("y");
  t.set_dtype(v1::DTYPE_F32);
  t.set_elements(values.size());
  t.set_data(std::string(reinterpret_cast<const char*>(values.data()), 4 * values.size()));
  return t;
}

v1::OutputCheck Check(double expected, double got, v1::DType dtype = v1::DTYPE_F32) {
  const ToleranceValues tol = DefaultTolerance(dtype);
  return CompareTensor(MakeTensor(dtype, {expected}), MakeTensor(dtype, {got}), {1}, tol.atol,
                       tol.rtol);
}

TEST(CompareTest, ToleranceRule) {
  EXPECT_TRUE(Check(1.0, 1.0).passed());
  EXPECT_TRUE(Check(1.0, 1.0 + 1.05e-4).passed());  // atol 1e-5 + rtol 1e-4 * 1
  EXPECT_FALSE(Check(1.0, 1.0 + 1.2e-4).passed());
  EXPECT_TRUE(Check(0.0, 9e-6).passed());
  EXPECT_FALSE(Check(0.0, 1.1e-5).passed());
  EXPECT_TRUE(Check(-1000.0, -1000.1).passed());
  EXPECT_FALSE(Check(-1000.0, -1000.2).passed());
  EXPECT_TRUE(Check(0.0, -0.0).passed());
}

TEST(CompareTest, NonFiniteRules) {
  const struct {
    double expected, got;
    bool passes;
  } cases[] = {
      {kNaN, kNaN, true},   {kNaN, 1.0, false},  {kNaN, kInf, false}, {kInf, kInf, true},
      {kInf, -kInf, false}, {kInf, kNaN, false}, {kInf, 3e38, false}, {-kInf, -kInf, true},
      {-kInf, kInf, false}, {1.0, kNaN, false},  {1.0, kInf, false},  {1.0, -kInf, false},
      {0.0, kNaN, false},   {3e38, kInf, false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(Check(c.expected, c.got).passed(), c.passes) << c.expected << " vs " << c.got;
    EXPECT_EQ(ElementMatches(c.expected, c.got, 1e-5, 1e-4), c.passes);
    for (const v1::DType dtype : {v1::DTYPE_F64, v1::DTYPE_F16, v1::DTYPE_BF16}) {
      if (std::isfinite(c.expected) && std::fabs(c.expected) > DTypeMaxFinite(dtype)) continue;
      if (std::isfinite(c.got) && std::fabs(c.got) > DTypeMaxFinite(dtype)) continue;
      EXPECT_EQ(Check(c.expected, c.got, dtype).passed(), c.passes)
          << DTypeName(dtype) << " " << c.expected << " vs " << c.got;
    }
  }
  // Any NaN payload matches an expected NaN (the poison payload included).
  const internal::Tensor expected = F32({std::numeric_limits<float>::quiet_NaN()});
  internal::Tensor got = expected;
  got.set_data(PoisonedBuffer(v1::DTYPE_F32, 1));
  EXPECT_TRUE(CompareTensor(expected, got, {1}, 1e-5, 1e-4).passed());
}

TEST(CompareTest, FirstMismatchAndStatistics) {
  // 2 x 3 x 4 tensor; mismatches at flat 13 (1, 0, 1) and 22 (1, 2, 2).
  std::vector<float> expected(24), got(24);
  for (int i = 0; i < 24; ++i) expected[i] = got[i] = 0.5f * i;
  got[5] += 2e-6f;  // within tolerance, counts in max errors
  got[13] = 100.0f;
  got[22] = std::numeric_limits<float>::quiet_NaN();
  const v1::OutputCheck check = CompareTensor(F32(expected), F32(got), {2, 3, 4}, 1e-5, 1e-4);
  EXPECT_FALSE(check.passed());
  EXPECT_EQ(check.output(), "y");
  EXPECT_EQ(check.elements(), 24u);
  EXPECT_EQ(check.mismatches(), 2u);
  EXPECT_EQ(check.atol(), 1e-5);
  EXPECT_EQ(check.rtol(), 1e-4);
  // The NaN where 11.0 was expected is off by an unbounded amount.
  EXPECT_EQ(check.max_abs_error(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(check.max_rel_error(), std::numeric_limits<double>::infinity());
  got[22] = expected[22];  // finite mismatches only: the largest of them
  const v1::OutputCheck finite = CompareTensor(F32(expected), F32(got), {2, 3, 4}, 1e-5, 1e-4);
  EXPECT_DOUBLE_EQ(finite.max_abs_error(), 100.0 - 6.5);
  EXPECT_DOUBLE_EQ(finite.max_rel_error(), (100.0 - 6.5) / 6.5);
  EXPECT_EQ(check.first_mismatch().flat_index(), 13u);
  EXPECT_EQ(std::vector<int64_t>(check.first_mismatch().index().begin(),
                                 check.first_mismatch().index().end()),
            (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(check.first_mismatch().got(), 100.0);
  EXPECT_EQ(check.first_mismatch().expected(), 6.5);

  const v1::OutputCheck same = CompareTensor(F32(expected), F32(expected), {24}, 0, 0);
  EXPECT_TRUE(same.passed());
  EXPECT_EQ(same.mismatches(), 0u);
  EXPECT_FALSE(same.has_first_mismatch());
  EXPECT_EQ(same.max_abs_error(), 0.0);
}

TEST(CompareTest, RelativeErrorFloorsAtTheSmallestNormal) {
  const v1::OutputCheck check = CompareTensor(F32({0.0f}), F32({1e-30f}), {1}, 1e-5, 1e-4);
  EXPECT_TRUE(check.passed());
  EXPECT_DOUBLE_EQ(check.max_rel_error(),
                   static_cast<double>(1e-30f) / std::numeric_limits<float>::min());
}

TEST(CompareTest, UnravelIndex) {
  EXPECT_EQ(UnravelIndex(0, {}), std::vector<int64_t>{});
  EXPECT_EQ(UnravelIndex(7, {10}), std::vector<int64_t>{7});
  EXPECT_EQ(UnravelIndex(23, {2, 3, 4}), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(UnravelIndex(4, {1, 1, 5}), (std::vector<int64_t>{0, 0, 4}));
}

TEST(CompareTest, IntegersCompareExactly) {
  for (const v1::DType dtype : {v1::DTYPE_I64, v1::DTYPE_I32, v1::DTYPE_I8, v1::DTYPE_U8}) {
    const ToleranceValues tol = DefaultTolerance(dtype);
    EXPECT_EQ(tol.atol, 0.0);
    EXPECT_EQ(tol.rtol, 0.0);
    const auto expected = MakeTensor(dtype, {1, 2, 3, 100});
    EXPECT_TRUE(CompareTensor(expected, expected, {4}, tol.atol, tol.rtol).passed());
    const v1::OutputCheck off_by_one =
        CompareTensor(expected, MakeTensor(dtype, {1, 2, 3, 101}), {2, 2}, tol.atol, tol.rtol);
    EXPECT_FALSE(off_by_one.passed()) << DTypeName(dtype);
    EXPECT_EQ(off_by_one.first_mismatch().flat_index(), 3u);
    EXPECT_EQ(off_by_one.first_mismatch().index_size(), 2);
    EXPECT_EQ(off_by_one.first_mismatch().got(), 101.0);
    EXPECT_EQ(off_by_one.max_abs_error(), 1.0);
    // A tolerance the problem set explicitly applies.
    EXPECT_TRUE(CompareTensor(expected, MakeTensor(dtype, {1, 2, 3, 101}), {4}, 1.0, 0.0).passed());
  }
  // i64 values that a double cannot tell apart still differ.
  internal::Tensor a;
  a.set_name("y");
  a.set_dtype(v1::DTYPE_I64);
  a.set_elements(1);
  const int64_t big = (int64_t{1} << 62) + 1;
  a.set_data(std::string(reinterpret_cast<const char*>(&big), 8));
  internal::Tensor b = a;
  const int64_t big_plus_one = big + 1;
  b.set_data(std::string(reinterpret_cast<const char*>(&big_plus_one), 8));
  ASSERT_EQ(static_cast<double>(big), static_cast<double>(big_plus_one));
  EXPECT_FALSE(CompareTensor(a, b, {1}, 0, 0).passed());
  // Extremes do not overflow the difference.
  const auto lo = MakeTensor(v1::DTYPE_I64, {-9.3e18});
  const auto hi = MakeTensor(v1::DTYPE_I64, {9.3e18});
  const v1::OutputCheck extreme = CompareTensor(lo, hi, {1}, 0, 0);
  EXPECT_FALSE(extreme.passed());
  EXPECT_NEAR(extreme.max_abs_error(), 1.8446744073709552e19, 1e5);
}

TEST(CompareTest, BoolComparesStoredBytes) {
  const auto expected = MakeTensor(v1::DTYPE_BOOL, {1, 0, 1});
  EXPECT_TRUE(CompareTensor(expected, expected, {3}, 0, 0).passed());
  internal::Tensor got = expected;
  got.set_data(std::string("\x01\x00\xFF", 3));  // 0xFF is "true" to C++, not to us
  const v1::OutputCheck check = CompareTensor(expected, got, {3}, 0, 0);
  EXPECT_FALSE(check.passed());
  EXPECT_EQ(check.first_mismatch().flat_index(), 2u);
  EXPECT_EQ(check.first_mismatch().got(), 255.0);
}

TEST(CompareTest, LayoutMismatchesFailClearly) {
  const auto expected = F32({1, 2, 3, 4});
  std::string error;

  v1::OutputCheck check = CompareTensor(expected, F32({1, 2, 3}), {4}, 1e-5, 1e-4, &error);
  EXPECT_FALSE(check.passed());
  EXPECT_EQ(check.mismatches(), 4u);
  EXPECT_EQ(check.max_abs_error(), kInf);
  EXPECT_NE(error.find("3 elements, expected 4"), std::string::npos) << error;

  check = CompareTensor(expected, MakeTensor(v1::DTYPE_F16, {1, 2, 3, 4}), {4}, 1e-5, 1e-4, &error);
  EXPECT_FALSE(check.passed());
  EXPECT_NE(error.find("dtype f16, expected f32"), std::string::npos) << error;

  internal::Tensor truncated = expected;
  truncated.set_data(expected.data().substr(0, 10));
  check = CompareTensor(expected, truncated, {4}, 1e-5, 1e-4, &error);
  EXPECT_FALSE(check.passed());
  EXPECT_NE(error.find("10 bytes"), std::string::npos) << error;

  check = CompareTensor(expected, expected, {3, 2}, 1e-5, 1e-4, &error);
  EXPECT_FALSE(check.passed());
  EXPECT_NE(error.find("[3, 2] has 6 elements"), std::string::npos) << error;

  check = CompareTensor(expected, expected, {2, 2}, 1e-5, 1e-4, &error);
  EXPECT_TRUE(check.passed());
  EXPECT_EQ(error, "");

  // Empty tensors: nothing to compare, and nothing wrong.
  EXPECT_TRUE(CompareTensor(F32({}), F32({}), {0}, 1e-5, 1e-4, &error).passed());
}

internal::CheckedOutput Checked(const std::string& name, std::vector<int64_t> dims, double atol,
                                double rtol) {
  internal::CheckedOutput output;
  output.set_name(name);
  output.mutable_dims()->Assign(dims.begin(), dims.end());
  output.set_atol(atol);
  output.set_rtol(rtol);
  return output;
}

// The timed outputs' check (the CUDA worker's and the engine's): one
// CompareTensor per output, in the order asked, each with its name.
TEST(CompareOutputsTest, ChecksEachOutputInTheOrderAsked) {
  internal::CaseResult expected, got;
  *expected.add_outputs() = MakeTensor(v1::DTYPE_F32, {1, 2, 3, 4}, "y");
  *expected.add_outputs() = MakeTensor(v1::DTYPE_I32, {5, 6}, "idx");
  *got.add_outputs() = MakeTensor(v1::DTYPE_I32, {5, 7}, "idx");  // order need not match
  *got.add_outputs() = MakeTensor(v1::DTYPE_F32, {1, 2, 3, 4}, "y");
  google::protobuf::RepeatedPtrField<internal::CheckedOutput> outputs;
  *outputs.Add() = Checked("y", {2, 2}, 1e-5, 1e-4);
  *outputs.Add() = Checked("idx", {2}, 0, 0);
  absl::StatusOr<std::vector<v1::OutputCheck>> checks = CompareOutputs(outputs, expected, got);
  ASSERT_TRUE(checks.ok()) << checks.status();
  ASSERT_EQ(checks->size(), 2u);
  EXPECT_EQ((*checks)[0].output(), "y");
  EXPECT_TRUE((*checks)[0].passed());
  EXPECT_EQ((*checks)[0].atol(), 1e-5);
  EXPECT_EQ((*checks)[1].output(), "idx");
  EXPECT_FALSE((*checks)[1].passed());
  EXPECT_EQ((*checks)[1].mismatches(), 1u);
  EXPECT_EQ((*checks)[1].first_mismatch().flat_index(), 1u);
  EXPECT_EQ((*checks)[1].first_mismatch().got(), 7);
  EXPECT_EQ((*checks)[1].first_mismatch().expected(), 6);

  *outputs.Add() = Checked("absent", {1}, 0, 0);
  checks = CompareOutputs(outputs, expected, got);
  EXPECT_TRUE(absl::IsInternal(checks.status())) << checks.status();
  EXPECT_NE(checks.status().message().find("output absent missing from a run"), std::string::npos);
}

TEST(ToleranceTest, DefaultsAndOverrides) {
  EXPECT_EQ(DefaultTolerance(v1::DTYPE_F64).atol, 1e-10);
  EXPECT_EQ(DefaultTolerance(v1::DTYPE_F64).rtol, 1e-9);
  EXPECT_EQ(DefaultTolerance(v1::DTYPE_F32).atol, 1e-5);
  EXPECT_EQ(DefaultTolerance(v1::DTYPE_F32).rtol, 1e-4);
  EXPECT_EQ(DefaultTolerance(v1::DTYPE_F16).atol, 1e-3);
  EXPECT_EQ(DefaultTolerance(v1::DTYPE_F16).rtol, 1e-2);
  EXPECT_EQ(DefaultTolerance(v1::DTYPE_BF16).atol, 1e-2);
  EXPECT_EQ(DefaultTolerance(v1::DTYPE_BF16).rtol, 2e-2);
  EXPECT_EQ(DefaultTolerance(v1::DTYPE_BOOL).atol, 0.0);

  v1::Tolerance only_atol;
  only_atol.set_atol(1e-7);
  const ToleranceValues resolved = ResolveTolerance(v1::DTYPE_F32, only_atol);
  EXPECT_EQ(resolved.atol, 1e-7);
  EXPECT_EQ(resolved.rtol, 1e-4);
  v1::Tolerance zero_rtol;
  zero_rtol.set_rtol(0.0);  // explicitly zero is not "unset"
  EXPECT_EQ(ResolveTolerance(v1::DTYPE_F32, zero_rtol).rtol, 0.0);
  EXPECT_EQ(ResolveTolerance(v1::DTYPE_F32, zero_rtol).atol, 1e-5);
}

// Dot products of realistic size (256 products of U[-1, 1) values, results of
// magnitude ~5): an honest fp32 kernel that sums in another order passes the
// f32 default; the same results rounded to fp16, or summed in fp16, fail.
class PrecisionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(2024);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    constexpr int kOutputs = 20000, kTerms = 256;
    for (int o = 0; o < kOutputs; ++o) {
      std::vector<float> products(kTerms);
      for (auto& p : products) p = u(rng) * u(rng);
      float sequential = 0.0f;
      for (float p : products) sequential += p;
      // Another order: 8 interleaved partial sums, then a tree (what a
      // vectorised or warp-reduced kernel does).
      float partial[8] = {};
      for (int t = 0; t < kTerms; ++t) partial[t % 8] += products[t];
      for (int width = 4; width >= 1; width /= 2) {
        for (int i = 0; i < width; ++i) partial[i] += partial[i + width];
      }
      _Float16 half_sum = 0;
      for (float p : products) half_sum = half_sum + static_cast<_Float16>(p);
      reference_.push_back(sequential);
      reordered_.push_back(partial[0]);
      rounded_to_half_.push_back(HalfBitsToFloat(FloatToHalfBits(sequential)));
      summed_in_half_.push_back(static_cast<float>(half_sum));
      rounded_to_bf16_.push_back(BFloat16BitsToFloat(FloatToBFloat16Bits(sequential)));
    }
  }

  bool PassesF32Default(const std::vector<float>& got) const {
    const ToleranceValues tol = DefaultTolerance(v1::DTYPE_F32);
    const int64_t n = static_cast<int64_t>(got.size());
    return CompareTensor(F32(reference_), F32(got), {n}, tol.atol, tol.rtol).passed();
  }

  std::vector<float> reference_, reordered_, rounded_to_half_, summed_in_half_, rounded_to_bf16_;
};

TEST_F(PrecisionTest, Fp32ReorderingPasses) { EXPECT_TRUE(PassesF32Default(reordered_)); }

TEST_F(PrecisionTest, Fp16AndBf16Fail) {
  EXPECT_FALSE(PassesF32Default(rounded_to_half_));
  EXPECT_FALSE(PassesF32Default(summed_in_half_));
  EXPECT_FALSE(PassesF32Default(rounded_to_bf16_));
  // Not by a lucky element: a sizeable fraction of fp16-rounded outputs fail.
  const ToleranceValues tol = DefaultTolerance(v1::DTYPE_F32);
  const int64_t n = static_cast<int64_t>(reference_.size());
  const v1::OutputCheck check =
      CompareTensor(F32(reference_), F32(rounded_to_half_), {n}, tol.atol, tol.rtol);
  EXPECT_GT(check.mismatches(), reference_.size() / 10);
}

}  // namespace
}  // namespace kerneleval::data
