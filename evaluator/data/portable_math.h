// log, exp and cos(2*pi*u) built from +, -, *, / and frexp/ldexp only, so that
// they give the same bits on every machine and C library (glibc, musl and
// libc++ differ in the last ulp of std::log/std::cos). The PRNG uses them to
// draw normal and Pareto values; accuracy is a few ulp of a double, far below
// the rounding to the tensor's dtype. Compiled with -ffp-contract=off: an FMA
// contraction would change the bits between x86-64 and aarch64.
#pragma once

namespace kerneleval::data {

// Natural logarithm of a positive finite x (x <= 0 or non-finite: NaN).
double PortableLog(double x);
// e^y; overflow gives +Inf, underflow 0.
double PortableExp(double y);
// cos(2 * pi * u) for u in [0, 1) (the reduction to a quarter turn is exact).
double PortableCosTwoPi(double u);

}  // namespace kerneleval::data
