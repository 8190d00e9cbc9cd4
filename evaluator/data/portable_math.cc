#include "evaluator/data/portable_math.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace kerneleval::data {
namespace {

// ln 2 split so that e * kLn2High is exact for |e| < 2^20 (fdlibm's split).
constexpr double kLn2High = 6.93147180369123816490e-01;
constexpr double kLn2Low = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
constexpr double kHalfPi = 1.57079632679489661923;
constexpr double kSqrtHalf = 0.70710678118654752440;

// Series coefficients are compile-time constants: the compiler rounds 1.0 / k
// exactly as IEEE division at run time would, and the loops below are
// multiply-add chains without a division. Each polynomial is split into its
// even and odd parts (two independent chains half as long): the draws are
// latency-bound, and this halves their cost.
constexpr double Factorial(int n) {
  double f = 1.0;
  for (int i = 2; i <= n; ++i) f *= i;  // exact up to 22!
  return f;
}

template <int kTerms, typename Coefficient>
constexpr std::array<double, kTerms> Table(Coefficient coefficient) {
  std::array<double, kTerms> table{};
  for (int i = 0; i < kTerms; ++i) table[i] = coefficient(i);
  return table;
}

// 1 / n!, n = 0..14: exp on |r| <= ln2/2 (0.347^15 / 15! < 1e-19).
constexpr auto kInverseFactorials = Table<15>([](int n) { return 1.0 / Factorial(n); });
// (-1)^k / (2k)!, k = 0..9: cos on [0, pi/4] (0.786^20 / 20! < 1e-20).
constexpr auto kCosCoefficients =
    Table<10>([](int k) { return (k % 2 ? -1.0 : 1.0) / Factorial(2 * k); });
// (-1)^k / (2k+1)!, k = 0..9: sin on [0, pi/4].
constexpr auto kSinCoefficients =
    Table<10>([](int k) { return (k % 2 ? -1.0 : 1.0) / Factorial(2 * k + 1); });
// 1 / (2k + 1), k = 0..11: log m = 2 (s + s^3/3 + ...) with s^2 <= 0.0295
// (s^24 / 25 < 1e-19).
constexpr auto kOddReciprocals = Table<12>([](int k) { return 1.0 / (2 * k + 1); });

// sum_{k < N} c[k] z^k by Horner on the even and odd k separately (in z^2).
template <size_t N>
double EvenOddHorner(const std::array<double, N>& c, double z) {
  const double z2 = z * z;
  constexpr size_t kLastEven = (N - 1) / 2 * 2;
  constexpr size_t kLastOdd = N >= 2 ? (N - 2) / 2 * 2 + 1 : 0;
  double even = c[kLastEven];
  for (size_t k = kLastEven; k >= 2; k -= 2) even = even * z2 + c[k - 2];
  double odd = c[kLastOdd];
  for (size_t k = kLastOdd; k >= 3; k -= 2) odd = odd * z2 + c[k - 2];
  return even + z * odd;
}

double SinSmall(double x) { return x * EvenOddHorner(kSinCoefficients, x * x); }
double CosSmall(double x) { return EvenOddHorner(kCosCoefficients, x * x); }

}  // namespace

double PortableLog(double x) {
  if (!(x > 0.0) || x == std::numeric_limits<double>::infinity()) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  // frexp by bit manipulation for normal x (the libm call was ~10% of a draw).
  int exponent = 0;
  double mantissa = 0.0;  // [0.5, 1), exact
  const uint64_t bits = std::bit_cast<uint64_t>(x);
  const int biased = static_cast<int>(bits >> 52);  // x > 0: no sign bit
  if (biased == 0) {
    mantissa = std::frexp(x, &exponent);  // subnormal
  } else {
    exponent = biased - 1022;
    mantissa = std::bit_cast<double>((bits & 0x000FFFFFFFFFFFFFull) | 0x3FE0000000000000ull);
  }
  if (mantissa < kSqrtHalf) {
    mantissa *= 2.0;  // exact
    --exponent;
  }
  // mantissa in [sqrt(1/2), sqrt(2)): log m = 2 atanh(s), |s| <= 0.1716.
  const double s = (mantissa - 1.0) / (mantissa + 1.0);
  const double series = EvenOddHorner(kOddReciprocals, s * s);
  const double e = static_cast<double>(exponent);
  return e * kLn2High + (e * kLn2Low + 2.0 * s * series);
}

double PortableExp(double y) {
  if (std::isnan(y)) return y;
  if (y > 709.78) return std::numeric_limits<double>::infinity();
  if (y < -745.2) return 0.0;
  // y = k ln2 + r with |r| <= ln2 / 2. k is rounded to nearest even by the
  // 1.5 * 2^52 trick (exact for |.| < 2^51; no libm call).
  constexpr double kRoundingShift = 6755399441055744.0;
  const double k = (y * kInvLn2 + kRoundingShift) - kRoundingShift;
  const double r = (y - k * kLn2High) - k * kLn2Low;
  const double p = EvenOddHorner(kInverseFactorials, r);
  const int k_int = static_cast<int>(k);
  if (k_int < -1021 || k_int > 1022) return std::ldexp(p, k_int);  // subnormal or near overflow
  // p * 2^k is exact here: build 2^k from its bits instead of calling ldexp.
  return p * std::bit_cast<double>(static_cast<uint64_t>(k_int + 1023) << 52);
}

double PortableCosTwoPi(double u) {
  if (!(u >= 0.0 && u < 1.0)) return std::numeric_limits<double>::quiet_NaN();
  // 2 pi u = (q + fraction) * pi/2; both parts are exact for a dyadic u.
  const double turns4 = u * 4.0;
  const int q = static_cast<int>(turns4);  // floor: turns4 >= 0
  const double fraction = turns4 - q;      // [0, 1), exact
  // cos(q pi/2 + t) is cos t, -sin t, -cos t, sin t for q = 0..3, and
  // t > pi/4 is folded with cos t = sin(pi/2 - t). Both series are computed
  // (independent chains, they overlap) and the result selected without a
  // branch: the quadrant of a random draw is unpredictable.
  const bool folded = fraction > 0.5;
  const double x = (folded ? 1.0 - fraction : fraction) * kHalfPi;  // 1 - fraction is exact
  const double sin_x = SinSmall(x);
  const double cos_x = CosSmall(x);
  const bool want_sin = ((q & 1) == 1) != folded;
  const double value = want_sin ? sin_x : cos_x;
  return (q == 1 || q == 2) ? -value : value;
}

}  // namespace kerneleval::data
