// libFuzzer target for evaluator/plan: every parser on the fuzzer's bytes.
// Built only with clang and -DKERNELEVAL_FUZZ=ON (see CMakeLists.txt), e.g.
//   cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DKERNELEVAL_FUZZ=ON
//   cmake --build build-fuzz --target plan_fuzz
//   build-fuzz/tests/evaluator/plan/plan_fuzz -max_total_time=60 -max_len=512
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "check_all_parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string failure = kerneleval::plan::testing::CheckAllParsers(input);
  if (!failure.empty()) {
    std::fprintf(stderr, "property violated: %s\n", failure.c_str());
    std::abort();
  }
  return 0;
}
