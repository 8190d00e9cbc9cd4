#include "evaluator/problems/problems.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "evaluator/data/dtype.h"
#include "evaluator/data/prng.h"
#include "evaluator/plan/binding.h"
#include "evaluator/plan/directives.h"
#include "evaluator/plan/signature.h"

#ifndef KERNELEVAL_SOURCE_PROBLEMS_DIR
#define KERNELEVAL_SOURCE_PROBLEMS_DIR "problems"
#endif

namespace kerneleval::problems {
namespace {

// Limits on what a problem may declare: a custom problem arrives over the
// wire, and validation must stay cheap and bounded.
constexpr size_t kMaxIdLength = 64;
constexpr int kMaxParameters = 32;
constexpr int kMaxTensors = 64;  // inputs + outputs
constexpr int kMaxDimensions = 8;
constexpr int kMaxCorrectnessShapes = 32;
constexpr uint32_t kMaxCorrectnessTrials = 100;
constexpr size_t kMaxDescriptionBytes = size_t{64} << 10;
constexpr size_t kMaxOtherFieldsBytes = size_t{64} << 10;

// absl::StrCat that also takes std::string_view (Debian's absl::string_view
// is its own type).
template <typename T>
decltype(auto) Arg(const T& value) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return absl::string_view(value.data(), value.size());
  } else {
    return (value);
  }
}

template <typename... Args>
std::string Cat(const Args&... args) {
  return absl::StrCat(Arg(args)...);
}

std::string Quote(std::string_view text) { return Cat("'", text, "'"); }

absl::Status Invalid(const v1::Problem& problem, std::string_view message) {
  return absl::InvalidArgumentError(
      Cat("problem ", problem.id().empty() ? "(no id)" : Quote(problem.id()), ": ", message));
}

// Text-format errors with line and column (1-based).
class CollectingErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!first_.empty()) return;
    first_ = Cat("line ", line + 1, ":", column + 1, ": ", message);
  }
  const std::string& first() const { return first_; }

 private:
  std::string first_;
};

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(Cat("cannot read ", path.string()));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::DataLossError(Cat("error reading ", path.string()));
  return contents.str();
}

bool IsProblemId(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  const auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(id.front())) return false;
  return std::all_of(id.begin(), id.end(),
                     [&](char c) { return alnum(c) || c == '_' || c == '-' || c == '.'; });
}

// Names the expression language reserves (functions and dim3).
bool IsReservedName(std::string_view name) {
  return name == "ceil_div" || name == "min" || name == "max" || name == "sizeof" || name == "dim3";
}

absl::Status CheckTolerance(const v1::Problem& problem, std::string_view where,
                            const v1::Tolerance& tolerance) {
  for (const auto& [field, set, value] :
       {std::tuple{"atol", tolerance.has_atol(), tolerance.atol()},
        std::tuple{"rtol", tolerance.has_rtol(), tolerance.rtol()}}) {
    if (set && !(std::isfinite(value) && value >= 0.0)) {
      return Invalid(problem,
                     Cat(where, ": tolerance ", field, " must be finite and >= 0, got ", value));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBinding(const v1::Problem& problem, const v1::ShapeBinding& shape,
                          std::string_view what) {
  for (const auto& parameter : problem.parameters()) {
    if (!shape.values().contains(parameter.name())) {
      return Invalid(problem, Cat(what, ": no value for parameter ", Quote(parameter.name())));
    }
  }
  // Sorted, so that the error does not depend on map order.
  std::set<std::string> keys;
  for (const auto& [key, value] : shape.values()) keys.insert(key);
  for (const auto& key : keys) {
    const bool known = std::any_of(problem.parameters().begin(), problem.parameters().end(),
                                   [&](const auto& p) { return p.name() == key; });
    if (!known) return Invalid(problem, Cat(what, ": ", Quote(key), " is not a parameter"));
  }
  return absl::OkStatus();
}

std::string ShapeWhat(const v1::ShapeBinding& shape, std::string_view field) {
  return shape.label().empty() ? std::string(field) : Cat(field, " ", Quote(shape.label()));
}

}  // namespace

// ----------------------------------------------------------------- loading

absl::StatusOr<v1::Problem> ParseProblemText(std::string_view text, std::string_view file) {
  google::protobuf::TextFormat::Parser parser;
  CollectingErrors errors;
  parser.RecordErrorsTo(&errors);
  v1::Problem problem;
  if (!parser.ParseFromString(std::string(text), &problem)) {
    return absl::InvalidArgumentError(
        Cat(file.empty() ? "problem text" : file, ": ",
            errors.first().empty() ? "cannot parse" : errors.first()));
  }
  return problem;
}

absl::Status CompleteReferencePlan(v1::Problem& problem) {
  if (problem.reference_plan().launches_size() > 0 || problem.reference_source().empty()) {
    return absl::OkStatus();
  }
  absl::StatusOr<v1::LaunchPlan> plan = plan::ParseDirectives(problem.reference_source());
  if (!plan.ok()) return plan.status();
  // Scratch buffers declared next to an empty launch list are kept.
  for (auto& launch : *plan->mutable_launches()) {
    *problem.mutable_reference_plan()->add_launches() = std::move(launch);
  }
  for (auto& scratch : *plan->mutable_scratch()) {
    *problem.mutable_reference_plan()->add_scratch() = std::move(scratch);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::Problem> LoadProblemDirectory(const std::filesystem::path& dir) {
  const std::filesystem::path textproto = dir / "problem.textproto";
  absl::StatusOr<std::string> text = ReadFile(textproto);
  if (!text.ok()) return text.status();
  absl::StatusOr<v1::Problem> problem = ParseProblemText(*text, textproto.string());
  if (!problem.ok()) return problem.status();
  if (problem->reference_source().empty()) {
    const std::filesystem::path reference = dir / "reference.cu";
    absl::StatusOr<std::string> source = ReadFile(reference);
    if (!source.ok()) {
      return absl::NotFoundError(
          Cat(textproto.string(), ": no reference_source and no readable ", reference.string()));
    }
    problem->set_reference_source(*std::move(source));
  }
  if (absl::Status s = CompleteReferencePlan(*problem); !s.ok()) {
    return absl::InvalidArgumentError(Cat((dir / "reference.cu").string(), ": ", s.message()));
  }
  return problem;
}

absl::StatusOr<ProblemRegistry> ProblemRegistry::LoadFromDirectory(
    const std::filesystem::path& dir) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::NotFoundError(Cat("problems directory ", dir.string(), " does not exist"));
  }
  std::vector<std::filesystem::path> problem_dirs;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_directory() && std::filesystem::exists(entry.path() / "problem.textproto")) {
      problem_dirs.push_back(entry.path());
    }
  }
  if (error) {
    return absl::UnavailableError(Cat("cannot list ", dir.string(), ": ", error.message()));
  }
  std::sort(problem_dirs.begin(), problem_dirs.end());

  ProblemRegistry registry;
  for (const auto& problem_dir : problem_dirs) {
    absl::StatusOr<v1::Problem> problem = LoadProblemDirectory(problem_dir);
    if (!problem.ok()) return problem.status();
    const std::string dir_name = problem_dir.filename().string();
    const std::string file = (problem_dir / "problem.textproto").string();
    if (problem->id() != dir_name) {
      return absl::InvalidArgumentError(Cat(file, ": id ", Quote(problem->id()),
                                            " differs from its directory name ", Quote(dir_name)));
    }
    if (absl::Status added = registry.Add(*std::move(problem)); !added.ok()) {
      return absl::Status(added.code(), Cat(file, ": ", added.message()));
    }
  }
  return registry;
}

absl::Status ProblemRegistry::Add(v1::Problem problem) {
  if (absl::Status valid = ValidateProblem(problem); !valid.ok()) return valid;
  if (problems_.contains(problem.id())) {
    return absl::AlreadyExistsError(Cat("problem ", Quote(problem.id()), " is defined twice"));
  }
  std::string id = problem.id();
  problems_.emplace(std::move(id), std::make_unique<v1::Problem>(std::move(problem)));
  return absl::OkStatus();
}

const v1::Problem* ProblemRegistry::Find(std::string_view id) const {
  const auto it = problems_.find(id);
  return it == problems_.end() ? nullptr : it->second.get();
}

std::vector<const v1::Problem*> ProblemRegistry::List() const {
  std::vector<const v1::Problem*> list;
  list.reserve(problems_.size());
  for (const auto& [id, problem] : problems_) list.push_back(problem.get());
  return list;
}

std::filesystem::path DefaultProblemsDir() {
  if (const char* env = std::getenv("KERNELEVAL_PROBLEMS_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path installed =
        exe.parent_path() / ".." / "share" / "kerneleval" / "problems";
    if (std::filesystem::is_directory(installed, error)) {
      return installed.lexically_normal();
    }
  }
  return KERNELEVAL_SOURCE_PROBLEMS_DIR;
}

// ------------------------------------------------------------- expressions

plan::ParamMap ShapeParams(const v1::ShapeBinding& shape) {
  plan::ParamMap params;
  for (const auto& [name, value] : shape.values()) params.emplace(name, value);
  return params;
}

const v1::Distribution& InputDistributionAt(const v1::TensorSpec& input,
                                            const v1::ShapeBinding& shape) {
  const auto it = shape.input_distributions().find(input.name());
  return it != shape.input_distributions().end() ? it->second : input.distribution();
}

void ApplyInputDistributions(const v1::ShapeBinding& shape, internal::ResolvedPlan* resolved) {
  for (internal::BufferSpec& buffer : *resolved->mutable_buffers()) {
    const auto it = shape.input_distributions().find(buffer.name());
    if (buffer.role() == internal::BUFFER_ROLE_INPUT && it != shape.input_distributions().end()) {
      *buffer.mutable_distribution() = it->second;
    }
  }
}

std::vector<const v1::ShapeBinding*> AllShapes(const v1::Problem& problem) {
  std::vector<const v1::ShapeBinding*> shapes;
  shapes.push_back(&problem.timed_shape());
  if (problem.has_cpu_timed_shape() && !problem.cpu_timed_shape().values().empty()) {
    shapes.push_back(&problem.cpu_timed_shape());
  }
  for (const auto& shape : problem.correctness_shapes()) shapes.push_back(&shape);
  return shapes;
}

const v1::ShapeBinding& CpuTimedShape(const v1::Problem& problem) {
  if (!problem.cpu_timed_shape().values().empty() || problem.correctness_shapes().empty()) {
    return problem.cpu_timed_shape();
  }
  return problem.correctness_shapes(0);
}

absl::StatusOr<std::vector<int64_t>> EvalShape(const v1::TensorSpec& tensor,
                                               const plan::ParamMap& params) {
  std::vector<int64_t> dims;
  dims.reserve(tensor.shape_size());
  for (int d = 0; d < tensor.shape_size(); ++d) {
    absl::StatusOr<int64_t> value = plan::EvalIntExpr(tensor.shape(d), params);
    if (!value.ok()) {
      return absl::InvalidArgumentError(
          Cat("tensor ", Quote(tensor.name()), " dimension ", d, ": ", value.status().message()));
    }
    if (*value < 0) {
      return absl::InvalidArgumentError(Cat("tensor ", Quote(tensor.name()), " dimension ", d, " (",
                                            tensor.shape(d), ") is ", *value));
    }
    dims.push_back(*value);
  }
  return dims;
}

absl::StatusOr<uint64_t> ElementCount(const v1::TensorSpec& tensor, const plan::ParamMap& params) {
  absl::StatusOr<std::vector<int64_t>> dims = EvalShape(tensor, params);
  if (!dims.ok()) return dims.status();
  uint64_t elements = 1;
  for (const int64_t d : *dims) {
    const uint64_t extent = static_cast<uint64_t>(d);
    if (extent != 0 && elements > std::numeric_limits<uint64_t>::max() / extent) {
      return absl::InvalidArgumentError(
          Cat("tensor ", Quote(tensor.name()), ": the element count overflows"));
    }
    elements *= extent;
  }
  return elements;
}

absl::StatusOr<double> EvalFlops(const v1::Problem& problem, const plan::ParamMap& params) {
  if (problem.flops().empty()) return 0.0;
  absl::StatusOr<int64_t> flops = plan::EvalIntExpr(problem.flops(), params);
  if (!flops.ok()) {
    return absl::InvalidArgumentError(Cat("flops: ", flops.status().message()));
  }
  return static_cast<double>(*flops);
}

absl::StatusOr<double> EvalBytes(const v1::Problem& problem, const plan::ParamMap& params) {
  if (!problem.bytes().empty()) {
    absl::StatusOr<int64_t> bytes = plan::EvalIntExpr(problem.bytes(), params);
    if (!bytes.ok()) {
      return absl::InvalidArgumentError(Cat("bytes: ", bytes.status().message()));
    }
    return static_cast<double>(*bytes);
  }
  double total = 0.0;
  for (const auto* tensors : {&problem.inputs(), &problem.outputs()}) {
    for (const auto& tensor : *tensors) {
      absl::StatusOr<uint64_t> elements = ElementCount(tensor, params);
      if (!elements.ok()) return elements.status();
      total += static_cast<double>(*elements) * data::DTypeSize(tensor.dtype());
    }
  }
  return total;
}

absl::StatusOr<double> EvalOutputBytes(const v1::Problem& problem, const plan::ParamMap& params) {
  double total = 0.0;
  for (const auto& tensor : problem.outputs()) {
    absl::StatusOr<uint64_t> elements = ElementCount(tensor, params);
    if (!elements.ok()) return elements.status();
    total += static_cast<double>(*elements) * data::DTypeSize(tensor.dtype());
  }
  return total;
}

// -------------------------------------------------------------- validation

absl::Status ValidateProblem(const v1::Problem& problem) {
  if (!IsProblemId(problem.id())) {
    return Invalid(problem, Cat("id must be 1-", kMaxIdLength,
                                " characters of [A-Za-z0-9_.-] starting with a letter or digit"));
  }
  if (problem.description().size() > kMaxDescriptionBytes) {
    return Invalid(problem, Cat("description is longer than ", kMaxDescriptionBytes, " bytes"));
  }
  // Everything else together (title, tags, labels, parameter descriptions,
  // plans, shapes): a problem sent in a request is held while it is queued
  // and evaluated, and a 64 MiB title was held that long.
  const size_t other_bytes =
      problem.ByteSizeLong() - problem.reference_source().size() - problem.description().size();
  if (other_bytes > kMaxOtherFieldsBytes) {
    return Invalid(problem,
                   Cat("fields other than reference_source and description take ", other_bytes,
                       " bytes, over the ", kMaxOtherFieldsBytes, "-byte limit"));
  }
  if (problem.parameters_size() > kMaxParameters) {
    return Invalid(problem, Cat("more than ", kMaxParameters, " parameters"));
  }
  if (problem.inputs_size() + problem.outputs_size() > kMaxTensors) {
    return Invalid(problem, Cat("more than ", kMaxTensors, " inputs and outputs"));
  }
  if (problem.outputs_size() == 0) return Invalid(problem, "no outputs");

  // Names: identifiers, unique across parameters, inputs and outputs.
  std::set<std::string> names;
  std::set<std::string> parameter_names;
  const auto claim = [&](std::string_view kind, const std::string& name) -> absl::Status {
    if (!plan::IsIdentifier(name)) {
      return Invalid(problem, Cat(kind, " name ", Quote(name), " is not an identifier"));
    }
    if (IsReservedName(name)) {
      return Invalid(problem, Cat(kind, " name ", Quote(name), " is reserved"));
    }
    if (!names.insert(name).second) {
      return Invalid(problem, Cat("name ", Quote(name), " is used twice (", kind, ")"));
    }
    return absl::OkStatus();
  };
  for (const auto& parameter : problem.parameters()) {
    if (absl::Status s = claim("parameter", parameter.name()); !s.ok()) return s;
    parameter_names.insert(parameter.name());
  }
  for (const auto& [kind, tensors] :
       {std::pair{"input", &problem.inputs()}, std::pair{"output", &problem.outputs()}}) {
    const bool is_input = std::string_view(kind) == "input";
    for (const auto& tensor : *tensors) {
      if (absl::Status s = claim(kind, tensor.name()); !s.ok()) return s;
      const std::string where = Cat(kind, " ", Quote(tensor.name()));
      if (data::DTypeSize(tensor.dtype()) == 0) {
        return Invalid(problem, Cat(where, ": dtype is not set"));
      }
      if (tensor.shape_size() > kMaxDimensions) {
        return Invalid(problem, Cat(where, ": more than ", kMaxDimensions, " dimensions"));
      }
      for (int d = 0; d < tensor.shape_size(); ++d) {
        if (absl::Status s = plan::ValidateExpr(tensor.shape(d), parameter_names); !s.ok()) {
          return Invalid(problem, Cat(where, " dimension ", d, ": ", s.message()));
        }
      }
      if (is_input) {
        if (tensor.has_tolerance()) {
          return Invalid(problem, Cat(where, ": a tolerance applies to outputs only"));
        }
        if (absl::Status s = data::ValidateDistribution(tensor.distribution(), tensor.dtype());
            !s.ok()) {
          return Invalid(problem, Cat(where, ": ", s.message()));
        }
      } else {
        if (tensor.distribution().kind_case() != v1::Distribution::KIND_NOT_SET) {
          return Invalid(problem, Cat(where, ": a distribution applies to inputs only"));
        }
        if (absl::Status s = CheckTolerance(problem, where, tensor.tolerance()); !s.ok()) {
          return s;
        }
      }
    }
  }

  if (problem.flops().empty()) return Invalid(problem, "flops expression is empty");
  if (absl::Status s = plan::ValidateExpr(problem.flops(), parameter_names); !s.ok()) {
    return Invalid(problem, Cat("flops: ", s.message()));
  }
  if (!problem.bytes().empty()) {
    if (absl::Status s = plan::ValidateExpr(problem.bytes(), parameter_names); !s.ok()) {
      return Invalid(problem, Cat("bytes: ", s.message()));
    }
  }
  if (problem.correctness_trials() > kMaxCorrectnessTrials) {
    return Invalid(problem, Cat("correctness_trials is above ", kMaxCorrectnessTrials));
  }

  // Shapes.
  if (problem.correctness_shapes_size() == 0) return Invalid(problem, "no correctness shapes");
  if (problem.correctness_shapes_size() > kMaxCorrectnessShapes) {
    return Invalid(problem, Cat("more than ", kMaxCorrectnessShapes, " correctness shapes"));
  }
  std::set<std::string> labels;
  for (const auto& shape : problem.correctness_shapes()) {
    if (shape.label().empty()) return Invalid(problem, "a correctness shape has no label");
    if (!labels.insert(shape.label()).second) {
      return Invalid(problem,
                     Cat("correctness shape label ", Quote(shape.label()), " is used twice"));
    }
  }

  // The reference: source and a plan that binds to it for every shape.
  if (problem.reference_source().empty()) return Invalid(problem, "reference_source is empty");
  if (problem.reference_source().size() > kMaxReferenceSourceBytes) {
    return Invalid(problem,
                   Cat("reference_source is longer than ", kMaxReferenceSourceBytes, " bytes"));
  }
  if (problem.reference_plan().launches_size() == 0) {
    return Invalid(problem, "reference_plan has no launches");
  }
  absl::StatusOr<plan::ParsedSource> reference = plan::ParseSource(problem.reference_source());
  if (!reference.ok()) {
    return Invalid(problem, Cat("reference_source: ", reference.status().message()));
  }

  const auto check_shape = [&](const v1::ShapeBinding& shape,
                               std::string_view field) -> absl::Status {
    const std::string what = ShapeWhat(shape, field);
    if (absl::Status s = CheckBinding(problem, shape, what); !s.ok()) return s;
    for (const auto& [name, distribution] : shape.input_distributions()) {
      const auto input = std::find_if(problem.inputs().begin(), problem.inputs().end(),
                                      [&](const v1::TensorSpec& t) { return t.name() == name; });
      if (input == problem.inputs().end()) {
        return Invalid(problem, Cat(what, ": input_distributions names ", Quote(name),
                                    ", which is not an input"));
      }
      if (absl::Status s = data::ValidateDistribution(distribution, input->dtype()); !s.ok()) {
        return Invalid(problem,
                       Cat(what, ": input_distributions[", Quote(name), "]: ", s.message()));
      }
    }
    const plan::ParamMap params = ShapeParams(shape);
    for (const auto* tensors : {&problem.inputs(), &problem.outputs()}) {
      for (const auto& tensor : *tensors) {
        absl::StatusOr<std::vector<int64_t>> dims = EvalShape(tensor, params);
        if (!dims.ok()) return Invalid(problem, Cat(what, ": ", dims.status().message()));
        for (size_t d = 0; d < dims->size(); ++d) {
          if ((*dims)[d] < 1) {
            return Invalid(problem, Cat(what, ": tensor ", Quote(tensor.name()), " dimension ", d,
                                        " (", tensor.shape(d), ") is ", (*dims)[d],
                                        "; every dimension must be >= 1"));
          }
        }
        if (absl::StatusOr<uint64_t> n = ElementCount(tensor, params); !n.ok()) {
          return Invalid(problem, Cat(what, ": ", n.status().message()));
        }
      }
    }
    absl::StatusOr<double> flops = EvalFlops(problem, params);
    if (!flops.ok()) return Invalid(problem, Cat(what, ": ", flops.status().message()));
    if (*flops < 0) return Invalid(problem, Cat(what, ": flops is negative (", *flops, ")"));
    absl::StatusOr<double> bytes = EvalBytes(problem, params);
    if (!bytes.ok()) return Invalid(problem, Cat(what, ": ", bytes.status().message()));
    if (*bytes < 0) return Invalid(problem, Cat(what, ": bytes is negative (", *bytes, ")"));
    absl::StatusOr<internal::ResolvedPlan> resolved =
        plan::ResolvePlan(problem.reference_plan(), problem, params, *reference);
    if (!resolved.ok()) {
      return Invalid(problem, Cat(what, ": reference_plan: ", resolved.status().message()));
    }
    return absl::OkStatus();
  };

  if (absl::Status s = check_shape(problem.timed_shape(), "timed_shape"); !s.ok()) return s;
  if (!problem.cpu_timed_shape().values().empty()) {
    if (absl::Status s = check_shape(problem.cpu_timed_shape(), "cpu_timed_shape"); !s.ok()) {
      return s;
    }
  }
  for (const auto& shape : problem.correctness_shapes()) {
    if (absl::Status s = check_shape(shape, "correctness shape"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace kerneleval::problems
