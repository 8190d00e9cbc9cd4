// <float.h> for NVRTC, which has no C library headers: what kerneleval provides
// lives in the pre-included prelude (see kerneleval/prelude.cuh).
#pragma once
#include <kerneleval/prelude.cuh>
