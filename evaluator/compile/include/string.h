// <string.h> for NVRTC, which has no standard library headers: libcu++'s, names also in std; memcpy
// and memset are built in (kerneleval/std_names.cuh; kerneleval/prelude.cuh).
#pragma once
#include <kerneleval/prelude.cuh>
#include <cuda/std/cstring>
#include <kerneleval/std_names.cuh>
