// The integer expression language of launch plans and tensor shapes:
//
//   expr    := term (('+' | '-') term)*
//   term    := unary (('*' | '/' | '%') unary)*
//   unary   := ('-' | '+') unary | primary
//   primary := INTEGER | NAME | '(' expr ')'
//            | ('ceil_div' | 'min' | 'max') '(' expr ',' expr ')'
//            | 'sizeof' '(' TYPE ')'
//
// INTEGER: decimal or 0x hex, optional u/l suffixes (10u, 4096ul, 0x10LL);
// octal (leading 0) and floating-point literals are refused. Arithmetic is on
// int64 as in C++ (`/` and `%` truncate toward zero), except that it is total:
// overflow, division by zero, an unknown name, nesting deeper than
// kMaxExprDepth or text longer than kMaxExprLength are errors
// (absl::InvalidArgumentError naming the 1-based column), never undefined
// behaviour. ceil_div(a, b) is the mathematical ceiling of a/b.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kerneleval::plan {

// Values of the names an expression may use (a problem's parameters, for one
// shape). std::less<> lets it be searched with a string_view.
using ParamMap = std::map<std::string, int64_t, std::less<>>;

// Resolves a name; nullopt means "no such name".
using ParamLookup = std::function<std::optional<int64_t>(std::string_view name)>;

inline constexpr size_t kMaxExprLength = 1024;  // [characters]
inline constexpr int kMaxExprDepth = 64;        // nested parentheses/unary operators/calls

// Evaluates `expr`. Errors name the expression and the column, e.g.
//   expression "ceil_div(N, 0)": division by zero in ceil_div at column 13
absl::StatusOr<int64_t> EvalIntExpr(std::string_view expr, const ParamMap& params);
absl::StatusOr<int64_t> EvalIntExpr(std::string_view expr, const ParamLookup& lookup);

// Checks that `expr` is well formed and uses only `known_names`; constant
// parts are still evaluated (so "1/0" and overflowing literals are errors).
absl::Status ValidateExpr(std::string_view expr, const std::set<std::string>& known_names);

// Syntax only: any name is accepted.
absl::Status CheckExprSyntax(std::string_view expr);

// The names an expression refers to (not function names), in order of first
// use, without duplicates. Empty when `expr` does not parse.
std::vector<std::string> ExprNames(std::string_view expr);

// Whether `text` is one identifier: [A-Za-z_][A-Za-z0-9_]*.
bool IsIdentifier(std::string_view text);
// Identifiers joined by `::` ("cfg::kTile"), a namespace's constant.
bool IsQualifiedIdentifier(std::string_view text);

}  // namespace kerneleval::plan
