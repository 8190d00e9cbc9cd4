// Problems are data: problems/<id>/problem.textproto (a v1.Problem in
// protobuf text format) and problems/<id>/reference.cu (its reference
// kernels). This library loads and validates them, and evaluates their shape,
// FLOP and byte expressions for one binding of the parameters.
//
// ValidateProblem is also what a custom problem sent over the wire must pass.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "evaluator/plan/expr.h"
#include "kerneleval/internal/worker.pb.h"
#include "kerneleval/v1/problem.pb.h"

namespace kerneleval::problems {

// The built-in problems of one directory, by id. Move-only; pointers returned
// by Find/List stay valid for the registry's lifetime (and across moves).
class ProblemRegistry {
 public:
  ProblemRegistry() = default;
  ProblemRegistry(ProblemRegistry&&) noexcept = default;
  ProblemRegistry& operator=(ProblemRegistry&&) noexcept = default;
  ProblemRegistry(const ProblemRegistry&) = delete;
  ProblemRegistry& operator=(const ProblemRegistry&) = delete;
  ~ProblemRegistry() = default;

  // Loads every `<dir>/<id>/problem.textproto` (subdirectories without one are
  // skipped) with LoadProblemDirectory, then validates each. Any error names
  // the file; a problem id must equal its directory's name.
  static absl::StatusOr<ProblemRegistry> LoadFromDirectory(const std::filesystem::path& dir);

  // Adds a validated problem; fails on a duplicate id or an invalid problem.
  absl::Status Add(v1::Problem problem);

  // nullptr when there is no such problem.
  [[nodiscard]] const v1::Problem* Find(std::string_view id) const;
  // Every problem, sorted by id.
  [[nodiscard]] std::vector<const v1::Problem*> List() const;
  [[nodiscard]] size_t size() const { return problems_.size(); }

 private:
  std::map<std::string, std::unique_ptr<v1::Problem>, std::less<>> problems_;
};

// Parses a Problem in text format ("file" only names it in errors).
absl::StatusOr<v1::Problem> ParseProblemText(std::string_view text, std::string_view file = "");

// Reads `<dir>/problem.textproto`; fills reference_source from
// `<dir>/reference.cu` when the textproto leaves it empty, and reference_plan
// from the source's "// @launch" / "// @scratch" directives when the
// textproto has no launches. Does not validate.
absl::StatusOr<v1::Problem> LoadProblemDirectory(const std::filesystem::path& dir);

// When reference_plan has no launches, fills it from the "// @launch" and
// "// @scratch" directives of reference_source (no-op otherwise, or when the
// source is empty). The loader calls it; so should whoever accepts a custom
// problem whose plan lives in its source, before ValidateProblem.
absl::Status CompleteReferencePlan(v1::Problem& problem);

// Checks a problem before anything runs it:
//  - id: 1-64 characters of [A-Za-z0-9_.-], starting with a letter or digit
//    (built-in ids use [a-z0-9_] by convention);
//  - parameters, inputs, outputs: identifiers, no name used twice among them;
//    at least one output; every dtype set; inputs carry no tolerance and
//    outputs no distribution; distributions valid for the dtype (prng.h);
//    tolerances finite and >= 0;
//  - shapes: every dimension expression uses known parameters only and, for
//    the timed shape, the CPU timed shape (when set) and every correctness
//    shape (at least one, labels unique), evaluates to >= 1; every binding
//    gives a value to each parameter and to nothing else;
//  - flops (required) and bytes (when set) evaluate to >= 0 for every shape;
//  - a reference plan with at least one launch, and reference source; the
//    plan resolves for every shape against the source's kernels
//    (plan/binding.h: kernel names, argument types, grid and block limits).
// Errors are InvalidArgumentError naming the problem and the field.
absl::Status ValidateProblem(const v1::Problem& problem);

// [bytes] The longest reference_source ValidateProblem accepts.
inline constexpr size_t kMaxReferenceSourceBytes = size_t{1} << 20;

// Where the built-in problems live: $KERNELEVAL_PROBLEMS_DIR if set, else
// <directory of /proc/self/exe>/../share/kerneleval/problems if it exists
// (an installed tree), else the source tree's problems/ (a build tree).
std::filesystem::path DefaultProblemsDir();

// A binding's values as an expression environment.
plan::ParamMap ShapeParams(const v1::ShapeBinding& shape);

// The distribution `input` is drawn from at `shape`: the shape's
// input_distributions entry for it, else the input's own.
const v1::Distribution& InputDistributionAt(const v1::TensorSpec& input,
                                            const v1::ShapeBinding& shape);

// Gives the input buffers of `resolved` (a plan resolved for `shape`, whose
// inputs carry their own distributions) the shape's input_distributions.
void ApplyInputDistributions(const v1::ShapeBinding& shape, internal::ResolvedPlan* resolved);

// Every shape a problem declares, in order: the timed shape, the CPU timed
// shape when set, then the correctness shapes.
std::vector<const v1::ShapeBinding*> AllShapes(const v1::Problem& problem);

// The shape the CPU backend times: cpu_timed_shape, else the first
// correctness shape (proto default).
const v1::ShapeBinding& CpuTimedShape(const v1::Problem& problem);

// Dimensions of a tensor for one binding (errors name the tensor and the
// dimension; a negative dimension is an error).
absl::StatusOr<std::vector<int64_t>> EvalShape(const v1::TensorSpec& tensor,
                                               const plan::ParamMap& params);

// Product of the dimensions (1 for a scalar); errors on overflow.
absl::StatusOr<uint64_t> ElementCount(const v1::TensorSpec& tensor, const plan::ParamMap& params);

// The problem's flops expression for one binding (0 when it is empty).
absl::StatusOr<double> EvalFlops(const v1::Problem& problem, const plan::ParamMap& params);

// Bytes moved: the bytes expression when set, else every input read once
// plus every output written once ([bytes] elements * dtype size).
absl::StatusOr<double> EvalBytes(const v1::Problem& problem, const plan::ParamMap& params);

// [bytes] The outputs' sizes at `params` (what a kernel writes at least).
absl::StatusOr<double> EvalOutputBytes(const v1::Problem& problem, const plan::ParamMap& params);

}  // namespace kerneleval::problems
