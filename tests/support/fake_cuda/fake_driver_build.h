// Whether this test binary is the build against the test driver: a GPU test
// file compiled a second time with KERNELEVAL_TEST_FAKE_DRIVER (README.md).
// That build also gets the helpers of host_module_backend.h.
#pragma once

#ifdef KERNELEVAL_TEST_FAKE_DRIVER
#include "tests/support/fake_cuda/host_module_backend.h"
#endif

namespace kerneleval::fake_cuda {

#ifdef KERNELEVAL_TEST_FAKE_DRIVER
inline constexpr bool kFakeDriver = true;
#else
inline constexpr bool kFakeDriver = false;
#endif

}  // namespace kerneleval::fake_cuda
