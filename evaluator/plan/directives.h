// Launch plans written as comments in the CUDA source:
//
//   // @launch softmax_kernel<<<ROWS, 256, 256 * sizeof(float)>>>(x, y, ROWS, COLS)
//   // @launch k2<<<dim3(ceil_div(N, 256), 1, 1), dim3(256)>>>(partial, y, N)
//   // @scratch partial: f32[ceil_div(N, 1024)]
//
// A directive is a `//` comment (anywhere on a line, but not inside a string
// or a /* */ comment) whose text starts with @launch or @scratch. The grammar
// is in evaluator/plan/README.md.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kerneleval/v1/problem.pb.h"

namespace kerneleval::plan {

// Most directives one source may hold (either kind).
inline constexpr int kMaxDirectives = 256;

// Parses every directive of `source` into a plan, launches in source order.
// Expressions are checked for syntax only (names are bound later, per shape).
// A source without directives gives an empty plan: the caller decides whether
// that is an error. Errors are absl::InvalidArgumentError naming the line:
//   line 12: @launch: expected '<<<' after the kernel name
absl::StatusOr<v1::LaunchPlan> ParseDirectives(std::string_view source);

// The template-kernel instances `plan` launches ("scale<float, 4>"), each
// once, in launch order: the name expressions NVRTC must instantiate.
std::vector<std::string> LaunchedTemplateInstances(const v1::LaunchPlan& plan);

// `name_expressions` with the template instances launched by the source's
// @launch directives appended (those not in it yet); unchanged when the
// directives do not parse (the evaluation reports that).
void AddLaunchedTemplateInstances(
    std::string_view source, google::protobuf::RepeatedPtrField<std::string>* name_expressions);

}  // namespace kerneleval::plan
