// The worker's own kernels (aux_kernels.cu) as PTX text, embedded at build
// time: ke_hold_stream, ke_fill_pattern, ke_fill_leftovers, ke_stash_xor,
// ke_clear_shared, ke_generate_input, ke_copy16, ke_read_flush,
// ke_fma_throughput.
#pragma once

#include "absl/strings/string_view.h"

namespace kerneleval::cuda {

absl::string_view AuxKernelsPtx();

}  // namespace kerneleval::cuda
