// <stdio.h> for NVRTC, which has no standard library headers: printf is built into NVRTC; nothing
// else is (kerneleval/std_names.cuh; kerneleval/prelude.cuh).
#pragma once
#include <kerneleval/prelude.cuh>
