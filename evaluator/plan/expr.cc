#include "evaluator/plan/expr.h"

#include <limits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "evaluator/plan/strings.h"
#include "evaluator/plan/types.h"

namespace kerneleval::plan {
namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsIdentChar(char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// The expression as it appears in messages: escaped, at most ~80 characters.
std::string QuoteForMessage(std::string_view expr) {
  return detail::Cat("\"", detail::EscapeForMessage(expr, 80), "\"");
}

// A value that may be unknown (a name when only validating).
using Value = std::optional<int64_t>;

// How names are resolved.
struct NameResolver {
  enum class Mode { kEvaluate, kValidate, kSyntax };
  Mode mode = Mode::kSyntax;
  const ParamLookup* lookup = nullptr;             // kEvaluate
  const std::set<std::string>* known = nullptr;    // kValidate
  const ParamMap* params_for_message = nullptr;    // lists known names in errors
  std::vector<std::string>* names_seen = nullptr;  // ExprNames
};

class Parser {
 public:
  Parser(std::string_view text, const NameResolver& resolver) : text_(text), resolver_(resolver) {}

  absl::StatusOr<Value> ParseAll() {
    if (text_.size() > kMaxExprLength) {
      return absl::InvalidArgumentError(detail::Cat("expression ", QuoteForMessage(text_),
                                                    " is longer than ", kMaxExprLength,
                                                    " characters"));
    }
    SkipSpaces();
    if (pos_ >= text_.size()) {
      return Error("empty expression");
    }
    absl::StatusOr<Value> value = ParseConditional();
    if (!value.ok()) {
      return value;
    }
    SkipSpaces();
    if (pos_ < text_.size()) return Unexpected();
    return value;
  }

  // "unexpected 'X'" and, for what C code often has there, what the
  // language offers instead.
  absl::Status Unexpected() const {
    const std::string_view rest = text_.substr(pos_);
    if (rest.empty()) return Error("unexpected end of the expression");
    std::string hint;
    size_t before = pos_;
    while (before > 0 && IsSpace(text_[before - 1])) --before;
    if (rest.substr(0, 2) == "<<" || rest.substr(0, 2) == ">>") {
      hint = " (shifts are not part of the launch-plan language: multiply or divide)";
    } else if (rest.substr(0, 2) == "::") {
      hint = " (a namespace's constant is NS::NAME, without spaces or a leading ::)";
    } else if (rest.substr(0, 2) == "&&" || rest.substr(0, 2) == "||") {
      hint = " (&& and || are not supported: nest COND ? A : B, or use min and max)";
    } else if (IsIdentStart(rest[0]) && before > 0 && text_[before - 1] == ')') {
      hint =
          " (casts and floating point are not supported: integers only; ceil_div(a, b) "
          "rounds up)";
    } else if (rest[0] == '[') {
      hint = " (subscripts are not supported: the source's array constants are not plan values)";
    }
    return Error(
        detail::Cat("unexpected '", detail::EscapeForMessage(rest.substr(0, 1)), "'", hint));
  }

 private:
  absl::Status Error(std::string_view what) const { return ErrorAt(what, pos_); }
  absl::Status ErrorAt(std::string_view what, size_t pos) const {
    return absl::InvalidArgumentError(
        detail::Cat("expression ", QuoteForMessage(text_), ": ", what, " at column ", pos + 1));
  }

  void SkipSpaces() {
    while (pos_ < text_.size() && IsSpace(text_[pos_])) {
      ++pos_;
    }
  }
  bool Peek(char c) {
    SkipSpaces();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool Consume(char c) {
    if (!Peek(c)) {
      return false;
    }
    ++pos_;
    return true;
  }
  absl::Status Expect(char c) {
    if (Consume(c)) {
      return absl::OkStatus();
    }
    if (pos_ >= text_.size()) {
      return Error(detail::Cat("expected '", std::string(1, c), "'"));
    }
    return Error(detail::Cat("expected '", std::string(1, c), "', found '",
                             detail::EscapeForMessage(text_.substr(pos_, 1)), "'"));
  }

  std::string_view ParseIdentifier() {
    const size_t start = pos_;
    while (pos_ < text_.size() && IsIdentChar(text_[pos_])) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  // NAME or a namespace's NS::NAME (no spaces around `::`).
  std::string_view ParseQualifiedName() {
    const size_t start = pos_;
    ParseIdentifier();
    while (text_.substr(pos_, 2) == "::" && pos_ + 2 < text_.size() &&
           IsIdentStart(text_[pos_ + 2])) {
      pos_ += 2;
      ParseIdentifier();
    }
    return text_.substr(start, pos_ - start);
  }

  // COND ? A : B (right-associative, C's lowest precedence here). As in
  // C, only the branch the condition picks is evaluated: the other is
  // parsed with its values unknown (as when validating), so its arithmetic
  // errors (a division by zero the condition guards against) do not arise;
  // an unknown name there is still an error. An unknown condition gives an
  // unknown value.
  absl::StatusOr<Value> ParseConditional() {
    if (++depth_ > kMaxExprDepth) {
      return Error(detail::Cat("expression nested deeper than ", kMaxExprDepth, " levels"));
    }
    absl::StatusOr<Value> condition = ParseEquality();
    if (!condition.ok() || !Consume('?')) {
      --depth_;
      return condition;
    }
    const bool known = condition->has_value();
    const bool first_taken = known && **condition != 0;
    absl::StatusOr<Value> first = ParseBranch(!known || first_taken);
    if (!first.ok()) {
      return first;
    }
    if (absl::Status status = Expect(':'); !status.ok()) {
      return status;
    }
    absl::StatusOr<Value> second = ParseBranch(!known || !first_taken);
    if (!second.ok()) {
      return second;
    }
    --depth_;
    if (!known) {
      return Value();
    }
    return first_taken ? first : second;
  }

  absl::StatusOr<Value> ParseBranch(bool taken) {
    if (!taken) {
      ++untaken_;
    }
    absl::StatusOr<Value> value = ParseConditional();
    if (!taken) {
      --untaken_;
    }
    return value;
  }

  // == != over < <= > >=, each left-associative, 1 or 0 as in C. "<<" and
  // ">>" are shifts, which the language does not have: not comparisons.
  absl::StatusOr<Value> ParseEquality() {
    absl::StatusOr<Value> left = ParseRelational();
    while (left.ok()) {
      SkipSpaces();
      const std::string_view rest = text_.substr(pos_);
      if (rest.substr(0, 2) != "==" && rest.substr(0, 2) != "!=") {
        break;
      }
      const bool equal = rest[0] == '=';
      pos_ += 2;
      absl::StatusOr<Value> right = ParseRelational();
      if (!right.ok()) {
        return right;
      }
      *left = left->has_value() && right->has_value() ? Value((**left == **right) == equal ? 1 : 0)
                                                      : Value();
    }
    return left;
  }

  absl::StatusOr<Value> ParseRelational() {
    absl::StatusOr<Value> left = ParseSum();
    while (left.ok()) {
      SkipSpaces();
      const std::string_view rest = text_.substr(pos_);
      if (rest.empty() || (rest[0] != '<' && rest[0] != '>') || rest.substr(0, 2) == "<<" ||
          rest.substr(0, 2) == ">>") {
        break;
      }
      const bool less = rest[0] == '<';
      const bool or_equal = rest.size() > 1 && rest[1] == '=';
      pos_ += or_equal ? 2 : 1;
      absl::StatusOr<Value> right = ParseSum();
      if (!right.ok()) {
        return right;
      }
      if (!left->has_value() || !right->has_value()) {
        *left = Value();
        continue;
      }
      const int64_t a = **left, b = **right;
      const bool holds = less ? (or_equal ? a <= b : a < b) : (or_equal ? a >= b : a > b);
      *left = Value(holds ? 1 : 0);
    }
    return left;
  }

  absl::StatusOr<Value> ParseSum() {
    absl::StatusOr<Value> left = ParseProduct();
    if (!left.ok()) {
      return left;
    }
    while (true) {
      SkipSpaces();
      if (pos_ >= text_.size()) {
        break;
      }
      const char op = text_[pos_];
      if (op != '+' && op != '-') {
        break;
      }
      const size_t op_pos = pos_++;
      absl::StatusOr<Value> right = ParseProduct();
      if (!right.ok()) {
        return right;
      }
      if (!left->has_value() || !right->has_value()) {
        *left = std::nullopt;
        continue;
      }
      int64_t result = 0;
      const bool overflow = op == '+' ? __builtin_add_overflow(**left, **right, &result)
                                      : __builtin_sub_overflow(**left, **right, &result);
      if (overflow) {
        return ErrorAt("integer overflow", op_pos);
      }
      *left = result;
    }
    return left;
  }

  absl::StatusOr<Value> ParseProduct() {
    absl::StatusOr<Value> left = ParseUnary();
    if (!left.ok()) {
      return left;
    }
    while (true) {
      SkipSpaces();
      if (pos_ >= text_.size()) {
        break;
      }
      const char op = text_[pos_];
      if (op != '*' && op != '/' && op != '%') {
        break;
      }
      const size_t op_pos = pos_++;
      absl::StatusOr<Value> right = ParseUnary();
      if (!right.ok()) {
        return right;
      }
      if (op != '*' && right->has_value() && **right == 0) {
        return ErrorAt(op == '/' ? "division by zero" : "modulo by zero", op_pos);
      }
      if (!left->has_value() || !right->has_value()) {
        *left = std::nullopt;
        continue;
      }
      const int64_t a = **left, b = **right;
      if (op == '*') {
        int64_t result = 0;
        if (__builtin_mul_overflow(a, b, &result)) {
          return ErrorAt("integer overflow", op_pos);
        }
        *left = result;
      } else if (op == '/') {
        if (a == kInt64Min && b == -1) {
          return ErrorAt("integer overflow", op_pos);
        }
        *left = a / b;
      } else {
        *left = b == -1 ? 0 : a % b;  // INT64_MIN % -1 is undefined in C++; the answer is 0
      }
    }
    return left;
  }

  absl::StatusOr<Value> ParseUnary() {
    if (++depth_ > kMaxExprDepth) {
      return Error(detail::Cat("expression nested deeper than ", kMaxExprDepth, " levels"));
    }
    absl::StatusOr<Value> result;
    SkipSpaces();
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) {
      const char op = text_[pos_];
      const size_t op_pos = pos_++;
      result = ParseUnary();
      if (result.ok() && op == '-' && result->has_value()) {
        if (**result == kInt64Min) {
          result = ErrorAt("integer overflow", op_pos);
        } else {
          *result = -**result;
        }
      }
    } else {
      result = ParsePrimary();
      if (untaken_ > 0 && result.ok()) {
        *result = std::nullopt;  // a value of a branch ?: did not take: not evaluated
      }
    }
    --depth_;
    return result;
  }

  absl::StatusOr<Value> ParsePrimary() {
    SkipSpaces();
    if (pos_ >= text_.size()) {
      return Error("expected a number, a name or '('");
    }
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      absl::StatusOr<Value> inner = ParseConditional();
      if (!inner.ok()) {
        return inner;
      }
      if (absl::Status status = Expect(')'); !status.ok()) {
        return status;
      }
      return inner;
    }
    if (IsDigit(c)) {
      return ParseNumber();
    }
    if (IsIdentStart(c)) {
      const size_t name_pos = pos_;
      const std::string_view name = ParseQualifiedName();
      if (Peek('(')) {
        return ParseCall(name, name_pos);
      }
      if (name == "sizeof") {
        return Error("expected '(' after sizeof");
      }
      return ResolveName(name, name_pos);
    }
    if (c == '.') {
      return Error("floating-point literals are not supported");
    }
    return Unexpected();
  }

  absl::StatusOr<Value> ParseNumber() {
    const size_t start = pos_;
    int64_t value = 0;
    bool any_digit = false;
    auto accumulate = [&](int base, int digit) -> bool {
      return !__builtin_mul_overflow(value, int64_t{base}, &value) &&
             !__builtin_add_overflow(value, int64_t{digit}, &value);
    };
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() &&
        (text_[pos_ + 1] == 'x' || text_[pos_ + 1] == 'X')) {
      pos_ += 2;
      while (pos_ < text_.size() && HexDigitValue(text_[pos_]) >= 0) {
        if (!accumulate(16, HexDigitValue(text_[pos_]))) {
          return ErrorAt("integer literal out of range", start);
        }
        any_digit = true;
        ++pos_;
      }
      if (!any_digit) {
        return ErrorAt("hexadecimal literal without digits", start);
      }
    } else {
      if (text_[pos_] == '0' && pos_ + 1 < text_.size() && IsDigit(text_[pos_ + 1])) {
        return ErrorAt("octal literals (leading 0) are not supported", start);
      }
      while (pos_ < text_.size() && IsDigit(text_[pos_])) {
        if (!accumulate(10, text_[pos_] - '0')) {
          return ErrorAt("integer literal out of range", start);
        }
        ++pos_;
      }
    }
    // Suffixes: u, l, ul, lu, ll, ull, llu in either case. They do not change
    // the value: everything is int64.
    int n_u = 0, n_l = 0;
    while (pos_ < text_.size()) {
      const char s = text_[pos_];
      if (s == 'u' || s == 'U') {
        ++n_u;
      } else if (s == 'l' || s == 'L') {
        ++n_l;
      } else {
        break;
      }
      ++pos_;
    }
    if (n_u > 1 || n_l > 2) {
      return ErrorAt("invalid integer suffix", start);
    }
    if (pos_ < text_.size() && (text_[pos_] == '.' || IsIdentChar(text_[pos_]))) {
      if (text_[pos_] == '.' || ((text_[pos_] == 'e' || text_[pos_] == 'E') && !n_u && !n_l)) {
        return ErrorAt("floating-point literals are not supported", start);
      }
      return ErrorAt("invalid integer literal", start);
    }
    return Value(value);
  }

  absl::StatusOr<Value> ResolveName(std::string_view name, size_t name_pos) {
    if (resolver_.names_seen != nullptr) {
      bool seen = false;
      for (const std::string& known : *resolver_.names_seen) {
        seen = seen || known == name;
      }
      if (!seen) {
        resolver_.names_seen->emplace_back(name);
      }
    }
    switch (resolver_.mode) {
      case NameResolver::Mode::kSyntax:
        return Value();
      case NameResolver::Mode::kValidate:
        if (resolver_.known->count(std::string(name)) > 0) {
          return Value();
        }
        return ErrorAt(UnknownNameMessage(name), name_pos);
      case NameResolver::Mode::kEvaluate:
        break;
    }
    std::optional<int64_t> value;
    if (*resolver_.lookup) {
      value = (*resolver_.lookup)(name);
    }
    if (!value.has_value()) {
      return ErrorAt(UnknownNameMessage(name), name_pos);
    }
    return Value(*value);
  }

  std::string UnknownNameMessage(std::string_view name) const {
    std::vector<std::string_view> known;
    if (resolver_.mode == NameResolver::Mode::kValidate) {
      for (const std::string& k : *resolver_.known) {
        known.push_back(k);
      }
    } else if (resolver_.params_for_message != nullptr) {
      for (const auto& [k, v] : *resolver_.params_for_message) {
        known.push_back(k);
      }
    } else {
      return detail::Cat("unknown name '", name, "'");
    }
    return detail::Cat("unknown name '", name,
                       "' (known: ", known.empty() ? "none" : detail::Join(known, ", "), ")");
  }

  absl::StatusOr<Value> ParseCall(std::string_view name, size_t name_pos) {
    if (name == "sizeof") {
      return ParseSizeof(name_pos);
    }
    const bool is_min = name == "min", is_max = name == "max", is_ceil_div = name == "ceil_div";
    if (!is_min && !is_max && !is_ceil_div) {
      return ErrorAt(
          detail::Cat("unknown function '", name,
                      "' (functions: ceil_div, min, max, sizeof; the source's own functions and "
                      "function-like macros are not evaluated in a launch line)"),
          name_pos);
    }
    if (absl::Status status = Expect('('); !status.ok()) {
      return status;
    }
    absl::StatusOr<Value> a = ParseConditional();
    if (!a.ok()) {
      return a;
    }
    if (Peek(')')) {
      return Error(detail::Cat(name, "() takes 2 arguments, found 1"));
    }
    if (absl::Status status = Expect(','); !status.ok()) {
      return status;
    }
    SkipSpaces();
    const size_t b_pos = pos_;
    absl::StatusOr<Value> b = ParseConditional();
    if (!b.ok()) {
      return b;
    }
    if (Peek(',')) {
      return Error(detail::Cat(name, "() takes 2 arguments"));
    }
    if (absl::Status status = Expect(')'); !status.ok()) {
      return status;
    }
    if (is_ceil_div && b->has_value() && **b == 0) {
      return ErrorAt("division by zero in ceil_div", b_pos);
    }
    if (!a->has_value() || !b->has_value()) {
      return Value();
    }
    const int64_t x = **a, y = **b;
    if (is_min) {
      return Value(x < y ? x : y);
    }
    if (is_max) {
      return Value(x > y ? x : y);
    }
    if (x == kInt64Min && y == -1) {
      return ErrorAt("integer overflow in ceil_div", name_pos);
    }
    // Ceiling of the exact quotient: C++ truncates toward zero, so round up
    // when there is a remainder and the exact quotient is positive.
    int64_t quotient = x / y;
    const int64_t remainder = x % y;
    if (remainder != 0 && ((remainder > 0) == (y > 0))) {
      ++quotient;
    }
    return Value(quotient);
  }

  absl::StatusOr<Value> ParseSizeof(size_t name_pos) {
    if (absl::Status status = Expect('('); !status.ok()) {
      return status;
    }
    std::vector<std::string_view> words;
    const size_t type_pos = pos_;
    while (true) {
      SkipSpaces();
      if (pos_ >= text_.size()) {
        return Error("expected ')' closing sizeof(");
      }
      if (text_[pos_] == ')') {
        break;
      }
      if (!IsIdentStart(text_[pos_])) {
        return Error(detail::Cat("sizeof() takes a type name; unexpected '",
                                 detail::EscapeForMessage(text_.substr(pos_, 1)), "'"));
      }
      words.push_back(ParseIdentifier());
    }
    ++pos_;  // ')'
    std::vector<std::string_view> type_words;
    for (std::string_view word : words) {
      if (word != "const" && word != "volatile") {
        type_words.push_back(word);
      }
    }
    std::optional<TypeInfo> type = LookupBuiltinType(type_words);
    if (!type.has_value() || type->size_bytes == 0) {
      return ErrorAt(detail::Cat("unknown type '", detail::Join(words, " "),
                                 "' in sizeof (known: ", BuiltinTypeNamesForMessage(), ")"),
                     words.empty() ? type_pos : name_pos);
    }
    return Value(int64_t{type->size_bytes});
  }

  std::string_view text_;
  const NameResolver& resolver_;
  size_t pos_ = 0;
  int depth_ = 0;
  int untaken_ = 0;  // > 0: inside a branch of ?: that its condition did not take
};

absl::StatusOr<Value> Run(std::string_view expr, const NameResolver& resolver) {
  Parser parser(expr, resolver);
  return parser.ParseAll();
}

}  // namespace

absl::StatusOr<int64_t> EvalIntExpr(std::string_view expr, const ParamMap& params) {
  const ParamLookup lookup = [&params](std::string_view name) -> std::optional<int64_t> {
    auto it = params.find(name);
    if (it == params.end()) {
      return std::nullopt;
    }
    return it->second;
  };
  NameResolver resolver;
  resolver.mode = NameResolver::Mode::kEvaluate;
  resolver.lookup = &lookup;
  resolver.params_for_message = &params;
  absl::StatusOr<Value> value = Run(expr, resolver);
  if (!value.ok()) {
    return value.status();
  }
  return **value;
}

absl::StatusOr<int64_t> EvalIntExpr(std::string_view expr, const ParamLookup& lookup) {
  NameResolver resolver;
  resolver.mode = NameResolver::Mode::kEvaluate;
  resolver.lookup = &lookup;
  absl::StatusOr<Value> value = Run(expr, resolver);
  if (!value.ok()) {
    return value.status();
  }
  return **value;
}

absl::Status ValidateExpr(std::string_view expr, const std::set<std::string>& known_names) {
  NameResolver resolver;
  resolver.mode = NameResolver::Mode::kValidate;
  resolver.known = &known_names;
  return Run(expr, resolver).status();
}

absl::Status CheckExprSyntax(std::string_view expr) {
  NameResolver resolver;
  resolver.mode = NameResolver::Mode::kSyntax;
  return Run(expr, resolver).status();
}

std::vector<std::string> ExprNames(std::string_view expr) {
  std::vector<std::string> names;
  NameResolver resolver;
  resolver.mode = NameResolver::Mode::kSyntax;
  resolver.names_seen = &names;
  if (!Run(expr, resolver).ok()) {
    return {};
  }
  return names;
}

bool IsQualifiedIdentifier(std::string_view text) {
  size_t start = 0;
  while (true) {
    const size_t colons = text.find("::", start);
    if (!IsIdentifier(text.substr(start, colons - start))) return false;
    if (colons == std::string_view::npos) return true;
    start = colons + 2;
  }
}

bool IsIdentifier(std::string_view text) {
  if (text.empty() || !IsIdentStart(text[0])) {
    return false;
  }
  for (char c : text) {
    if (!IsIdentChar(c)) {
      return false;
    }
  }
  return true;
}

}  // namespace kerneleval::plan
