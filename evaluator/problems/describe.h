// A problem as a model (or a person) is shown it: a readable signature, an
// example launch directive, and a prompt that holds everything needed to
// write a kernel: what to compute, the interface, how launches are declared.
#pragma once

#include <string>

#include "kerneleval/v1/problem.pb.h"

namespace kerneleval::problems {

// The name the reference's kernels take in examples: its own name would tell
// a model nothing and leak the reference's identity.
inline constexpr char kExampleKernelName[] = "my_kernel";

struct ProblemDescription {
  // "inputs: x f32[ROWS, COLS]; outputs: y f32[ROWS, COLS]; parameters: ROWS, COLS"
  std::string signature;
  // The reference plan as directives, kernels renamed my_kernel (my_kernel_2,
  // ... when the plan launches several), one line each, scratch first:
  //   "// @launch my_kernel<<<ROWS, 256>>>(x, y, ROWS, COLS)"
  std::string example_launch;
  // The reference kernels' parameter lists under the example names:
  //   "__global__ void my_kernel(const float * __restrict__ x, ..., int cols)"
  // (empty when the reference source does not parse).
  std::string example_kernel;
  // Title, description, interface, tolerance, launch syntax and the example.
  std::string prompt;
};

ProblemDescription Describe(const v1::Problem& problem);

// How "// @launch" and "// @scratch" directives are written (part of prompts).
std::string LaunchSyntaxSummary();

// "ROWS=4096, COLS=4096" (parameters in declaration order).
std::string FormatShape(const v1::Problem& problem, const v1::ShapeBinding& shape);

}  // namespace kerneleval::problems
