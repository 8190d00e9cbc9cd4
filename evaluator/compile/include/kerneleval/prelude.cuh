// Pre-included by kerneleval before every submission (NVRTC --pre-include):
// what <math.h>, <float.h>, <limits.h> and <stdint.h> would give a CUDA C++
// file, since NVRTC has no C library headers. It is a separate file, so the
// user's line numbers are unchanged.
//
// INFINITY, NAN and the FLT_/DBL_ limits are constexpr variables, not macros:
// <cuda/std/cmath> and <cuda/std/cfloat> define macros of the same names
// under NVRTC, and a macro of ours with another body would draw an
// "incompatible redefinition" warning in every kernel that includes them.
// The integer limits must be usable in #if, so they are macros with exactly
// the bodies <cuda/std/climits> uses (an identical redefinition is silent).
#pragma once

// ------------------------------------------------------------- <math.h>
constexpr float INFINITY = __builtin_bit_cast(float, 0x7f800000u);
constexpr float NAN = __builtin_bit_cast(float, 0x7fc00000u);
constexpr float HUGE_VALF = __builtin_bit_cast(float, 0x7f800000u);
constexpr double HUGE_VAL = __builtin_bit_cast(double, 0x7ff0000000000000ull);

#define M_E 2.7182818284590452354
#define M_LOG2E 1.4426950408889634074
#define M_LOG10E 0.43429448190325182765
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_1_PI 0.31830988618379067154
#define M_2_PI 0.63661977236758134308
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440

// ------------------------------------------------------------ <float.h>
constexpr float FLT_MAX = 3.40282346638528859811704183484516925e+38F;
constexpr float FLT_MIN = 1.17549435082228750796873653722224568e-38F;
constexpr float FLT_EPSILON = 1.19209289550781250000000000000000000e-7F;
constexpr float FLT_TRUE_MIN = 1.40129846432481707092372958328991613e-45F;
constexpr double DBL_MAX = 1.79769313486231570814527423731704357e+308;
constexpr double DBL_MIN = 2.22507385850720138309023271733240406e-308;
constexpr double DBL_EPSILON = 2.22044604925031308084726333618164062e-16;
constexpr double DBL_TRUE_MIN = 4.94065645841246544176568792868221372e-324;

// ----------------------------------------------------------- <limits.h>
#define CHAR_BIT 8
#define SCHAR_MIN (-128)
#define SCHAR_MAX 127
#define UCHAR_MAX 255
#define SHRT_MIN (-SHRT_MAX - 1)
#define SHRT_MAX 0x7fff
#define USHRT_MAX 0xffff
#define INT_MIN (-INT_MAX - 1)
#define INT_MAX 0x7fffffff
#define UINT_MAX 0xffffffff
#define LONG_MIN (-LONG_MAX - 1)
#define LONG_MAX LLONG_MAX
#define ULONG_MAX ULLONG_MAX
#define LLONG_MIN (-LLONG_MAX - 1)
#define LLONG_MAX 0x7fffffffffffffffLL
#define ULLONG_MAX 0xffffffffffffffffUL

// ----------------------------------------------------------- <stdint.h>
// The same types as <cuda/std/cstdint> and cuda_stdint.h under NVRTC, so
// that their declarations are compatible redeclarations.
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef long long intptr_t;
typedef unsigned long long uintptr_t;
