// Binds a launch plan to a problem and a source's kernels for one shape:
// every expression evaluated, every launch checked against the device's
// limits and every argument against the kernel's declared parameter.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "evaluator/plan/expr.h"
#include "evaluator/plan/signature.h"
#include "kerneleval/internal/worker.pb.h"
#include "kerneleval/v1/problem.pb.h"

namespace kerneleval::plan {

// What a plan may ask for. Defaults are those of compute capability 7.0 and
// newer (sm_90: 227 KiB of dynamic shared memory per block with the opt-in
// attribute, which the engine sets).
struct PlanLimits {
  uint32_t max_threads_per_block = 1024;
  uint32_t max_block_x = 1024;
  uint32_t max_block_y = 1024;
  uint32_t max_block_z = 64;
  uint32_t max_grid_x = 2147483647;  // 2^31 - 1
  uint32_t max_grid_y = 65535;
  uint32_t max_grid_z = 65535;
  uint32_t max_dynamic_shared_bytes = 227 * 1024;  // [bytes]
  int max_launches = 64;
  int max_scratch_buffers = 32;
  uint64_t max_buffer_bytes = uint64_t{32} << 30;        // [bytes] one buffer
  uint64_t max_total_buffer_bytes = uint64_t{64} << 30;  // [bytes] all buffers of the plan
};

// Resolves `plan` for one shape (`params`: a value for every parameter of
// `problem`). The result holds every input (in problem order, with its
// distribution), output and scratch buffer, in that order, whether or not a
// launch names it, and the launches in plan order with `kernel` set and
// `symbol` left empty (the engine fills in the mangled name).
//
// Names in expressions: the problem's parameters, then `constants` (integer
// #defines and constexprs of the source, see ParseSource); a constant that
// has a parameter's name is an error.
//
// Errors are absl::InvalidArgumentError; those about a launch or a scratch
// buffer start with "line N: " when it came from a directive (source_line
// set), else with "launch 2 (softmax_kernel): " / "scratch 'partial': ".
absl::StatusOr<internal::ResolvedPlan> ResolvePlan(const v1::LaunchPlan& plan,
                                                   const v1::Problem& problem,
                                                   const ParamMap& params,
                                                   const std::vector<KernelSignature>& kernels,
                                                   const PlanLimits& limits = {},
                                                   const ParamMap& constants = {});

// The same with the kernels and constants of a parsed source.
absl::StatusOr<internal::ResolvedPlan> ResolvePlan(const v1::LaunchPlan& plan,
                                                   const v1::Problem& problem,
                                                   const ParamMap& params,
                                                   const ParsedSource& source,
                                                   const PlanLimits& limits = {});

}  // namespace kerneleval::plan
