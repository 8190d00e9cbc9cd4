#include "evaluator/problems/describe.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "evaluator/data/compare.h"
#include "evaluator/data/dtype.h"
#include "evaluator/plan/signature.h"

namespace kerneleval::problems {
namespace {

std::string TensorText(const v1::TensorSpec& tensor) {
  std::string text = absl::StrCat(tensor.name(), " ", std::string(data::DTypeName(tensor.dtype())));
  if (tensor.shape_size() > 0)
    absl::StrAppend(&text, "[", absl::StrJoin(tensor.shape(), ", "), "]");
  return text;
}

std::string TensorList(const google::protobuf::RepeatedPtrField<v1::TensorSpec>& tensors) {
  std::vector<std::string> parts;
  for (const auto& tensor : tensors) parts.push_back(TensorText(tensor));
  return absl::StrJoin(parts, ", ");
}

std::string Dim3Text(const v1::Dim3Expr& dim) {
  const auto or_one = [](const std::string& e) { return e.empty() ? std::string("1") : e; };
  if (dim.y().empty() && dim.z().empty()) return or_one(dim.x());
  if (dim.z().empty()) return absl::StrCat("dim3(", or_one(dim.x()), ", ", dim.y(), ")");
  return absl::StrCat("dim3(", or_one(dim.x()), ", ", or_one(dim.y()), ", ", dim.z(), ")");
}

// Reference kernel name -> example name, in order of first launch.
std::map<std::string, std::string> ExampleNames(const v1::LaunchPlan& plan) {
  std::vector<std::string> order;
  for (const auto& launch : plan.launches()) {
    if (std::find(order.begin(), order.end(), launch.kernel()) == order.end()) {
      order.push_back(launch.kernel());
    }
  }
  std::map<std::string, std::string> names;
  for (size_t i = 0; i < order.size(); ++i) {
    names[order[i]] =
        i == 0 ? std::string(kExampleKernelName) : absl::StrCat(kExampleKernelName, "_", i + 1);
  }
  return names;
}

std::string ToleranceText(const v1::TensorSpec& output) {
  const data::ToleranceValues tolerance =
      data::ResolveTolerance(output.dtype(), output.tolerance());
  if (tolerance.atol == 0.0 && tolerance.rtol == 0.0) {
    return absl::StrCat(output.name(), ": exact");
  }
  return absl::StrCat(output.name(), ": |got - expected| <= ", tolerance.atol, " + ",
                      tolerance.rtol, " * |expected|");
}

}  // namespace

std::string FormatShape(const v1::Problem& problem, const v1::ShapeBinding& shape) {
  std::vector<std::string> parts;
  for (const auto& parameter : problem.parameters()) {
    const auto it = shape.values().find(parameter.name());
    if (it != shape.values().end())
      parts.push_back(absl::StrCat(parameter.name(), "=", it->second));
  }
  return absl::StrJoin(parts, ", ");
}

std::string LaunchSyntaxSummary() {
  return "Submit CUDA C++ device code only: __global__ and __device__ functions, no host code, "
         "no main(). Declare every launch in a // comment; launches run in the order written, "
         "on one stream:\n"
         "  // @launch KERNEL<<<GRID, BLOCK[, SHARED_MEM_BYTES]>>>(ARG, ...)\n"
         "  // @scratch NAME: DTYPE[DIM, ...]   (optional device buffer for intermediate results)\n"
         "KERNEL is a __global__ function's name, or a template kernel's with its template "
         "arguments (k<float, 256>). "
         "GRID and BLOCK are an integer expression or dim3(x[, y[, z]]). Expressions may use the "
         "parameters, integer literals, + - * / % and parentheses, comparisons and ?:, "
         "ceil_div(a, b), min(a, b), max(a, b), sizeof(TYPE), and integer #define / constexpr "
         "constants of your source. "
         "SHARED_MEM_BYTES is the dynamic shared memory (extern __shared__). Each ARG is the name "
         "of an input, output or scratch buffer (passed as a device pointer: declare the "
         "parameter as a pointer to the element type, e.g. const float*), a parameter name, or "
         "an integer expression; scalar parameters may be declared int or long long. DTYPE is "
         "one of f64 f32 f16 bf16 i64 i32 i8 u8 bool. Outputs and scratch buffers start filled "
         "with NaN (0xFF bytes for integer types): write every output element. Never modify "
         "the inputs.";
}

ProblemDescription Describe(const v1::Problem& problem) {
  ProblemDescription description;

  std::vector<std::string> parameter_names;
  for (const auto& parameter : problem.parameters()) parameter_names.push_back(parameter.name());
  std::vector<std::string> sections;
  if (problem.inputs_size() > 0) sections.push_back("inputs: " + TensorList(problem.inputs()));
  sections.push_back("outputs: " + TensorList(problem.outputs()));
  if (!parameter_names.empty()) {
    sections.push_back("parameters: " + absl::StrJoin(parameter_names, ", "));
  }
  description.signature = absl::StrJoin(sections, "; ");

  const std::map<std::string, std::string> names = ExampleNames(problem.reference_plan());
  std::vector<std::string> lines;
  for (const auto& scratch : problem.reference_plan().scratch()) {
    lines.push_back(absl::StrCat("// @scratch ", scratch.name(), ": ",
                                 std::string(data::DTypeName(scratch.dtype())), "[",
                                 absl::StrJoin(scratch.shape(), ", "), "]"));
  }
  for (const auto& launch : problem.reference_plan().launches()) {
    std::string config = absl::StrCat(Dim3Text(launch.grid()), ", ", Dim3Text(launch.block()));
    if (!launch.shared_mem_bytes().empty() && launch.shared_mem_bytes() != "0") {
      absl::StrAppend(&config, ", ", launch.shared_mem_bytes());
    }
    lines.push_back(absl::StrCat("// @launch ", names.at(launch.kernel()), "<<<", config, ">>>(",
                                 absl::StrJoin(launch.args(), ", "), ")"));
  }
  description.example_launch = absl::StrJoin(lines, "\n");

  // The reference kernels' parameter lists, renamed.
  absl::StatusOr<plan::ParsedSource> parsed = plan::ParseSource(problem.reference_source());
  if (parsed.ok()) {
    std::vector<std::string> kernels;
    for (const auto& [reference_name, example_name] : names) {
      for (const auto& kernel : parsed->kernels) {
        if (kernel.name != reference_name || !kernel.is_definition) continue;
        std::vector<std::string> params;
        for (const auto& param : kernel.params) {
          params.push_back(param.name.empty() ? param.type
                                              : absl::StrCat(param.type, " ", param.name));
        }
        kernels.push_back(
            absl::StrCat("__global__ void ", example_name, "(", absl::StrJoin(params, ", "), ")"));
        break;
      }
    }
    std::sort(kernels.begin(), kernels.end());
    description.example_kernel = absl::StrJoin(kernels, "\n");
  }

  // The prompt.
  std::string prompt =
      absl::StrCat("# ", problem.title().empty() ? problem.id() : problem.title(), "\n\n",
                   problem.description(), "\n\n## Interface\n\n", description.signature, "\n");
  if (problem.parameters_size() > 0) {
    absl::StrAppend(&prompt, "\nParameters (integers, known at launch time):\n");
    for (const auto& parameter : problem.parameters()) {
      absl::StrAppend(&prompt, "- ", parameter.name(), parameter.description().empty() ? "" : ": ",
                      parameter.description(), "\n");
    }
  }
  absl::StrAppend(&prompt, "\nAll tensors are contiguous, row-major, in device memory.\n");
  absl::StrAppend(&prompt,
                  "\nOutputs are checked element by element against a reference on fresh random "
                  "inputs, for several shapes (not only the timed one):\n");
  for (const auto& output : problem.outputs()) {
    absl::StrAppend(&prompt, "- ", ToleranceText(output), "\n");
  }
  absl::StrAppend(&prompt, "A NaN or Inf where the reference is finite fails.\n");
  if (!problem.timed_shape().values().empty()) {
    absl::StrAppend(&prompt, "\nSpeed is measured at ", FormatShape(problem, problem.timed_shape()),
                    ".\n");
  }
  absl::StrAppend(&prompt, "\n## Launching\n\n", LaunchSyntaxSummary(), "\n");
  if (!description.example_launch.empty()) {
    absl::StrAppend(&prompt, "\nExample (how a straightforward solution is launched):\n\n",
                    description.example_launch, "\n");
    if (!description.example_kernel.empty()) {
      absl::StrAppend(&prompt, description.example_kernel, "\n");
    }
  }
  description.prompt = std::move(prompt);
  return description;
}

}  // namespace kerneleval::problems
