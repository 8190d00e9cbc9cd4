#include "evaluator/data/prng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

#include "evaluator/data/dtype.h"
#include "evaluator/data/portable_math.h"

namespace kerneleval::data {
namespace {

internal::BufferSpec Spec(const std::string& name, v1::DType dtype, uint64_t elements,
                          const v1::Distribution& distribution = {}) {
  internal::BufferSpec spec;
  spec.set_name(name);
  spec.set_dtype(dtype);
  spec.set_elements(elements);
  *spec.mutable_distribution() = distribution;
  return spec;
}

v1::Distribution Uniform(double low, double high) {
  v1::Distribution d;
  d.mutable_uniform()->set_low(low);
  d.mutable_uniform()->set_high(high);
  return d;
}

v1::Distribution Normal(double mean, double stddev) {
  v1::Distribution d;
  d.mutable_normal()->set_mean(mean);
  d.mutable_normal()->set_stddev(stddev);
  return d;
}

v1::Distribution SpikedNormal(double mean, double stddev, uint32_t spikes_per_2048, double spike) {
  v1::Distribution d = Normal(mean, stddev);
  d.mutable_normal()->set_spikes_per_2048(spikes_per_2048);
  d.mutable_normal()->set_spike(spike);
  return d;
}

v1::Distribution Pareto(double scale, double alpha, bool symmetric) {
  v1::Distribution d;
  d.mutable_pareto()->set_scale(scale);
  d.mutable_pareto()->set_alpha(alpha);
  d.mutable_pareto()->set_symmetric(symmetric);
  return d;
}

v1::Distribution IntRange(int64_t low, int64_t high) {
  v1::Distribution d;
  d.mutable_int_range()->set_low(low);
  d.mutable_int_range()->set_high(high);
  return d;
}

std::vector<double> Values(const internal::BufferSpec& spec, uint64_t seed) {
  const std::string bytes = GenerateInput(spec, seed);
  std::vector<double> values(spec.elements());
  for (size_t i = 0; i < values.size(); ++i) values[i] = ReadElement(bytes, spec.dtype(), i);
  return values;
}

uint64_t Fnv1a(const std::string& bytes) { return HashBufferName(bytes); }

uint32_t F32Bits(const std::string& bytes, size_t index) {
  uint32_t bits;
  std::memcpy(&bits, bytes.data() + 4 * index, 4);
  return bits;
}

struct Moments {
  double mean = 0, variance = 0, skewness = 0, kurtosis = 0, min = 0, max = 0;
};

Moments ComputeMoments(const std::vector<double>& v) {
  Moments m;
  double sum = 0;
  for (double x : v) sum += x;
  m.mean = sum / v.size();
  double m2 = 0, m3 = 0, m4 = 0;
  for (double x : v) {
    const double d = x - m.mean;
    m2 += d * d;
    m3 += d * d * d;
    m4 += d * d * d * d;
  }
  m2 /= v.size();
  m3 /= v.size();
  m4 /= v.size();
  m.variance = m2;
  m.skewness = m3 / std::pow(m2, 1.5);
  m.kurtosis = m4 / (m2 * m2);
  m.min = *std::min_element(v.begin(), v.end());
  m.max = *std::max_element(v.begin(), v.end());
  return m;
}

// Known-answer vectors of Random123's kat_vectors for philox4x32_10.
TEST(PhiloxTest, KnownAnswers) {
  EXPECT_EQ(Philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(
      Philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
      (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(
      Philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
      (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PrngTest, FnvHashOfNames) {
  EXPECT_EQ(HashBufferName(""), 0xCBF29CE484222325ull);
  EXPECT_EQ(HashBufferName("a"), 0xAF63DC4C8601EC8Cull);
  EXPECT_NE(HashBufferName("x"), HashBufferName("y"));
}

// Golden values: any change to the generator (constants, word layout, math,
// rounding) changes these, and with them every recorded seed's inputs.
// The first values were checked against an independent Python model of the
// generator (Philox + the formulas in prng.h, with math.log/math.cos).
TEST(PrngTest, GoldenBytes) {
  const std::string uniform = GenerateInput(Spec("x", v1::DTYPE_F32, 4096), 42);
  EXPECT_EQ(F32Bits(uniform, 0), 0xBEAEF108u);  // -0.34168...
  EXPECT_EQ(F32Bits(uniform, 1), 0x3EE27B6Au);
  EXPECT_EQ(F32Bits(uniform, 4095), 0x3E3B66B5u);
  EXPECT_EQ(Fnv1a(uniform), 0x8C0C44A2612AE421ull) << std::hex << Fnv1a(uniform);

  const std::string normal = GenerateInput(Spec("x", v1::DTYPE_F32, 4096, Normal(0, 1)), 42);
  EXPECT_EQ(F32Bits(normal, 0), 0x3EC39323u);
  EXPECT_EQ(Fnv1a(normal), 0xB905AD7BAFBB2FB9ull) << std::hex << Fnv1a(normal);

  const std::string pareto =
      GenerateInput(Spec("x", v1::DTYPE_F32, 4096, Pareto(1, 1.5, true)), 42);
  EXPECT_EQ(Fnv1a(pareto), 0x5B165DC348A0933Cull) << std::hex << Fnv1a(pareto);

  const std::string ints = GenerateInput(Spec("idx", v1::DTYPE_I32, 4096), 7);
  EXPECT_EQ(Fnv1a(ints), 0x959DFC9F878E3215ull) << std::hex << Fnv1a(ints);

  const std::string half = GenerateInput(Spec("h", v1::DTYPE_F16, 4096, Normal(0, 2)), 7);
  EXPECT_EQ(Fnv1a(half), 0x4C5A1CE02B6482B6ull) << std::hex << Fnv1a(half);

  const std::string bf16 = GenerateInput(Spec("h", v1::DTYPE_BF16, 4096), 7);
  EXPECT_EQ(Fnv1a(bf16), 0x79F0B347E611282Cull) << std::hex << Fnv1a(bf16);

  const std::string f64 = GenerateInput(Spec("d", v1::DTYPE_F64, 4096, Normal(1, 3)), 7);
  EXPECT_EQ(Fnv1a(f64), 0x323DDECD11C8ABE8ull) << std::hex << Fnv1a(f64);
}

TEST(PrngTest, SameSeedSameBytesOtherwiseDifferent) {
  const auto spec = Spec("x", v1::DTYPE_F32, 10000, Normal(0, 1));
  const std::string a = GenerateInput(spec, 1234);
  EXPECT_EQ(a.size(), 40000u);
  EXPECT_EQ(a, GenerateInput(spec, 1234));
  EXPECT_NE(a, GenerateInput(spec, 1235));
  EXPECT_NE(a, GenerateInput(Spec("y", v1::DTYPE_F32, 10000, Normal(0, 1)), 1234));
  // Seeds differing only in the high word give different streams too.
  EXPECT_NE(a, GenerateInput(spec, 1234 + (uint64_t{1} << 40)));
  // Two buffers of one case never share values element for element.
  const std::string b = GenerateInput(Spec("y", v1::DTYPE_F32, 10000, Normal(0, 1)), 1234);
  int equal = 0;
  for (size_t i = 0; i < 10000; ++i) equal += F32Bits(a, i) == F32Bits(b, i);
  EXPECT_LT(equal, 5);
}

TEST(PrngTest, IndependentOfThreadsAndSlicing) {
  const auto spec = Spec("big", v1::DTYPE_F32, 1 << 20, Pareto(2, 1.2, true));
  const std::string one = GenerateInput(spec, 99, 1);
  EXPECT_EQ(one, GenerateInput(spec, 99, 4));
  EXPECT_EQ(one, GenerateInput(spec, 99, 7));
  // A slice generated alone equals the same slice of the whole buffer, and a
  // longer buffer starts with the shorter one.
  std::string slice(4 * 1000, '\0');
  GenerateInputRange(spec, 99, 5000, 6000, slice.data() - 4 * 5000);
  EXPECT_EQ(slice, one.substr(4 * 5000, 4 * 1000));
  auto shorter = spec;
  shorter.set_elements(777);
  EXPECT_EQ(GenerateInput(shorter, 99), one.substr(0, 4 * 777));
}

TEST(PrngTest, UniformMomentsAndRange) {
  const auto values = Values(Spec("u", v1::DTYPE_F32, 1 << 20, Uniform(-2, 6)), 5);
  const Moments m = ComputeMoments(values);
  EXPECT_NEAR(m.mean, 2.0, 0.02);              // sd of the mean: 2.31 / 1024
  EXPECT_NEAR(m.variance, 64.0 / 12.0, 0.03);  // (b - a)^2 / 12
  EXPECT_GE(m.min, -2.0);
  EXPECT_LT(m.max, 6.0);
  EXPECT_LT(m.min, -1.99);
  EXPECT_GT(m.max, 5.99);
}

TEST(PrngTest, DefaultDistributions) {
  const Moments f = ComputeMoments(Values(Spec("u", v1::DTYPE_F32, 1 << 18), 5));
  EXPECT_GE(f.min, -1.0);
  EXPECT_LT(f.max, 1.0);
  EXPECT_NEAR(f.mean, 0.0, 0.01);
  const auto ints = Values(Spec("i", v1::DTYPE_I32, 1 << 18), 5);
  const Moments i = ComputeMoments(ints);
  EXPECT_EQ(i.min, 0.0);
  EXPECT_EQ(i.max, 100.0);
  EXPECT_NEAR(i.mean, 50.0, 0.3);
  for (double v : ints) ASSERT_EQ(v, std::floor(v));
  const Moments b = ComputeMoments(Values(Spec("b", v1::DTYPE_BOOL, 1 << 16), 5));
  EXPECT_EQ(b.min, 0.0);
  EXPECT_EQ(b.max, 1.0);
  EXPECT_NEAR(b.mean, 0.5, 0.01);
}

TEST(PrngTest, UniformStaysBelowHighAfterRounding) {
  // In f16 and bf16 most draws in [1 - ulp/2, 1) round up to 1.0; they must
  // be moved down instead.
  for (const v1::DType dtype : {v1::DTYPE_F16, v1::DTYPE_BF16, v1::DTYPE_F32}) {
    const auto values = Values(Spec("u", dtype, 1 << 18, Uniform(0, 1)), 11);
    const Moments m = ComputeMoments(values);
    EXPECT_GE(m.min, 0.0) << DTypeName(dtype);
    EXPECT_LT(m.max, 1.0) << DTypeName(dtype);
  }
  // A narrow range of one bf16 ulp: every value is `low`.
  const auto narrow = Values(Spec("u", v1::DTYPE_BF16, 1000, Uniform(1.0, 1.0078125)), 3);
  for (double v : narrow) ASSERT_EQ(v, 1.0);
}

TEST(PrngTest, NormalMoments) {
  const auto values = Values(Spec("n", v1::DTYPE_F64, 1 << 20, Normal(2.0, 3.0)), 17);
  const Moments m = ComputeMoments(values);
  EXPECT_NEAR(m.mean, 2.0, 0.015);  // sd of the mean: 3 / 1024
  EXPECT_NEAR(std::sqrt(m.variance), 3.0, 0.01);
  EXPECT_NEAR(m.skewness, 0.0, 0.02);
  EXPECT_NEAR(m.kurtosis, 3.0, 0.04);
  // Tails: about 0.27 % beyond 3 sigma.
  const double beyond = std::count_if(values.begin(), values.end(),
                                      [](double x) { return std::fabs(x - 2.0) > 9.0; });
  EXPECT_NEAR(beyond / values.size(), 0.0027, 0.0006);
}

// Spikes: about spikes_per_2048 / 2048 of the elements have `spike` added,
// chosen by bits the normal draw does not use, so every other element keeps
// the value it has without spikes.
TEST(PrngTest, NormalSpikesAreRareAndAddToTheSameDraws) {
  const int n = 1 << 20;
  const auto plain = Values(Spec("n", v1::DTYPE_F64, n, Normal(85.0, 1.0)), 17);
  const auto spiked = Values(Spec("n", v1::DTYPE_F64, n, SpikedNormal(85.0, 1.0, 4, 120.0)), 17);
  int spikes = 0;
  for (int i = 0; i < n; ++i) {
    if (spiked[i] == plain[i]) continue;
    ++spikes;
    EXPECT_NEAR(spiked[i] - plain[i], 120.0, 1e-9) << i;
  }
  // 4 / 2048 of 2^20: 2048, sd ~45.
  EXPECT_NEAR(spikes, 2048, 200);
  EXPECT_EQ(Values(Spec("n", v1::DTYPE_F64, n, SpikedNormal(85.0, 1.0, 0, 120.0)), 17), plain);
  const auto all = Values(Spec("n", v1::DTYPE_F64, 4096, SpikedNormal(0.0, 1.0, 2048, 50.0)), 3);
  for (double x : all) EXPECT_GT(x, 40.0);
}

TEST(PrngTest, ParetoTailAndSign) {
  // alpha 3: mean alpha/(alpha-1) = 1.5, P(x > t) = t^-3.
  const auto values = Values(Spec("p", v1::DTYPE_F64, 1 << 20, Pareto(1.0, 3.0, false)), 23);
  const Moments m = ComputeMoments(values);
  EXPECT_GE(m.min, 1.0);
  EXPECT_NEAR(m.mean, 1.5, 0.01);
  const double above2 =
      std::count_if(values.begin(), values.end(), [](double x) { return x > 2.0; });
  EXPECT_NEAR(above2 / values.size(), 0.125, 0.002);

  const auto symmetric = Values(Spec("p", v1::DTYPE_F32, 1 << 18, Pareto(0.5, 1.5, true)), 23);
  const double negative =
      std::count_if(symmetric.begin(), symmetric.end(), [](double x) { return x < 0; });
  EXPECT_NEAR(negative / symmetric.size(), 0.5, 0.005);
  for (double x : symmetric) ASSERT_GE(std::fabs(x), 0.5);
}

TEST(PrngTest, HeavyTailsSaturateInsteadOfInf) {
  // alpha 0.2 overflows f16 often: values saturate at 65504, never Inf.
  const auto values = Values(Spec("p", v1::DTYPE_F16, 1 << 16, Pareto(1.0, 0.2, true)), 3);
  int saturated = 0;
  for (double x : values) {
    ASSERT_TRUE(std::isfinite(x));
    saturated += std::fabs(x) == 65504.0;
  }
  EXPECT_GT(saturated, 0);
}

TEST(PrngTest, IntRangeInclusiveAndExact) {
  const auto values = Values(Spec("i", v1::DTYPE_I8, 1 << 16, IntRange(-3, 3)), 8);
  std::vector<int> counts(7, 0);
  for (double v : values) {
    ASSERT_GE(v, -3);
    ASSERT_LE(v, 3);
    ++counts[static_cast<int>(v) + 3];
  }
  for (int c : counts) EXPECT_NEAR(c, 65536.0 / 7, 400);
  // i64 values beyond 2^53 are stored exactly.
  const int64_t low = (int64_t{1} << 60);
  const auto spec = Spec("i", v1::DTYPE_I64, 1000, IntRange(low, low + 1));
  const std::string bytes = GenerateInput(spec, 8);
  int odd = 0;
  for (size_t i = 0; i < 1000; ++i) {
    const int64_t v = ReadIntegerElement(bytes.data(), v1::DTYPE_I64, i);
    ASSERT_TRUE(v == low || v == low + 1);
    odd += v == low + 1;
  }
  EXPECT_GT(odd, 400);
  EXPECT_LT(odd, 600);
  // The whole int64 range (span wraps to 0) works.
  const auto full =
      Spec("i", v1::DTYPE_I64, 100,
           IntRange(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(GenerateInput(full, 1).size(), 800u);
}

TEST(PrngTest, FloatDistributionsOnIntegerDTypesFloor) {
  const auto values = Values(Spec("i", v1::DTYPE_I32, 10000, Uniform(0, 10)), 4);
  const Moments m = ComputeMoments(values);
  EXPECT_EQ(m.min, 0);
  EXPECT_EQ(m.max, 9);
  const auto saturated = Values(Spec("i", v1::DTYPE_U8, 1000, Uniform(-1000, -500)), 4);
  for (double v : saturated) ASSERT_EQ(v, 0);
}

TEST(PrngTest, ValidateDistribution) {
  EXPECT_TRUE(ValidateDistribution({}, v1::DTYPE_F32).ok());
  EXPECT_TRUE(ValidateDistribution(Uniform(-1, 1), v1::DTYPE_F32).ok());
  EXPECT_FALSE(ValidateDistribution(Uniform(1, 1), v1::DTYPE_F32).ok());
  EXPECT_FALSE(ValidateDistribution(Uniform(0, INFINITY), v1::DTYPE_F32).ok());
  EXPECT_FALSE(ValidateDistribution(Normal(0, -1), v1::DTYPE_F32).ok());
  EXPECT_FALSE(ValidateDistribution(Normal(NAN, 1), v1::DTYPE_F32).ok());
  EXPECT_TRUE(ValidateDistribution(SpikedNormal(85, 1, 2048, 120), v1::DTYPE_F32).ok());
  EXPECT_FALSE(ValidateDistribution(SpikedNormal(85, 1, 2049, 120), v1::DTYPE_F32).ok());
  EXPECT_FALSE(ValidateDistribution(SpikedNormal(85, 1, 1, INFINITY), v1::DTYPE_F32).ok());
  EXPECT_FALSE(ValidateDistribution(Pareto(0, 1, false), v1::DTYPE_F32).ok());
  EXPECT_FALSE(ValidateDistribution(Pareto(1, 0, false), v1::DTYPE_F32).ok());
  EXPECT_FALSE(ValidateDistribution(IntRange(5, 4), v1::DTYPE_I32).ok());
  EXPECT_FALSE(ValidateDistribution(IntRange(0, 300), v1::DTYPE_U8).ok());
  EXPECT_FALSE(ValidateDistribution(IntRange(-1, 1), v1::DTYPE_U8).ok());
  EXPECT_TRUE(ValidateDistribution(IntRange(0, 255), v1::DTYPE_U8).ok());
  EXPECT_TRUE(ValidateDistribution(IntRange(-128, 127), v1::DTYPE_I8).ok());
  EXPECT_FALSE(ValidateDistribution(IntRange(0, 2), v1::DTYPE_BOOL).ok());
  EXPECT_TRUE(ValidateDistribution(IntRange(0, 100000), v1::DTYPE_F32).ok());
}

TEST(PortableMathTest, CloseToTheCLibrary) {
  for (double x = 1e-300; x < 1e300; x *= 1.37) {
    ASSERT_NEAR(PortableLog(x), std::log(x), 4e-16 * std::max(1.0, std::fabs(std::log(x)))) << x;
  }
  for (double u = std::ldexp(1.0, -53); u <= 1.0; u = u * 1.01 + 1e-7) {
    ASSERT_NEAR(PortableLog(u), std::log(u), 4e-16 * std::max(1.0, std::fabs(std::log(u))));
  }
  EXPECT_EQ(PortableLog(1.0), 0.0);
  EXPECT_TRUE(std::isnan(PortableLog(0.0)));
  EXPECT_TRUE(std::isnan(PortableLog(-1.0)));
  for (double y = -700; y < 700; y += 0.731) {
    ASSERT_NEAR(PortableExp(y) / std::exp(y), 1.0, 1e-15) << y;
  }
  EXPECT_EQ(PortableExp(0.0), 1.0);
  EXPECT_EQ(PortableExp(800.0), INFINITY);
  EXPECT_EQ(PortableExp(-800.0), 0.0);
  for (double u = 0; u < 1.0; u += 1.0 / 4096 + 1e-9) {
    ASSERT_NEAR(PortableCosTwoPi(u), std::cos(2 * M_PI * u), 2e-16 * 8) << u;
  }
  EXPECT_EQ(PortableCosTwoPi(0.0), 1.0);
  EXPECT_EQ(PortableCosTwoPi(0.5), -1.0);
  EXPECT_EQ(PortableCosTwoPi(0.25), 0.0);
}

TEST(GeneratedInputsTest, GeneratesEachSeedAndSpecOnce) {
  GeneratedInputs generated(2);
  const internal::BufferSpec x = Spec("x", v1::DTYPE_F32, 1000);
  const std::shared_ptr<const std::string> first = generated.Get(x, 5);
  EXPECT_EQ(*first, GenerateInput(x, 5));
  EXPECT_EQ(generated.Get(x, 5), first);  // the same bytes, not generated again
  EXPECT_NE(generated.Get(x, 6), first);
  EXPECT_NE(*generated.Get(x, 6), *first);
  EXPECT_NE(generated.Get(Spec("x", v1::DTYPE_F32, 1001), 5), first);
  EXPECT_NE(generated.Get(Spec("y", v1::DTYPE_F32, 1000), 5), first);
}

TEST(GeneratedInputsTest, DropsWhatItKeepsPastItsBound) {
  GeneratedInputs generated(1, /*max_bytes=*/10'000);
  const internal::BufferSpec x = Spec("x", v1::DTYPE_F32, 1000);  // 4000 bytes
  const internal::BufferSpec y = Spec("y", v1::DTYPE_F32, 1000);
  const internal::BufferSpec z = Spec("z", v1::DTYPE_F32, 1000);
  const std::shared_ptr<const std::string> first = generated.Get(x, 5);
  EXPECT_EQ(generated.Get(x, 5), first);
  generated.Get(y, 5);  // 8000 bytes kept
  EXPECT_EQ(generated.generated(), 2u);
  generated.Get(z, 5);  // 12000: x and y dropped first
  EXPECT_EQ(generated.generated(), 3u);
  EXPECT_EQ(generated.Get(z, 5), generated.Get(z, 5));
  const std::shared_ptr<const std::string> again = generated.Get(x, 5);
  EXPECT_EQ(generated.generated(), 4u);
  EXPECT_NE(again, first);
  EXPECT_EQ(*again, *first);  // what was handed out stays valid, and equal
  // Larger than the bound: generated, handed out, not kept.
  const internal::BufferSpec big = Spec("big", v1::DTYPE_F32, 3000);
  generated.Get(big, 5);
  generated.Get(big, 5);
  EXPECT_EQ(generated.generated(), 6u);
}

TEST(TimedInputSeedTest, DeterministicAndNewPerRoundSetAndProgram) {
  EXPECT_EQ(TimedInputSeed(7, 3, 0), TimedInputSeed(7, 3, 0));
  std::vector<uint64_t> seeds;
  for (uint64_t set_seed : {1u, 2u, 7u}) {
    seeds.push_back(set_seed);  // no round reuses a set's own seed
    for (uint64_t program = 0; program <= 64; ++program) {
      for (uint64_t round = 0; round < 30; ++round) {
        seeds.push_back(TimedInputSeed(set_seed, round, program));
      }
    }
  }
  std::sort(seeds.begin(), seeds.end());
  // ~5850 64-bit draws: a repeat would be a broken stream.
  EXPECT_EQ(std::unique(seeds.begin(), seeds.end()), seeds.end());
  // Not just a shift of the round: program p's round r is not program 0's
  // round r + k for a fixed k.
  for (uint64_t program = 1; program <= 3; ++program) {
    int equal = 0;
    for (uint64_t round = 0; round < 100; ++round) {
      equal += TimedInputSeed(11, round, program) == TimedInputSeed(11, round + program, 0);
    }
    EXPECT_EQ(equal, 0) << program;
  }
}

// What closed the rotation memo (tests/exploits/rotation_memo_row_sum.cu):
// rounds used to rotate one generated set, every round's values the set's
// values again, which a kernel could table on first sight and look up. Now
// two rounds share values by chance only: uniform f32 on [-1, 1) has ~2^25
// equally likely values, so 4096 against 4096 meet ~0.5 times on average.
TEST(TimedInputSeedTest, ARoundSharesNoValuesWithTheRoundBefore) {
  const internal::BufferSpec x = Spec("x", v1::DTYPE_F32, 4096);
  for (uint64_t round = 1; round < 4; ++round) {
    const std::string before = GenerateInput(x, TimedInputSeed(5, round - 1, 0));
    const std::string now = GenerateInput(x, TimedInputSeed(5, round, 0));
    std::set<uint32_t> seen;
    for (size_t i = 0; i < 4096; ++i) seen.insert(F32Bits(before, i));
    int shared = 0;
    for (size_t i = 0; i < 4096; ++i) shared += seen.count(F32Bits(now, i)) > 0;
    EXPECT_LT(shared, 8) << "round " << round;
  }
}

// The CUDA worker's generator (ke_generate_input) writes one element at a
// time with GenerateElement; the host batches eight: the same bytes, for
// every dtype and distribution (the GPU check compares the GPU's bytes with
// these).
TEST(ElementGeneratorTest, OneElementAtATimeGivesGenerateInputsBytes) {
  const std::vector<v1::Distribution> distributions = {
      v1::Distribution(),     Uniform(-3, 5),
      Normal(1, 2),           SpikedNormal(85, 1, 64, 120),
      Pareto(0.5, 1.5, true), Pareto(1, 0.05, false),
      IntRange(-300, 300),    IntRange(INT64_MIN, INT64_MAX)};
  for (v1::DType dtype :
       {v1::DTYPE_F64, v1::DTYPE_F32, v1::DTYPE_F16, v1::DTYPE_BF16, v1::DTYPE_I64, v1::DTYPE_I32,
        v1::DTYPE_I8, v1::DTYPE_U8, v1::DTYPE_BOOL}) {
    for (size_t d = 0; d < distributions.size(); ++d) {
      internal::BufferSpec spec = Spec("in", dtype, 1003);
      *spec.mutable_distribution() = distributions[d];
      const std::string expected = GenerateInput(spec, 99);
      const ElementSampler sampler = MakeElementSampler(spec.distribution(), dtype);
      std::string got(expected.size(), '\x5a');
      for (uint64_t i = 0; i < spec.elements(); ++i) {
        GenerateElement(sampler, 99, HashBufferName("in"), i, got.data());
      }
      EXPECT_EQ(got, expected) << DTypeName(dtype) << " distribution " << d;
    }
  }
}

}  // namespace
}  // namespace kerneleval::data
