// log, exp and cos(2*pi*u) built from +, -, *, / and exponent bits only, so
// that they give the same bits on every machine and C library (glibc, musl
// and libc++ differ in the last ulp of std::log/std::cos) and on the GPU,
// where the CUDA worker generates timed inputs with them (element_generator.h).
// The PRNG uses them to draw normal and Pareto values; accuracy is a few ulp
// of a double, far below the rounding to the tensor's dtype. Every file that
// includes this is compiled without FMA contraction (-ffp-contract=off for
// the host compiler, -fmad=false for nvcc): a contraction would change the
// bits between x86-64, aarch64 and the GPU.
#pragma once

#include <cstdint>

#include "evaluator/data/host_device.h"

namespace kerneleval::data {
namespace portable_math_internal {

// x * 2^e, exact where the result is a normal double (2^e built from its bits).
KERNELEVAL_HOST_DEVICE inline double TimesPowerOfTwo(double x, int e) {
  return x * BitsToDouble(static_cast<uint64_t>(e + 1023) << 52);
}

// ln 2 split so that e * kLn2High is exact for |e| < 2^20 (fdlibm's split).
constexpr double kLn2High = 6.93147180369123816490e-01;
constexpr double kLn2Low = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
constexpr double kHalfPi = 1.57079632679489661923;
constexpr double kSqrtHalf = 0.70710678118654752440;
constexpr double kInfinity = __builtin_huge_val();
constexpr double kQuietNaN = __builtin_nan("");

// Series coefficients are compile-time constants (constexpr variables below,
// on the host and the GPU alike): the compiler rounds 1.0 / k exactly as IEEE
// division at run time would, and the polynomials are multiply-add chains
// without a division.
KERNELEVAL_HOST_DEVICE constexpr double Factorial(int n) {
  double f = 1.0;
  for (int i = 2; i <= n; ++i) f *= i;  // exact up to 22!
  return f;
}

// 1 / n!: exp on |r| <= ln2/2 (0.347^15 / 15! < 1e-19), 15 terms.
struct InverseFactorials {
  KERNELEVAL_HOST_DEVICE static constexpr double At(int n) { return 1.0 / Factorial(n); }
};
// (-1)^k / (2k)!: cos on [0, pi/4] (0.786^20 / 20! < 1e-20), 10 terms.
struct CosCoefficients {
  KERNELEVAL_HOST_DEVICE static constexpr double At(int k) {
    return (k % 2 ? -1.0 : 1.0) / Factorial(2 * k);
  }
};
// (-1)^k / (2k+1)!: sin on [0, pi/4], 10 terms.
struct SinCoefficients {
  KERNELEVAL_HOST_DEVICE static constexpr double At(int k) {
    return (k % 2 ? -1.0 : 1.0) / Factorial(2 * k + 1);
  }
};
// 1 / (2k + 1): log m = 2 (s + s^3/3 + ...) with s^2 <= 0.0295
// (s^24 / 25 < 1e-19), 12 terms.
struct OddReciprocals {
  KERNELEVAL_HOST_DEVICE static constexpr double At(int k) { return 1.0 / (2 * k + 1); }
};

// c[k] + z2 * (c[k + 2] + z2 * (... c[last])), evaluated from c[last] inward:
// ((c[last] * z2 + c[last - 2]) * z2 + ...) + c[k].
template <typename Coefficients, int kK, int kLast>
KERNELEVAL_HOST_DEVICE inline double HornerFrom(double z2) {
  constexpr double c = Coefficients::At(kK);
  if constexpr (kK + 2 > kLast) {
    return c;
  } else {
    return HornerFrom<Coefficients, kK + 2, kLast>(z2) * z2 + c;
  }
}

// sum_{k < N} c[k] z^k by Horner on the even and odd k separately (in z^2):
// two independent chains half as long (the draws are latency-bound).
template <typename Coefficients, int kN>
KERNELEVAL_HOST_DEVICE inline double EvenOddHorner(double z) {
  const double z2 = z * z;
  constexpr int kLastEven = (kN - 1) / 2 * 2;
  constexpr int kLastOdd = kN >= 2 ? (kN - 2) / 2 * 2 + 1 : 0;
  const double even = HornerFrom<Coefficients, 0, kLastEven>(z2);
  const double odd = HornerFrom<Coefficients, 1, kLastOdd>(z2);
  return even + z * odd;
}

KERNELEVAL_HOST_DEVICE inline double SinSmall(double x) {
  return x * EvenOddHorner<SinCoefficients, 10>(x * x);
}
KERNELEVAL_HOST_DEVICE inline double CosSmall(double x) {
  return EvenOddHorner<CosCoefficients, 10>(x * x);
}

}  // namespace portable_math_internal

// Natural logarithm of a positive finite x (x <= 0 or non-finite: NaN).
KERNELEVAL_HOST_DEVICE inline double PortableLog(double x) {
  namespace pm = portable_math_internal;
  if (!(x > 0.0) || x == pm::kInfinity) return pm::kQuietNaN;
  // frexp by bit manipulation (the libm call was ~10% of a draw).
  int exponent = 0;
  if (x < 2.2250738585072014e-308) {  // subnormal: scale into the normal range (exact)
    x *= 18014398509481984.0;         // 2^54
    exponent = -54;
  }
  const uint64_t bits = DoubleToBits(x);
  exponent += static_cast<int>(bits >> 52) - 1022;  // x > 0: no sign bit
  // [0.5, 1), exact
  double mantissa = BitsToDouble((bits & 0x000FFFFFFFFFFFFFull) | 0x3FE0000000000000ull);
  if (mantissa < pm::kSqrtHalf) {
    mantissa *= 2.0;  // exact
    --exponent;
  }
  // mantissa in [sqrt(1/2), sqrt(2)): log m = 2 atanh(s), |s| <= 0.1716.
  const double s = (mantissa - 1.0) / (mantissa + 1.0);
  const double series = pm::EvenOddHorner<pm::OddReciprocals, 12>(s * s);
  const double e = static_cast<double>(exponent);
  return e * pm::kLn2High + (e * pm::kLn2Low + 2.0 * s * series);
}

// e^y; overflow gives +Inf, underflow 0.
KERNELEVAL_HOST_DEVICE inline double PortableExp(double y) {
  namespace pm = portable_math_internal;
  if (y != y) return y;  // NaN
  if (y > 709.78) return pm::kInfinity;
  if (y < -745.2) return 0.0;
  // y = k ln2 + r with |r| <= ln2 / 2. k is rounded to nearest even by the
  // 1.5 * 2^52 trick (exact for |.| < 2^51; no libm call).
  constexpr double kRoundingShift = 6755399441055744.0;
  const double k = (y * pm::kInvLn2 + kRoundingShift) - kRoundingShift;
  const double r = (y - k * pm::kLn2High) - k * pm::kLn2Low;
  const double p = pm::EvenOddHorner<pm::InverseFactorials, 15>(r);
  const int k_int = static_cast<int>(k);
  // p * 2^k is exact while 2^k is a normal double; beyond, two exact steps
  // (p is in [0.7, 1.42]: p * 2^-1000 is normal, and the second product
  // rounds once, as ldexp would).
  if (k_int < -1021) return pm::TimesPowerOfTwo(pm::TimesPowerOfTwo(p, -1000), k_int + 1000);
  if (k_int > 1022) return pm::TimesPowerOfTwo(pm::TimesPowerOfTwo(p, 1000), k_int - 1000);
  return pm::TimesPowerOfTwo(p, k_int);
}

// cos(2 * pi * u) for u in [0, 1) (the reduction to a quarter turn is exact).
KERNELEVAL_HOST_DEVICE inline double PortableCosTwoPi(double u) {
  namespace pm = portable_math_internal;
  if (!(u >= 0.0 && u < 1.0)) return pm::kQuietNaN;
  // 2 pi u = (q + fraction) * pi/2; both parts are exact for a dyadic u.
  const double turns4 = u * 4.0;
  const int q = static_cast<int>(turns4);  // floor: turns4 >= 0
  const double fraction = turns4 - q;      // [0, 1), exact
  // cos(q pi/2 + t) is cos t, -sin t, -cos t, sin t for q = 0..3, and
  // t > pi/4 is folded with cos t = sin(pi/2 - t). Both series are computed
  // (independent chains, they overlap) and the result selected without a
  // branch: the quadrant of a random draw is unpredictable.
  const bool folded = fraction > 0.5;
  const double x = (folded ? 1.0 - fraction : fraction) * pm::kHalfPi;  // 1 - fraction is exact
  const double sin_x = pm::SinSmall(x);
  const double cos_x = pm::CosSmall(x);
  const bool want_sin = ((q & 1) == 1) != folded;
  const double value = want_sin ? sin_x : cos_x;
  return (q == 1 || q == 2) ? -value : value;
}

}  // namespace kerneleval::data
