// <stddef.h> for NVRTC, which has no standard library headers: libcu++'s, names also in std
// (kerneleval/std_names.cuh; kerneleval/prelude.cuh).
#pragma once
#include <kerneleval/prelude.cuh>
#include <cuda/std/cstddef>
#include <kerneleval/std_names.cuh>
