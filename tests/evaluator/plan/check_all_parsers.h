// One input through every parser of evaluator/plan, with the properties that
// must hold for any input. Shared by the deterministic robustness test and
// the libFuzzer target.
#pragma once

#include <string>
#include <string_view>

#include "evaluator/plan/binding.h"
#include "evaluator/plan/directives.h"
#include "evaluator/plan/expr.h"
#include "evaluator/plan/signature.h"

namespace kerneleval::plan::testing {

// "" when `status` is fine: OK, or InvalidArgument with a non-empty message
// of printable ASCII (it ends up in a proto3 string and in logs).
inline std::string CheckStatus(const absl::Status& status, std::string_view what) {
  if (status.ok()) return "";
  std::string problem;
  if (status.code() != absl::StatusCode::kInvalidArgument) problem = "not InvalidArgument";
  if (status.message().empty()) problem = "empty message";
  for (char c : status.message()) {
    if (c < 0x20 || c > 0x7e) problem = "unprintable byte in message";
  }
  if (problem.empty()) return "";
  return std::string(what) + ": " + problem + ": " + status.ToString();
}

inline const v1::Problem& FuzzProblem() {
  static const v1::Problem* const problem = [] {
    auto* p = new v1::Problem();
    p->add_parameters()->set_name("N");
    v1::TensorSpec* x = p->add_inputs();
    x->set_name("x");
    x->set_dtype(v1::DTYPE_F32);
    x->add_shape("N");
    v1::TensorSpec* y = p->add_outputs();
    y->set_name("y");
    y->set_dtype(v1::DTYPE_F32);
    y->add_shape("ceil_div(N, 2)");
    return p;
  }();
  return *problem;
}

// How deep inputs got, so that a test can check its generator reaches the
// later stages (a generator whose inputs all fail early tests little).
struct ParserReach {
  int inputs = 0;
  int evaluated = 0;            // EvalIntExpr succeeded
  int plans_with_launches = 0;  // ParseDirectives found a launch
  int sources_with_kernels = 0;
  int resolved = 0;  // ResolvePlan succeeded
};

// Returns "" when every property holds, else what failed.
inline std::string CheckAllParsers(std::string_view input, ParserReach* reach = nullptr) {
  ParserReach unused;
  if (reach == nullptr) reach = &unused;
  ++reach->inputs;
  const ParamMap params = {{"N", 1000}, {"M", -3}, {"BIG", 9223372036854775807}};
  std::string failure;
  auto check = [&failure](const absl::Status& status, std::string_view what) {
    if (failure.empty()) failure = CheckStatus(status, what);
  };

  const absl::StatusOr<int64_t> value = EvalIntExpr(input, params);
  check(value.status(), "EvalIntExpr");
  if (value.ok()) ++reach->evaluated;
  const absl::Status syntax = CheckExprSyntax(input);
  check(syntax, "CheckExprSyntax");
  const absl::Status valid = ValidateExpr(input, {"N", "M", "BIG"});
  check(valid, "ValidateExpr");
  // What evaluates is well formed and uses known names; what is not well
  // formed does not evaluate.
  if (value.ok() && (!syntax.ok() || !valid.ok())) {
    return "EvalIntExpr succeeded but CheckExprSyntax/ValidateExpr failed";
  }
  if (!syntax.ok() && value.ok()) return "CheckExprSyntax failed but EvalIntExpr succeeded";
  if (syntax.ok() && ExprNames(input).size() > input.size()) return "ExprNames too long";

  const absl::StatusOr<v1::LaunchPlan> plan = ParseDirectives(input);
  check(plan.status(), "ParseDirectives");
  const absl::StatusOr<ParsedSource> source = ParseSource(input);
  check(source.status(), "ParseSource");
  const absl::StatusOr<std::vector<KernelSignature>> kernels = ParseKernelSignatures(input);
  check(kernels.status(), "ParseKernelSignatures");
  if (source.ok() != kernels.ok()) return "ParseSource and ParseKernelSignatures disagree";
  if (plan.ok() && plan->launches_size() > 0) ++reach->plans_with_launches;
  if (source.ok() && !source->kernels.empty()) ++reach->sources_with_kernels;

  if (plan.ok() && source.ok()) {
    const absl::StatusOr<internal::ResolvedPlan> resolved =
        ResolvePlan(*plan, FuzzProblem(), {{"N", 1000}}, *source);
    check(resolved.status(), "ResolvePlan");
    if (resolved.ok()) ++reach->resolved;
    if (resolved.ok() && resolved->launches_size() != plan->launches_size()) {
      return "ResolvePlan lost launches";
    }
  }
  return failure;
}

}  // namespace kerneleval::plan::testing
