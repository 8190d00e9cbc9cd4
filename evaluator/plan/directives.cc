#include "evaluator/plan/directives.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "evaluator/data/dtype.h"
#include "evaluator/plan/expr.h"
#include "evaluator/plan/lexer.h"
#include "evaluator/plan/name_expression.h"
#include "evaluator/plan/strings.h"
#include "evaluator/plan/types.h"

namespace kerneleval::plan {
namespace {

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }

std::string_view Strip(std::string_view text) { return detail::StripSpace(text); }

// A piece of the user's text inside an error message: escaped and short.
std::string Snippet(std::string_view text) { return detail::EscapeForMessage(text); }

absl::Status DirectiveError(uint32_t line, std::string_view directive, std::string_view what) {
  return absl::InvalidArgumentError(detail::Cat("line ", line, ": ", directive, ": ", what));
}

// Position of the bracket closing the one at text[open], or npos when the
// brackets ((), [], {}) are unbalanced or mismatched.
size_t FindMatching(std::string_view text, size_t open) {
  std::string stack;
  for (size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '(' || c == '[' || c == '{') {
      stack.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (stack.empty() || stack.back() != c) {
        return std::string_view::npos;
      }
      stack.pop_back();
      if (stack.empty()) {
        return i;
      }
    }
  }
  return std::string_view::npos;
}

// Splits at commas outside brackets; parts are stripped. An empty (or blank)
// text gives no parts.
absl::StatusOr<std::vector<std::string_view>> SplitTopLevel(std::string_view text) {
  std::vector<std::string_view> parts;
  if (Strip(text).empty()) {
    return parts;
  }
  std::string stack;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '(' || c == '[' || c == '{') {
      stack.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (stack.empty() || stack.back() != c) {
        return absl::InvalidArgumentError(
            detail::Cat("unbalanced '", std::string(1, c), "' in '", Snippet(text), "'"));
      }
      stack.pop_back();
    } else if (c == ',' && stack.empty()) {
      parts.push_back(Strip(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  if (!stack.empty()) {
    return absl::InvalidArgumentError(
        detail::Cat("missing '", std::string(1, stack.back()), "' in '", Snippet(text), "'"));
  }
  parts.push_back(Strip(text.substr(start)));
  return parts;
}

// An identifier, optionally namespace-qualified (a::b); empty if none.
std::string_view TakeQualifiedName(std::string_view& text) {
  size_t end = 0;
  while (true) {
    if (end >= text.size() || !IsIdentStart(text[end])) {
      break;
    }
    while (end < text.size() && IsIdentChar(text[end])) {
      ++end;
    }
    if (text.substr(end, 2) == "::" && end + 2 < text.size() && IsIdentStart(text[end + 2])) {
      end += 2;
      continue;
    }
    break;
  }
  const std::string_view name = text.substr(0, end);
  text.remove_prefix(end);
  return name;
}

// The template argument list at the start of `text` ("<256, float>"), up to
// its matching '>' ('<' and '>' inside parentheses do not count), or
// nullopt when it is not closed on the line or holds a character a name
// expression may not (compile/options.h: CheckNameExpressions).
std::optional<std::string_view> TakeTemplateArguments(std::string_view& text) {
  int angles = 0;
  int parens = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!IsKernelNameCharAt(text, i)) return std::nullopt;
    if (c == '(') ++parens;
    if (c == ')' && --parens < 0) return std::nullopt;
    if (parens > 0) continue;
    if (c == '<') ++angles;
    if (c == '>' && --angles == 0) {
      const std::string_view arguments = text.substr(0, i + 1);
      text.remove_prefix(i + 1);
      return arguments;
    }
  }
  return std::nullopt;
}

std::string_view TakeIdentifier(std::string_view& text) {
  size_t end = 0;
  if (!text.empty() && IsIdentStart(text[0])) {
    while (end < text.size() && IsIdentChar(text[end])) {
      ++end;
    }
  }
  const std::string_view name = text.substr(0, end);
  text.remove_prefix(end);
  return name;
}

absl::Status CheckExpression(std::string_view expr, std::string_view what) {
  if (expr.empty()) {
    return absl::InvalidArgumentError(detail::Cat(what, " is empty"));
  }
  absl::Status status = CheckExprSyntax(expr);
  if (!status.ok()) {
    return absl::InvalidArgumentError(detail::Cat(what, ": ", status.message()));
  }
  return absl::OkStatus();
}

// `expr` or `dim3(x[, y[, z]])` (braces also accepted: dim3{x, y}).
absl::StatusOr<v1::Dim3Expr> ParseDim3(std::string_view text, std::string_view what) {
  text = Strip(text);
  v1::Dim3Expr dims;
  if (text.substr(0, 4) == "dim3" && (text.size() == 4 || !IsIdentChar(text[4]))) {
    std::string_view rest = text.substr(4);
    const size_t open = rest.find_first_not_of(" \t");
    if (open == std::string_view::npos || (rest[open] != '(' && rest[open] != '{')) {
      return absl::InvalidArgumentError(detail::Cat(what, ": expected '(' after dim3"));
    }
    const size_t close = FindMatching(rest, open);
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(
          detail::Cat(what, ": unbalanced brackets in '", Snippet(text), "'"));
    }
    if (close + 1 != rest.size()) {
      return absl::InvalidArgumentError(
          detail::Cat(what, ": dim3(...) must be the whole ", what, ", found '",
                      Snippet(Strip(rest.substr(close + 1))), "' after it"));
    }
    absl::StatusOr<std::vector<std::string_view>> parts =
        SplitTopLevel(rest.substr(open + 1, close - open - 1));
    if (!parts.ok()) {
      return absl::InvalidArgumentError(detail::Cat(what, ": ", parts.status().message()));
    }
    if (parts->size() > 3) {
      return absl::InvalidArgumentError(
          detail::Cat(what, ": dim3 takes at most 3 values, found ", parts->size()));
    }
    static constexpr std::string_view kAxes[] = {".x", ".y", ".z"};
    for (size_t i = 0; i < parts->size(); ++i) {
      if (absl::Status status = CheckExpression((*parts)[i], detail::Cat(what, kAxes[i]));
          !status.ok()) {
        return status;
      }
    }
    if (!parts->empty()) {
      dims.set_x(std::string((*parts)[0]));
    }
    if (parts->size() > 1) {
      dims.set_y(std::string((*parts)[1]));
    }
    if (parts->size() > 2) {
      dims.set_z(std::string((*parts)[2]));
    }
    return dims;
  }
  if (absl::Status status = CheckExpression(text, what); !status.ok()) {
    return status;
  }
  dims.set_x(std::string(text));
  return dims;
}

// `kernel<<<grid, block[, shared_bytes]>>>(args)` with an optional ';'.
absl::StatusOr<v1::Launch> ParseLaunch(std::string_view body, uint32_t line) {
  constexpr std::string_view kWhat = "@launch";
  auto error = [&](std::string_view what) { return DirectiveError(line, kWhat, what); };
  std::string_view rest = Strip(body);
  std::string kernel(TakeQualifiedName(rest));
  if (kernel.empty()) {
    return error(rest.empty() ? "expected a kernel name"
                              : detail::Cat("expected a kernel name, found '", Snippet(rest), "'"));
  }
  rest = detail::StripLeadingSpace(rest);
  // A template kernel's instantiation: `scale<float, 4><<<...`.
  if (rest.substr(0, 2) == "<<" && rest.substr(0, 3) != "<<<") {
    return error(detail::Cat("expected '<<<' after the kernel name, found '", Snippet(rest), "'"));
  }
  if (!rest.empty() && rest[0] == '<' && rest.substr(0, 3) != "<<<") {
    const std::optional<std::string_view> arguments = TakeTemplateArguments(rest);
    if (!arguments.has_value()) {
      return error(detail::Cat("expected template arguments closed by '>' after '", kernel,
                               "' (identifiers, numbers and `: < > , ( ) * + - & / %`), found '",
                               Snippet(rest), "'"));
    }
    kernel += *arguments;
    rest = detail::StripLeadingSpace(rest);
  }
  if (rest.substr(0, 3) != "<<<") {
    if (!rest.empty() && rest[0] == '(') {
      return error(
          "expected '<<<' after the kernel name: the launch configuration "
          "<<<grid, block[, shared_bytes]>>> is required");
    }
    return error("expected '<<<' after the kernel name");
  }
  const size_t config_end = rest.find(">>>", 3);
  if (config_end == std::string_view::npos) {
    return error("expected '>>>' closing the launch configuration");
  }
  absl::StatusOr<std::vector<std::string_view>> config =
      SplitTopLevel(rest.substr(3, config_end - 3));
  if (!config.ok()) {
    return error(detail::Cat("launch configuration: ", config.status().message()));
  }
  if (config->size() == 4) {
    return error("a stream argument is not allowed: the harness owns the stream");
  }
  if (config->size() < 2 || config->size() > 4) {
    return error(
        detail::Cat("the launch configuration is <<<grid, block[, shared_bytes]>>>, "
                    "found ",
                    config->size(), config->size() == 1 ? " value" : " values"));
  }
  v1::Launch launch;
  launch.set_kernel(std::string(kernel));
  launch.set_source_line(line);
  absl::StatusOr<v1::Dim3Expr> grid = ParseDim3((*config)[0], "grid");
  if (!grid.ok()) {
    return error(detail::ToStd(grid.status().message()));
  }
  *launch.mutable_grid() = *std::move(grid);
  absl::StatusOr<v1::Dim3Expr> block = ParseDim3((*config)[1], "block");
  if (!block.ok()) {
    return error(detail::ToStd(block.status().message()));
  }
  *launch.mutable_block() = *std::move(block);
  if (config->size() == 3) {
    if (absl::Status status = CheckExpression((*config)[2], "shared memory bytes"); !status.ok()) {
      return error(detail::ToStd(status.message()));
    }
    launch.set_shared_mem_bytes(std::string((*config)[2]));
  }

  std::string_view after = detail::StripLeadingSpace(rest.substr(config_end + 3));
  if (after.empty() || after[0] != '(') {
    return error("expected '(' and the kernel's arguments after '>>>'");
  }
  const size_t close = FindMatching(after, 0);
  if (close == std::string_view::npos) {
    return error("expected ')' closing the argument list (or unbalanced brackets in it)");
  }
  std::string_view trailing = Strip(after.substr(close + 1));
  if (!trailing.empty() && trailing[0] == ';') {
    trailing = Strip(trailing.substr(1));
  }
  if (!trailing.empty()) {
    return error(detail::Cat("unexpected text after the argument list: '", Snippet(trailing), "'"));
  }
  absl::StatusOr<std::vector<std::string_view>> args = SplitTopLevel(after.substr(1, close - 1));
  if (!args.ok()) {
    return error(detail::Cat("arguments: ", args.status().message()));
  }
  for (size_t i = 0; i < args->size(); ++i) {
    if (absl::Status status = CheckExpression((*args)[i], detail::Cat("argument ", i + 1));
        !status.ok()) {
      return error(detail::ToStd(status.message()));
    }
    launch.add_args(std::string((*args)[i]));
  }
  return launch;
}

// `name: dtype[dim, ...]` (also `dtype[dim][dim]`), optional ';'.
absl::StatusOr<v1::ScratchBuffer> ParseScratch(std::string_view body, uint32_t line) {
  constexpr std::string_view kWhat = "@scratch";
  auto error = [&](std::string_view what) { return DirectiveError(line, kWhat, what); };
  std::string_view rest = Strip(body);
  const std::string_view name = TakeIdentifier(rest);
  if (name.empty()) {
    return error("expected a buffer name, e.g. '@scratch partial: f32[N]'");
  }
  rest = detail::StripLeadingSpace(rest);
  if (rest.empty() || rest[0] != ':') {
    return error("expected ':' after the buffer name");
  }
  rest = detail::StripLeadingSpace(rest.substr(1));
  const std::string_view dtype_name = TakeIdentifier(rest);
  const absl::StatusOr<v1::DType> dtype = data::ParseDType(dtype_name);
  if (!dtype.ok()) {
    return error(detail::Cat(dtype_name.empty() ? std::string("missing dtype")
                                                : detail::Cat("unknown dtype '", dtype_name, "'"),
                             " (dtypes: f64, f32, f16, bf16, i64, i32, i8, u8, bool)"));
  }
  v1::ScratchBuffer scratch;
  scratch.set_name(std::string(name));
  scratch.set_dtype(*dtype);
  scratch.set_source_line(line);
  rest = detail::StripLeadingSpace(rest);
  if (rest.empty() || rest[0] != '[') {
    return error(
        detail::Cat("expected '[' and the shape after the dtype, e.g. ", dtype_name, "[N]"));
  }
  while (!rest.empty() && rest[0] == '[') {
    const size_t close = FindMatching(rest, 0);
    if (close == std::string_view::npos) {
      return error("expected ']' closing the shape");
    }
    absl::StatusOr<std::vector<std::string_view>> dims = SplitTopLevel(rest.substr(1, close - 1));
    if (!dims.ok()) {
      return error(detail::Cat("shape: ", dims.status().message()));
    }
    if (dims->empty()) {
      return error("the shape needs at least one dimension");
    }
    for (std::string_view dim : *dims) {
      if (absl::Status status =
              CheckExpression(dim, detail::Cat("dimension ", scratch.shape_size() + 1));
          !status.ok()) {
        return error(detail::ToStd(status.message()));
      }
      scratch.add_shape(std::string(dim));
    }
    rest = detail::StripLeadingSpace(rest.substr(close + 1));
  }
  if (!rest.empty() && rest[0] == ';') {
    rest = Strip(rest.substr(1));
  }
  if (!rest.empty()) {
    return error(detail::Cat("unexpected text after the shape: '", Snippet(rest), "'"));
  }
  return scratch;
}

// The text after the directive keyword, or nullopt when `comment` does not
// start with it. "@launchx" is not "@launch".
std::optional<std::string_view> AfterKeyword(std::string_view comment, std::string_view keyword) {
  if (comment.substr(0, keyword.size()) != keyword) {
    return std::nullopt;
  }
  std::string_view rest = comment.substr(keyword.size());
  if (!rest.empty() && IsIdentChar(rest[0])) {
    return std::nullopt;
  }
  return rest;
}

}  // namespace

absl::StatusOr<v1::LaunchPlan> ParseDirectives(std::string_view source) {
  const detail::LexedSource lexed = detail::Lex(source);
  v1::LaunchPlan plan;
  std::map<std::string, uint32_t, std::less<>> scratch_lines;
  int directives = 0;
  for (const detail::LineComment& comment : lexed.line_comments) {
    // "/// @launch" (a doc comment) counts too.
    const size_t start = comment.text.find_first_not_of("/ \t");
    if (start == std::string_view::npos || comment.text[start] != '@') {
      continue;
    }
    const std::string_view text = comment.text.substr(start);
    const std::optional<std::string_view> launch_body = AfterKeyword(text, "@launch");
    const std::optional<std::string_view> scratch_body = AfterKeyword(text, "@scratch");
    if (!launch_body.has_value() && !scratch_body.has_value()) {
      continue;
    }
    if (++directives > kMaxDirectives) {
      return absl::InvalidArgumentError(
          detail::Cat("line ", comment.line, ": more than ", kMaxDirectives, " directives"));
    }
    if (launch_body.has_value()) {
      absl::StatusOr<v1::Launch> launch = ParseLaunch(*launch_body, comment.line);
      if (!launch.ok()) {
        return launch.status();
      }
      *plan.add_launches() = *std::move(launch);
    } else {
      absl::StatusOr<v1::ScratchBuffer> scratch = ParseScratch(*scratch_body, comment.line);
      if (!scratch.ok()) {
        return scratch.status();
      }
      auto [it, inserted] = scratch_lines.emplace(scratch->name(), comment.line);
      if (!inserted) {
        return DirectiveError(
            comment.line, "@scratch",
            detail::Cat("buffer '", scratch->name(), "' is already declared at line ", it->second));
      }
      *plan.add_scratch() = *std::move(scratch);
    }
  }
  return plan;
}

std::vector<std::string> LaunchedTemplateInstances(const v1::LaunchPlan& plan) {
  std::vector<std::string> instances;
  for (const v1::Launch& launch : plan.launches()) {
    if (launch.kernel().find('<') != std::string::npos &&
        std::find(instances.begin(), instances.end(), launch.kernel()) == instances.end()) {
      instances.push_back(launch.kernel());
    }
  }
  return instances;
}

void AddLaunchedTemplateInstances(
    std::string_view source, google::protobuf::RepeatedPtrField<std::string>* name_expressions) {
  absl::StatusOr<v1::LaunchPlan> plan = ParseDirectives(source);
  if (!plan.ok()) return;
  for (std::string& instance : LaunchedTemplateInstances(*plan)) {
    if (std::find(name_expressions->begin(), name_expressions->end(), instance) ==
        name_expressions->end()) {
      *name_expressions->Add() = std::move(instance);
    }
  }
}

}  // namespace kerneleval::plan
