#include "evaluator/plan/binding.h"

#include <array>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "evaluator/data/dtype.h"
#include "evaluator/plan/strings.h"
#include "evaluator/plan/types.h"

namespace kerneleval::plan {
namespace {

enum class NameKind { kParameter, kConstant, kInput, kOutput, kScratch };

std::string_view NameKindText(NameKind kind) {
  switch (kind) {
    case NameKind::kParameter:
      return "a parameter of the problem";
    case NameKind::kConstant:
      return "a constant of the source (#define or constexpr)";
    case NameKind::kInput:
      return "an input";
    case NameKind::kOutput:
      return "an output";
    case NameKind::kScratch:
      return "a scratch buffer";
  }
  return "a name";
}

bool IsBufferKind(NameKind kind) {
  return kind == NameKind::kInput || kind == NameKind::kOutput || kind == NameKind::kScratch;
}

std::string Quoted(std::string_view text) {
  return detail::Cat("'", detail::EscapeForMessage(text), "'");
}

// Text from the source or the request inside a message: printable ASCII.
std::string Printable(std::string_view text) { return detail::EscapeForMessage(text, 200); }

std::string ListOrNone(const std::vector<std::string>& names) {
  return names.empty() ? std::string("none") : detail::Join(names, ", ");
}

class Binder {
 public:
  Binder(const v1::LaunchPlan& plan, const v1::Problem& problem, const ParamMap& params,
         const std::vector<KernelSignature>& kernels, const PlanLimits& limits,
         const ParamMap& constants,
         const std::set<std::string, std::less<>>* unreadable_constants = nullptr)
      : plan_(plan),
        problem_(problem),
        params_(params),
        kernels_(kernels),
        limits_(limits),
        constants_(constants),
        unreadable_constants_(unreadable_constants) {}

  absl::StatusOr<internal::ResolvedPlan> Run() {
    if (plan_.launches_size() == 0) {
      return absl::InvalidArgumentError(
          "the plan has no launches: add a '// @launch kernel<<<grid, block>>>(args)' line to "
          "the source or a structured launch plan");
    }
    if (plan_.launches_size() > limits_.max_launches) {
      return absl::InvalidArgumentError(detail::Cat("the plan has ", plan_.launches_size(),
                                                    " launches, more than the limit ",
                                                    limits_.max_launches));
    }
    if (plan_.scratch_size() > limits_.max_scratch_buffers) {
      return absl::InvalidArgumentError(detail::Cat("the plan has ", plan_.scratch_size(),
                                                    " scratch buffers, more than the limit ",
                                                    limits_.max_scratch_buffers));
    }
    for (const v1::ParameterSpec& parameter : problem_.parameters()) {
      if (params_.find(parameter.name()) == params_.end()) {
        return absl::InvalidArgumentError(
            detail::Cat("no value for the problem's parameter '", parameter.name(), "'"));
      }
    }
    if (absl::Status status = DeclareNames(); !status.ok()) {
      return status;
    }

    internal::ResolvedPlan resolved;
    for (const v1::TensorSpec& input : problem_.inputs()) {
      absl::StatusOr<internal::BufferSpec> buffer =
          ResolveBuffer(input.name(), input.dtype(), input.shape(), internal::BUFFER_ROLE_INPUT,
                        detail::Cat("input '", input.name(), "': "));
      if (!buffer.ok()) {
        return buffer.status();
      }
      *buffer->mutable_distribution() = input.distribution();
      *resolved.add_buffers() = *std::move(buffer);
    }
    for (const v1::TensorSpec& output : problem_.outputs()) {
      absl::StatusOr<internal::BufferSpec> buffer =
          ResolveBuffer(output.name(), output.dtype(), output.shape(), internal::BUFFER_ROLE_OUTPUT,
                        detail::Cat("output '", output.name(), "': "));
      if (!buffer.ok()) {
        return buffer.status();
      }
      *resolved.add_buffers() = *std::move(buffer);
    }
    for (const v1::ScratchBuffer& scratch : plan_.scratch()) {
      if (scratch.shape().empty()) {
        return absl::InvalidArgumentError(
            detail::Cat(ScratchPrefix(scratch), "the shape needs at least one dimension"));
      }
      absl::StatusOr<internal::BufferSpec> buffer =
          ResolveBuffer(scratch.name(), scratch.dtype(), scratch.shape(),
                        internal::BUFFER_ROLE_SCRATCH, ScratchPrefix(scratch));
      if (!buffer.ok()) {
        return buffer.status();
      }
      *resolved.add_buffers() = *std::move(buffer);
    }
    for (const internal::BufferSpec& buffer : resolved.buffers()) {
      buffer_dtypes_.emplace(buffer.name(), buffer.dtype());
    }
    for (int i = 0; i < plan_.launches_size(); ++i) {
      absl::StatusOr<internal::ResolvedLaunch> launch = ResolveLaunch(plan_.launches(i), i);
      if (!launch.ok()) {
        return launch.status();
      }
      *resolved.add_launches() = *std::move(launch);
    }
    return resolved;
  }

 private:
  static std::string ScratchPrefix(const v1::ScratchBuffer& scratch) {
    if (scratch.source_line() > 0) {
      return detail::Cat("line ", scratch.source_line(), ": scratch '", Printable(scratch.name()),
                         "': ");
    }
    return detail::Cat("scratch ", Quoted(scratch.name()), ": ");
  }

  static std::string LaunchPrefix(const v1::Launch& launch, int index) {
    if (launch.source_line() > 0) {
      return detail::Cat("line ", launch.source_line(), ": ");
    }
    return detail::Cat("launch ", index + 1, " (", Quoted(launch.kernel()), "): ");
  }

  absl::Status Declare(const std::string& name, NameKind kind, std::string_view prefix) {
    // A source constant in a namespace is also known as NS::NAME.
    if (!(kind == NameKind::kConstant ? IsQualifiedIdentifier(name) : IsIdentifier(name))) {
      return absl::InvalidArgumentError(
          detail::Cat(prefix, "the name ", Quoted(name), " is not an identifier"));
    }
    auto [it, inserted] = names_.emplace(name, kind);
    if (!inserted) {
      return absl::InvalidArgumentError(detail::Cat(prefix, "'", name, "' is ", NameKindText(kind),
                                                    " and also ", NameKindText(it->second)));
    }
    switch (kind) {
      case NameKind::kParameter:
        parameter_names_.push_back(name);
        break;
      case NameKind::kConstant:
        constant_names_.push_back(name);
        break;
      case NameKind::kInput:
        input_names_.push_back(name);
        break;
      case NameKind::kOutput:
        output_names_.push_back(name);
        break;
      case NameKind::kScratch:
        scratch_names_.push_back(name);
        break;
    }
    return absl::OkStatus();
  }

  absl::Status DeclareNames() {
    for (const auto& [name, value] : params_) {
      if (absl::Status s = Declare(name, NameKind::kParameter, "problem: "); !s.ok()) {
        return s;
      }
    }
    for (const v1::TensorSpec& input : problem_.inputs()) {
      if (absl::Status s = Declare(input.name(), NameKind::kInput, "problem: "); !s.ok()) {
        return s;
      }
    }
    for (const v1::TensorSpec& output : problem_.outputs()) {
      if (absl::Status s = Declare(output.name(), NameKind::kOutput, "problem: "); !s.ok()) {
        return s;
      }
    }
    for (const auto& [name, value] : constants_) {
      if (absl::Status s = Declare(name, NameKind::kConstant, "source: "); !s.ok()) {
        return s;
      }
    }
    for (const v1::ScratchBuffer& scratch : plan_.scratch()) {
      if (absl::Status s = Declare(scratch.name(), NameKind::kScratch, ScratchPrefix(scratch));
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }

  std::string BufferList() const {
    return detail::Cat("inputs: ", ListOrNone(input_names_),
                       "; outputs: ", ListOrNone(output_names_),
                       "; scratch: ", ListOrNone(scratch_names_));
  }

  std::string ValueNameList() const {
    std::string list = detail::Cat("parameters: ", ListOrNone(parameter_names_));
    if (!constant_names_.empty()) {
      list += detail::Cat("; constants: ", detail::Join(constant_names_, ", "));
    }
    return list;
  }

  // Evaluates an integer expression of the parameters and constants. Errors
  // start with `prefix` and `what` ("line 3: grid.x: ...").
  absl::StatusOr<int64_t> Eval(std::string_view expr, std::string_view prefix,
                               std::string_view what) const {
    for (const std::string& name : ExprNames(expr)) {
      auto it = names_.find(name);
      if (it == names_.end()) {
        std::string hint;
        if (unreadable_constants_ != nullptr && unreadable_constants_->count(name) > 0) {
          hint = detail::Cat("; the source declares '", name,
                             "', but its value is not an integer expression a plan can read: "
                             "literals, + - * / %, other such constants (e.g. `constexpr int ",
                             name, " = 256;`)");
        }
        return absl::InvalidArgumentError(detail::Cat(prefix, what, ": unknown name '", name,
                                                      "' in ", Quoted(expr), " (", ValueNameList(),
                                                      hint, ")"));
      }
      if (IsBufferKind(it->second)) {
        return absl::InvalidArgumentError(
            detail::Cat(prefix, what, ": '", name, "' is ", NameKindText(it->second),
                        ", which is passed by its name alone, not inside an integer expression"));
      }
    }
    const ParamLookup lookup = [this](std::string_view name) -> std::optional<int64_t> {
      if (auto it = params_.find(name); it != params_.end()) {
        return it->second;
      }
      if (auto it = constants_.find(name); it != constants_.end()) {
        return it->second;
      }
      return std::nullopt;
    };
    absl::StatusOr<int64_t> value = EvalIntExpr(expr, lookup);
    if (!value.ok()) {
      return absl::InvalidArgumentError(detail::Cat(prefix, what, ": ", value.status().message()));
    }
    return value;
  }

  absl::StatusOr<internal::BufferSpec> ResolveBuffer(
      const std::string& name, v1::DType dtype,
      const google::protobuf::RepeatedPtrField<std::string>& shape, internal::BufferRole role,
      const std::string& prefix) {
    const uint32_t element_bytes = static_cast<uint32_t>(data::DTypeSize(dtype));
    if (element_bytes == 0) {
      return absl::InvalidArgumentError(detail::Cat(prefix, "the dtype is not set"));
    }
    uint64_t elements = 1;
    for (int d = 0; d < shape.size(); ++d) {
      const std::string what = detail::Cat("dimension ", d + 1);
      absl::StatusOr<int64_t> extent = Eval(shape[d], prefix, what);
      if (!extent.ok()) {
        return extent.status();
      }
      if (*extent < 1) {
        return absl::InvalidArgumentError(detail::Cat(prefix, what, " (", Quoted(shape[d]), ") is ",
                                                      *extent,
                                                      "; every dimension must be at least 1"));
      }
      if (__builtin_mul_overflow(elements, static_cast<uint64_t>(*extent), &elements)) {
        return absl::InvalidArgumentError(detail::Cat(prefix, "the element count overflows"));
      }
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(elements, uint64_t{element_bytes}, &bytes) ||
        bytes > limits_.max_buffer_bytes) {
      return absl::InvalidArgumentError(detail::Cat(prefix, elements, " elements of ",
                                                    data::DTypeName(dtype), " exceed the limit of ",
                                                    limits_.max_buffer_bytes, " bytes per buffer"));
    }
    if (__builtin_add_overflow(total_bytes_, bytes, &total_bytes_) ||
        total_bytes_ > limits_.max_total_buffer_bytes) {
      return absl::InvalidArgumentError(
          detail::Cat(prefix, "the plan's buffers exceed the limit of ",
                      limits_.max_total_buffer_bytes, " bytes in all"));
    }
    internal::BufferSpec buffer;
    buffer.set_name(name);
    buffer.set_dtype(dtype);
    buffer.set_elements(elements);
    buffer.set_role(role);
    return buffer;
  }

  // Finds the launched kernel; errors list what the source declares.
  absl::StatusOr<const KernelSignature*> FindKernel(const v1::Launch& launch,
                                                    const std::string& prefix) const {
    std::vector<const KernelSignature*> found;
    std::vector<std::string> all;
    for (const KernelSignature& kernel : kernels_) {
      all.push_back(Printable(kernel.qualified_name));
      if (kernel.name == launch.kernel() || kernel.qualified_name == launch.kernel()) {
        found.push_back(&kernel);
      }
    }
    if (found.empty()) {
      return absl::InvalidArgumentError(detail::Cat(
          prefix, "kernel ", Quoted(launch.kernel()), " is not a __global__ function of the source",
          all.empty() ? std::string(" (the source declares no __global__ function)")
                      : detail::Cat(" (found: ", detail::Join(all, ", "), ")")));
    }
    if (found.size() > 1) {
      return absl::InvalidArgumentError(
          detail::Cat(prefix, "kernel '", Printable(launch.kernel()), "' is overloaded (",
                      found.size(), " declarations); give the launched kernel a unique name"));
    }
    if (found[0]->is_template) {
      return absl::InvalidArgumentError(
          detail::Cat(prefix, "kernel '", Printable(launch.kernel()),
                      "' is a template: name its template arguments in the launch, e.g. '",
                      Printable(launch.kernel()), "<256><<<...>>>'"));
    }
    return found[0];
  }

  absl::StatusOr<std::array<uint32_t, 3>> ResolveDims(const v1::Dim3Expr& dims,
                                                      std::string_view which,
                                                      const std::array<uint32_t, 3>& limits,
                                                      const std::string& prefix) const {
    const std::array<const std::string*, 3> exprs = {&dims.x(), &dims.y(), &dims.z()};
    static constexpr std::array<std::string_view, 3> kAxes = {"x", "y", "z"};
    std::array<uint32_t, 3> values = {1, 1, 1};
    for (size_t axis = 0; axis < 3; ++axis) {
      const std::string_view expr = detail::StripSpace(*exprs[axis]);
      if (expr.empty()) {
        continue;
      }
      const std::string what = detail::Cat(which, ".", kAxes[axis]);
      absl::StatusOr<int64_t> value = Eval(expr, prefix, what);
      if (!value.ok()) {
        return value.status();
      }
      if (*value < 1) {
        return absl::InvalidArgumentError(detail::Cat(prefix, what, " = ", *value, ": every ",
                                                      which, " dimension must be at least 1"));
      }
      if (*value > int64_t{limits[axis]}) {
        return absl::InvalidArgumentError(
            detail::Cat(prefix, what, " = ", *value, " exceeds the limit ", limits[axis]));
      }
      values[axis] = static_cast<uint32_t>(*value);
    }
    return values;
  }

  static std::string ParamDescription(const KernelSignature& kernel, size_t index) {
    const ParamSig& param = kernel.params[index];
    const std::string who = param.name.empty()
                                ? detail::Cat("parameter ", index + 1)
                                : detail::Cat("parameter '", Printable(param.name), "'");
    return detail::Cat(who, " of ", Printable(kernel.name), " ('", Printable(param.type), "')");
  }

  absl::StatusOr<internal::ResolvedLaunch> ResolveLaunch(const v1::Launch& launch, int index) {
    const std::string prefix = LaunchPrefix(launch, index);
    absl::StatusOr<const KernelSignature*> found = FindKernel(launch, prefix);
    if (!found.ok()) {
      return found.status();
    }
    const KernelSignature& kernel = **found;

    internal::ResolvedLaunch resolved;
    resolved.set_kernel(launch.kernel());
    resolved.set_source_line(launch.source_line());

    absl::StatusOr<std::array<uint32_t, 3>> grid =
        ResolveDims(launch.grid(), "grid",
                    {limits_.max_grid_x, limits_.max_grid_y, limits_.max_grid_z}, prefix);
    if (!grid.ok()) {
      return grid.status();
    }
    absl::StatusOr<std::array<uint32_t, 3>> block =
        ResolveDims(launch.block(), "block",
                    {limits_.max_block_x, limits_.max_block_y, limits_.max_block_z}, prefix);
    if (!block.ok()) {
      return block.status();
    }
    const uint64_t threads = uint64_t{(*block)[0]} * (*block)[1] * (*block)[2];
    if (threads > limits_.max_threads_per_block) {
      return absl::InvalidArgumentError(detail::Cat(
          prefix, "the block has ", threads, " threads (", (*block)[0], " x ", (*block)[1], " x ",
          (*block)[2], "), more than the limit ", limits_.max_threads_per_block));
    }
    if (kernel.launch_bounds_max_threads.has_value() &&
        static_cast<int64_t>(threads) > *kernel.launch_bounds_max_threads) {
      return absl::InvalidArgumentError(detail::Cat(
          prefix, "the block has ", threads, " threads, more than ", Printable(kernel.name),
          "'s __launch_bounds__(", *kernel.launch_bounds_max_threads, ")"));
    }
    if (kernel.register_max_threads.has_value() &&
        static_cast<int64_t>(threads) > *kernel.register_max_threads) {
      return absl::InvalidArgumentError(detail::Cat(
          prefix, "the block has ", threads, " threads, but ", Printable(kernel.name), " uses ",
          kernel.registers_per_thread, " registers per thread: at most ",
          *kernel.register_max_threads,
          " threads fit a block's 65536 registers (a GPU refuses the launch: too many "
          "resources requested); launch fewer threads per block, or declare __launch_bounds__(",
          threads, ") so the compiler keeps to fewer registers"));
    }
    for (uint32_t v : *grid) {
      resolved.add_grid(v);
    }
    for (uint32_t v : *block) {
      resolved.add_block(v);
    }

    const std::string_view smem_expr = detail::StripSpace(launch.shared_mem_bytes());
    if (!smem_expr.empty()) {
      absl::StatusOr<int64_t> smem = Eval(smem_expr, prefix, "shared memory bytes");
      if (!smem.ok()) {
        return smem.status();
      }
      if (*smem < 0 || *smem > int64_t{limits_.max_dynamic_shared_bytes}) {
        return absl::InvalidArgumentError(detail::Cat(prefix, "dynamic shared memory of ", *smem,
                                                      " bytes is outside the limit 0..",
                                                      limits_.max_dynamic_shared_bytes, " bytes"));
      }
      resolved.set_dynamic_shared_bytes(static_cast<uint32_t>(*smem));
    }

    if (static_cast<size_t>(launch.args_size()) != kernel.params.size()) {
      return absl::InvalidArgumentError(
          detail::Cat(prefix, "kernel ", Printable(kernel.name), " takes ", kernel.params.size(),
                      kernel.params.size() == 1 ? " parameter" : " parameters",
                      ", the plan passes ", launch.args_size()));
    }
    for (int i = 0; i < launch.args_size(); ++i) {
      absl::StatusOr<internal::KernelArg> arg = BindArg(launch.args(i), kernel, i, prefix);
      if (!arg.ok()) {
        return arg.status();
      }
      *resolved.add_args() = *std::move(arg);
    }
    return resolved;
  }

  absl::StatusOr<internal::KernelArg> BindArg(std::string_view text, const KernelSignature& kernel,
                                              size_t index, const std::string& prefix) const {
    text = detail::StripSpace(text);
    const ParamSig& param = kernel.params[index];
    const std::string label = detail::Cat("argument ", index + 1, " (", Quoted(text), ")");
    auto error = [&](std::string_view what) {
      return absl::InvalidArgumentError(detail::Cat(prefix, label, ": ", what));
    };
    if (param.is_reference) {
      return error(detail::Cat(ParamDescription(kernel, index),
                               " is a reference; a kernel takes pointers and values"));
    }
    const auto name = names_.find(text);
    const bool is_name = name != names_.end();
    if (is_name && IsBufferKind(name->second)) {
      return BindBuffer(std::string(text), kernel, index, error);
    }
    if (param.is_pointer) {
      if (IsIdentifier(text) && !is_name) {
        return error(detail::Cat("'", text, "' is not a buffer (", BufferList(), ")"));
      }
      // `x + offset`: a buffer's name inside an expression.
      for (const std::string& name : ExprNames(text)) {
        if (auto it = names_.find(name); it != names_.end() && IsBufferKind(it->second)) {
          return error(detail::Cat(ParamDescription(kernel, index), " is given '", text,
                                   "': pointer arithmetic on a buffer is not supported; pass '",
                                   name, "' and the offset as an integer argument"));
        }
      }
      return error(detail::Cat(ParamDescription(kernel, index), " is a pointer: pass a buffer (",
                               BufferList(), ")"));
    }
    absl::StatusOr<int64_t> value = Eval(text, prefix, label);
    if (!value.ok()) {
      return value.status();
    }
    return BindScalar(*value, kernel, index, error);
  }

  template <typename ErrorFn>
  absl::StatusOr<internal::KernelArg> BindBuffer(const std::string& buffer,
                                                 const KernelSignature& kernel, size_t index,
                                                 const ErrorFn& error) const {
    const ParamSig& param = kernel.params[index];
    const v1::DType dtype = buffer_dtypes_.at(buffer);
    if (!param.is_pointer) {
      return error(detail::Cat("'", buffer, "' is a buffer but ", ParamDescription(kernel, index),
                               " is not a pointer"));
    }
    if (param.pointer_depth != 1) {
      return error(detail::Cat(ParamDescription(kernel, index),
                               " is a pointer to pointers; a buffer binds to a pointer to its "
                               "elements"));
    }
    if (param.pointee.kind == ScalarKind::kOther) {
      return error(detail::Cat("the element type of ", ParamDescription(kernel, index),
                               " is unknown to the plan checker; declare it with a built-in "
                               "element type (e.g. const float*, __half*, int64_t*) or void*"));
    }
    if (!PointeeAcceptsDType(param.pointee, dtype)) {
      return error(detail::Cat("buffer '", buffer, "' holds ", data::DTypeName(dtype), " but ",
                               ParamDescription(kernel, index), " points to ",
                               ScalarKindName(param.pointee.kind), " of ",
                               param.pointee.LaneBytes(), " bytes"));
    }
    internal::KernelArg arg;
    arg.set_buffer(buffer);
    arg.set_size_bytes(8);
    arg.set_is_signed(false);
    return arg;
  }

  template <typename ErrorFn>
  absl::StatusOr<internal::KernelArg> BindScalar(int64_t value, const KernelSignature& kernel,
                                                 size_t index, const ErrorFn& error) const {
    const ParamSig& param = kernel.params[index];
    internal::KernelArg arg;
    arg.set_size_bytes(param.size_bytes);
    const auto out_of_range = [&](std::string_view range) {
      return error(detail::Cat("the value ", value, " does not fit ",
                               ParamDescription(kernel, index), " (range ", range, ")"));
    };
    const uint32_t bits = param.size_bytes * 8;
    const bool integer_size = param.size_bytes == 1 || param.size_bytes == 2 ||
                              param.size_bytes == 4 || param.size_bytes == 8;
    if (param.lanes == 1 && integer_size && param.kind == ScalarKind::kSignedInt) {
      const int64_t max =
          bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
      const int64_t min = -max - 1;
      if (value < min || value > max) {
        return out_of_range(detail::Cat(min, "..", max));
      }
      arg.set_scalar(value);
      arg.set_is_signed(true);
      return arg;
    }
    if (param.lanes == 1 && integer_size && param.kind == ScalarKind::kUnsignedInt) {
      const uint64_t max =
          bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1;
      if (value < 0 || static_cast<uint64_t>(value) > max) {
        return out_of_range(detail::Cat("0..", max));
      }
      arg.set_scalar(value);
      arg.set_is_signed(false);
      return arg;
    }
    if (param.kind == ScalarKind::kBool && param.size_bytes == 1) {
      if (value != 0 && value != 1) {
        return out_of_range("0..1");
      }
      arg.set_scalar(value);
      arg.set_is_signed(false);
      return arg;
    }
    if (param.lanes == 1 && ((param.kind == ScalarKind::kFloat && param.size_bytes == 4) ||
                             (param.kind == ScalarKind::kDouble && param.size_bytes == 8))) {
      // The value must survive the conversion exactly: a size passed as a
      // float that rounds would be a silent bug. 2^63 itself is out of range
      // of int64, hence the first test (converting it back would be UB).
      constexpr double kTwoTo63 = 9223372036854775808.0;
      bool exact = false;
      if (param.kind == ScalarKind::kFloat) {
        const float f = static_cast<float>(value);
        exact = static_cast<double>(f) < kTwoTo63 && static_cast<int64_t>(f) == value;
      } else {
        const double d = static_cast<double>(value);
        exact = d < kTwoTo63 && static_cast<int64_t>(d) == value;
      }
      if (!exact) {
        return error(detail::Cat("the value ", value, " is not exactly representable as ",
                                 ParamDescription(kernel, index)));
      }
      arg.set_real(static_cast<double>(value));
      arg.set_is_signed(true);
      return arg;
    }
    return error(detail::Cat(ParamDescription(kernel, index),
                             " has a type a plan cannot pass; plans pass buffers and integer, "
                             "bool, float or double values"));
  }

  const v1::LaunchPlan& plan_;
  const v1::Problem& problem_;
  const ParamMap& params_;
  const std::vector<KernelSignature>& kernels_;
  const PlanLimits& limits_;
  const ParamMap& constants_;

  std::map<std::string, NameKind, std::less<>> names_;
  std::map<std::string, v1::DType, std::less<>> buffer_dtypes_;
  const std::set<std::string, std::less<>>* unreadable_constants_;  // may be null
  std::vector<std::string> parameter_names_, constant_names_, input_names_, output_names_,
      scratch_names_;
  uint64_t total_bytes_ = 0;  // [bytes] all buffers resolved so far
};

}  // namespace

absl::StatusOr<internal::ResolvedPlan> ResolvePlan(const v1::LaunchPlan& plan,
                                                   const v1::Problem& problem,
                                                   const ParamMap& params,
                                                   const std::vector<KernelSignature>& kernels,
                                                   const PlanLimits& limits,
                                                   const ParamMap& constants) {
  return Binder(plan, problem, params, kernels, limits, constants).Run();
}

absl::StatusOr<internal::ResolvedPlan> ResolvePlan(const v1::LaunchPlan& plan,
                                                   const v1::Problem& problem,
                                                   const ParamMap& params,
                                                   const ParsedSource& source,
                                                   const PlanLimits& limits) {
  return Binder(plan, problem, params, source.kernels, limits, source.constants,
                &source.unreadable_constants)
      .Run();
}

}  // namespace kerneleval::plan
