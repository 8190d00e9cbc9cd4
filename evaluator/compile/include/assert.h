// <assert.h> for NVRTC, which has no standard library headers: assert from libcu++
// (kerneleval/std_names.cuh; kerneleval/prelude.cuh).
#pragma once
#include <kerneleval/prelude.cuh>
#include <cuda/std/cassert>
#include <kerneleval/std_names.cuh>
