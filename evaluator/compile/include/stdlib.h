// <stdlib.h> for NVRTC, which has no standard library headers: libcu++'s, names also in std; malloc
// and free are built in (kerneleval/std_names.cuh; kerneleval/prelude.cuh).
#pragma once
#include <kerneleval/prelude.cuh>
#include <cuda/std/cstdlib>
#include <kerneleval/std_names.cuh>
