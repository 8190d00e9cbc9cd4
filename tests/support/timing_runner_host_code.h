// Host code (the CPU backend's build only) for test kernels that act only
// while timed: TimingRunner() says whether this runner process times, by
// its command line (`--job=time`; its environment is empty, so argv ends
// just before `environ` on the stack). Prepend it to a kernel's source and
// gate the call with `#if __has_include(<unistd.h>)`; the engine must let
// host code through (EngineOptions::cpu_host_build_checks off). The shape
// cannot serve (correctness runs take the timed shape too), nor can a weak
// reference that tells the builds apart (refused).
#ifndef KERNELEVAL_TESTS_SUPPORT_TIMING_RUNNER_HOST_CODE_H_
#define KERNELEVAL_TESTS_SUPPORT_TIMING_RUNNER_HOST_CODE_H_

namespace kerneleval::test_support {

inline constexpr char kTimingRunnerHostCode[] = R"(
#if __has_include(<unistd.h>)  // host code: the CPU build only
#include <errno.h>
#include <string.h>
#include <unistd.h>
static bool TimingRunner() {
  for (char** arg = environ - 2;; --arg) {
    if (strcmp(*arg, "--job=time") == 0) return true;
    if (*arg == program_invocation_name) return false;
  }
}
#endif
)";

}  // namespace kerneleval::test_support

#endif  // KERNELEVAL_TESTS_SUPPORT_TIMING_RUNNER_HOST_CODE_H_
