// libFuzzer target over the edge validation: any bytes, parsed as each
// request type, must validate without crashing (build with clang and
// -DKERNELEVAL_FUZZ=ON; run: tests/server/kerneleval_server_validation_fuzzer).
#include <cstddef>
#include <cstdint>

#include "server/validation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kerneleval;
  // Small limits so that the size checks trigger on small inputs too.
  const server::RequestLimits limits{/*max_source_bytes=*/64, /*max_group_size=*/3};
  v1::EvaluateRequest evaluate;
  if (evaluate.ParseFromArray(data, static_cast<int>(size))) {
    (void)server::ValidateEvaluateRequest(evaluate, limits);
  }
  v1::EvaluateGroupRequest group;
  if (group.ParseFromArray(data, static_cast<int>(size))) {
    (void)server::ValidateEvaluateGroupRequest(group, limits);
  }
  v1::CompileRequest compile;
  if (compile.ParseFromArray(data, static_cast<int>(size))) {
    (void)server::ValidateCompileRequest(compile, limits);
  }
  v1::GetProblemRequest get;
  if (get.ParseFromArray(data, static_cast<int>(size)))
    (void)server::ValidateGetProblemRequest(get);
  return 0;
}
