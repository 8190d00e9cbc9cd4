// Under NVRTC, which has no C++ standard library: the names of libcu++'s
// cuda::std also in std, for the shims of <type_traits>, <limits>,
// <utility>, <algorithm> and the C library headers, so that a kernel written
// for nvcc (std::numeric_limits<float>::max(), std::is_same_v, std::min)
// compiles as it is.
#pragma once
// Declared first: libcu++'s headers include C headers (these shims) before
// they open cuda::std themselves.
namespace cuda::std {}
namespace std {
using namespace ::cuda::std;
}
