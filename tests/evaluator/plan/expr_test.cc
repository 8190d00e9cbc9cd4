#include "evaluator/plan/expr.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace kerneleval::plan {
namespace {

using ::testing::HasSubstr;

int64_t Eval(std::string_view expr, const ParamMap& params = {}) {
  absl::StatusOr<int64_t> value = EvalIntExpr(expr, params);
  EXPECT_TRUE(value.ok()) << expr << ": " << value.status();
  return value.value_or(-424242);
}

// The error message of an expression that must fail with InvalidArgument.
std::string EvalError(std::string_view expr, const ParamMap& params = {}) {
  absl::StatusOr<int64_t> value = EvalIntExpr(expr, params);
  EXPECT_FALSE(value.ok()) << expr << " evaluated to " << value.value_or(0);
  if (value.ok()) {
    return "";
  }
  EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument);
  const absl::string_view message = value.status().message();
  return {message.data(), message.size()};
}

TEST(ExprTest, Literals) {
  EXPECT_EQ(Eval("42"), 42);
  EXPECT_EQ(Eval("0"), 0);
  EXPECT_EQ(Eval("0x1F"), 31);
  EXPECT_EQ(Eval("0XfF"), 255);
  EXPECT_EQ(Eval("10u"), 10);
  EXPECT_EQ(Eval("4096ul"), 4096);
  EXPECT_EQ(Eval("0x10LL"), 16);
  EXPECT_EQ(Eval("7ULL"), 7);
  EXPECT_EQ(Eval("3lu"), 3);
  EXPECT_EQ(Eval("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Eval("0x7fffffffffffffff"), std::numeric_limits<int64_t>::max());
}

TEST(ExprTest, PrecedenceAndAssociativity) {
  EXPECT_EQ(Eval("2 + 3 * 4"), 14);
  EXPECT_EQ(Eval("(2 + 3) * 4"), 20);
  EXPECT_EQ(Eval("10 - 4 - 3"), 3);
  EXPECT_EQ(Eval("100 / 10 / 5"), 2);
  EXPECT_EQ(Eval("7 % 4 * 2"), 6);
  EXPECT_EQ(Eval("2 * 3 % 4"), 2);
  EXPECT_EQ(Eval("1 + 2 * 3 - 4 / 2"), 5);
  EXPECT_EQ(Eval("-3 * -4"), 12);
  EXPECT_EQ(Eval("- -5"), 5);
  EXPECT_EQ(Eval("+5"), 5);
  EXPECT_EQ(Eval("2 * -3"), -6);
  EXPECT_EQ(Eval("-(2 + 3) * 2"), -10);
  EXPECT_EQ(Eval("  \t1\n+\r2 "), 3);
}

TEST(ExprTest, DivisionTruncatesTowardZeroLikeCpp) {
  EXPECT_EQ(Eval("-7 / 2"), -3);
  EXPECT_EQ(Eval("7 / -2"), -3);
  EXPECT_EQ(Eval("-7 % 2"), -1);
  EXPECT_EQ(Eval("7 % -2"), 1);
  EXPECT_EQ(Eval("(-9223372036854775807 - 1) % -1"), 0);
}

TEST(ExprTest, CeilDivIsTheMathematicalCeiling) {
  EXPECT_EQ(Eval("ceil_div(10, 4)"), 3);
  EXPECT_EQ(Eval("ceil_div(8, 4)"), 2);
  EXPECT_EQ(Eval("ceil_div(0, 4)"), 0);
  EXPECT_EQ(Eval("ceil_div(1, 1024)"), 1);
  EXPECT_EQ(Eval("ceil_div(-7, 2)"), -3);
  EXPECT_EQ(Eval("ceil_div(7, -2)"), -3);
  EXPECT_EQ(Eval("ceil_div(-7, -2)"), 4);
  // No intermediate a + b - 1 that could overflow.
  EXPECT_EQ(Eval("ceil_div(9223372036854775807, 2)"), 4611686018427387904);
  EXPECT_EQ(Eval("ceil_div(N, 256)", {{"N", 1000}}), 4);
  EXPECT_EQ(Eval("ceil_div(N, 256)", {{"N", 1024}}), 4);
  EXPECT_EQ(Eval("ceil_div(N, 256)", {{"N", 1025}}), 5);
}

TEST(ExprTest, MinMaxAndNesting) {
  EXPECT_EQ(Eval("min(3, -2)"), -2);
  EXPECT_EQ(Eval("max(3, -2)"), 3);
  EXPECT_EQ(Eval("max(min(N, 256), 32)", {{"N", 1000}}), 256);
  EXPECT_EQ(Eval("max(min(N, 256), 32)", {{"N", 7}}), 32);
  EXPECT_EQ(Eval("min(ceil_div(N, 4), max(2, 3)) * 2", {{"N", 9}}), 6);
}

// C's comparisons (1 or 0) and COND ? A : B, which launch lines write
// (`N < 256 ? N : 256`): an honest-kernel sweep's plan was refused for it.
// Only the branch taken is evaluated, as in C.
TEST(ExprTest, ComparisonsAndConditionals) {
  EXPECT_EQ(Eval("3 <= 3"), 1);
  EXPECT_EQ(Eval("3 < 3"), 0);
  EXPECT_EQ(Eval("4 > 3"), 1);
  EXPECT_EQ(Eval("3 >= 4"), 0);
  EXPECT_EQ(Eval("2 == 2"), 1);
  EXPECT_EQ(Eval("2 != 2"), 0);
  EXPECT_EQ(Eval("1 < 2 == 1"), 1);  // relational binds tighter than equality
  EXPECT_EQ(Eval("1 + 2 > 2"), 1);   // arithmetic tighter than both
  EXPECT_EQ(Eval("N < 256 ? N : 256", {{"N", 100}}), 100);
  EXPECT_EQ(Eval("N < 256 ? N : 256", {{"N", 1000}}), 256);
  EXPECT_EQ(Eval("1 ? 2 : 3 ? 4 : 5"), 2);  // right-associative
  EXPECT_EQ(Eval("0 ? 2 : 3 ? 4 : 5"), 4);
  EXPECT_EQ(Eval("min(N > 1 ? N : 1, 64) * 2", {{"N", 0}}), 2);
  EXPECT_EQ(Eval("(N % 4 == 0 ? N / 4 : N) + 1", {{"N", 8}}), 3);
  // The branch not taken is parsed, not evaluated: a division the
  // condition guards against is no error.
  EXPECT_EQ(Eval("N == 0 ? 1 : 10 / N", {{"N", 0}}), 1);
  EXPECT_EQ(Eval("N == 0 ? 1 : 10 / N", {{"N", 5}}), 2);
  EXPECT_EQ(Eval("N != 0 ? ceil_div(10, N) : 0", {{"N", 0}}), 0);
  EXPECT_THAT(EvalError("N == 0 ? 10 / N : 1", {{"N", 0}}), HasSubstr("division by zero"));
  EXPECT_THAT(EvalError("N ? 1 : 10 / M", {{"N", 1}}), HasSubstr("unknown name"));
  EXPECT_THAT(EvalError("N ? 1", {{"N", 1}}), HasSubstr("expected ':'"));
  EXPECT_THAT(EvalError("N << 2", {{"N", 1}}), HasSubstr("unexpected '<'"));
  EXPECT_THAT(EvalError("N > > 2", {{"N", 1}}), HasSubstr("unexpected '>'"));
}

TEST(ExprTest, Parameters) {
  const ParamMap params = {{"ROWS", 4096}, {"COLS", 1000}, {"_x1", -2}};
  EXPECT_EQ(Eval("ROWS * COLS", params), 4096000);
  EXPECT_EQ(Eval("_x1 * _x1", params), 4);
  const ParamLookup lookup = [](std::string_view name) -> std::optional<int64_t> {
    if (name == "K") {
      return 7;
    }
    return std::nullopt;
  };
  EXPECT_EQ(EvalIntExpr("K * 6", lookup).value(), 42);
  EXPECT_FALSE(EvalIntExpr("J", lookup).ok());
  EXPECT_FALSE(EvalIntExpr("J", ParamLookup()).ok());  // an empty lookup knows nothing
}

TEST(ExprTest, Sizeof) {
  const std::pair<std::string_view, int64_t> cases[] = {
      {"float", 4},
      {"double", 8},
      {"half", 2},
      {"__half", 2},
      {"__nv_bfloat16", 2},
      {"nv_bfloat16", 2},
      {"int", 4},
      {"unsigned", 4},
      {"unsigned int", 4},
      {"long", 8},
      {"long long", 8},
      {"size_t", 8},
      {"int64_t", 8},
      {"uint64_t", 8},
      {"int32_t", 4},
      {"uint32_t", 4},
      {"int8_t", 1},
      {"uint8_t", 1},
      {"char", 1},
      {"bool", 1},
      {"short", 2},
      {"float2", 8},
      {"float3", 12},
      {"float4", 16},
      {"double2", 16},
      {"int2", 8},
      {"int4", 16},
      {"half2", 4},
      {"__half2", 4},
      {"unsigned long long", 8},
      {"long unsigned int", 8},
      {"signed char", 1},
      {"unsigned short", 2},
      {"const float", 4},
  };
  for (const auto& [type, size] : cases) {
    EXPECT_EQ(Eval(std::string("sizeof(") + std::string(type) + ")"), size) << type;
  }
  EXPECT_EQ(Eval("256 * sizeof(float)"), 1024);
  EXPECT_EQ(Eval("sizeof( unsigned   int )"), 4);
  EXPECT_EQ(Eval("2 * 32 * sizeof(double) + 4"), 516);
}

TEST(ExprTest, OverflowIsAnErrorWithItsColumn) {
  EXPECT_THAT(EvalError("9223372036854775807 + 1"), HasSubstr("integer overflow at column 21"));
  EXPECT_THAT(EvalError("-9223372036854775807 - 2"), HasSubstr("integer overflow"));
  EXPECT_THAT(EvalError("3037000500 * 3037000500"), HasSubstr("integer overflow at column 12"));
  EXPECT_THAT(EvalError("(-9223372036854775807 - 1) / -1"), HasSubstr("integer overflow"));
  EXPECT_THAT(EvalError("-(-9223372036854775807 - 1)"), HasSubstr("integer overflow at column 1"));
  EXPECT_THAT(EvalError("ceil_div(-9223372036854775807 - 1, -1)"), HasSubstr("overflow"));
  EXPECT_THAT(EvalError("9223372036854775808"), HasSubstr("integer literal out of range"));
  EXPECT_THAT(EvalError("0x8000000000000000"), HasSubstr("integer literal out of range"));
  EXPECT_THAT(EvalError("N * N", {{"N", int64_t{1} << 40}}), HasSubstr("integer overflow"));
}

TEST(ExprTest, DivisionByZeroIsAnError) {
  EXPECT_THAT(EvalError("1 / 0"), HasSubstr("division by zero at column 3"));
  EXPECT_THAT(EvalError("N % 0", {{"N", 5}}), HasSubstr("modulo by zero at column 3"));
  EXPECT_THAT(EvalError("ceil_div(N, Z)", {{"N", 5}, {"Z", 0}}),
              HasSubstr("division by zero in ceil_div at column 13"));
  EXPECT_THAT(EvalError("4 / (N - 5)", {{"N", 5}}), HasSubstr("division by zero"));
}

TEST(ExprTest, UnknownNamesListTheKnownOnes) {
  const std::string message = EvalError("ROWS * M", {{"ROWS", 1}, {"COLS", 2}});
  EXPECT_THAT(message, HasSubstr("unknown name 'M' (known: COLS, ROWS) at column 8"));
  EXPECT_THAT(message, HasSubstr("expression \"ROWS * M\""));
  EXPECT_THAT(EvalError("x"), HasSubstr("unknown name 'x' (known: none)"));
}

TEST(ExprTest, SyntaxErrors) {
  EXPECT_THAT(EvalError(""), HasSubstr("empty expression"));
  EXPECT_THAT(EvalError("   "), HasSubstr("empty expression"));
  EXPECT_THAT(EvalError("1 +"), HasSubstr("expected a number, a name or '(' at column 4"));
  EXPECT_THAT(EvalError("(1"), HasSubstr("expected ')' at column 3"));
  EXPECT_THAT(EvalError("1 2"), HasSubstr("unexpected '2' at column 3"));
  EXPECT_THAT(EvalError("1)"), HasSubstr("unexpected ')'"));
  EXPECT_THAT(EvalError("foo(1, 2)"), HasSubstr("unknown function 'foo'"));
  EXPECT_THAT(EvalError("min(1)"), HasSubstr("min() takes 2 arguments, found 1"));
  EXPECT_THAT(EvalError("max(1, 2, 3)"), HasSubstr("max() takes 2 arguments"));
  EXPECT_THAT(EvalError("sizeof(struct_x)"), HasSubstr("unknown type 'struct_x' in sizeof"));
  EXPECT_THAT(EvalError("sizeof(void)"), HasSubstr("unknown type 'void'"));
  EXPECT_THAT(EvalError("sizeof float"), HasSubstr("expected '('"));
  EXPECT_THAT(EvalError("sizeof(float*)"), HasSubstr("sizeof() takes a type name"));
  EXPECT_THAT(EvalError("1.5"), HasSubstr("floating-point literals are not supported"));
  EXPECT_THAT(EvalError("1e3"), HasSubstr("floating-point literals are not supported"));
  EXPECT_THAT(EvalError(".5"), HasSubstr("floating-point literals are not supported"));
  EXPECT_THAT(EvalError("012"), HasSubstr("octal literals"));
  EXPECT_THAT(EvalError("0x"), HasSubstr("hexadecimal literal without digits"));
  EXPECT_THAT(EvalError("1uu"), HasSubstr("invalid integer suffix"));
  EXPECT_THAT(EvalError("12abc"), HasSubstr("invalid integer literal"));
  EXPECT_THAT(EvalError("N << 2", {{"N", 1}}), HasSubstr("unexpected '<'"));
}

// A namespace's constant by its qualified name.
TEST(ExprTest, QualifiedNames) {
  EXPECT_EQ(Eval("cfg::TILE * 2 + a::b::c", {{"cfg::TILE", 32}, {"a::b::c", 1}}), 65);
  EXPECT_THAT(EvalError("cfg::TILE", {{"TILE", 32}}), HasSubstr("unknown name 'cfg::TILE'"));
  EXPECT_TRUE(IsQualifiedIdentifier("cfg::kTile"));
  EXPECT_TRUE(IsQualifiedIdentifier("kTile"));
  for (const char* bad : {"", "::k", "k::", "a:::b", "a::1b", "a b"}) {
    EXPECT_FALSE(IsQualifiedIdentifier(bad)) << bad;
  }
}

// What C code often has in a launch line gets, beside "unexpected", what the
// language offers instead (helper sweep of LLM-style kernels).
TEST(ExprTest, CommonCConstructsSayWhatToWriteInstead) {
  auto syntax_error = [](std::string_view expr) {
    const absl::Status status = CheckExprSyntax(expr);
    EXPECT_FALSE(status.ok()) << expr;
    return std::string(status.message());
  };
  EXPECT_THAT(syntax_error("N >> 2"), HasSubstr("unexpected '>' (shifts are not part of"));
  EXPECT_THAT(syntax_error("(int)ceil(N / 256.0)"),
              HasSubstr("unexpected 'c' (casts and floating point are not supported"));
  EXPECT_THAT(syntax_error("cfg:: TILE"), HasSubstr("(a namespace's constant is NS::NAME"));
  EXPECT_THAT(syntax_error("N > 0 && N < 9"), HasSubstr("(&& and || are not supported"));
  EXPECT_THAT(syntax_error("kSizes[2]"), HasSubstr("(subscripts are not supported"));
  EXPECT_THAT(syntax_error("CEIL_DIV(N, 256)"),
              HasSubstr("function-like macros are not evaluated in a launch line"));
  EXPECT_THAT(syntax_error("N +"), HasSubstr("at column"));
}

TEST(ExprTest, DepthAndLengthLimits) {
  std::string shallow = std::string(30, '(') + "1" + std::string(30, ')');
  EXPECT_EQ(Eval(shallow), 1);
  std::string deep = std::string(200, '(') + "1" + std::string(200, ')');
  EXPECT_THAT(EvalError(deep), HasSubstr("nested deeper than 64 levels"));
  std::string minuses(100, '-');
  EXPECT_THAT(EvalError(minuses + "1"), HasSubstr("nested deeper than 64 levels"));
  std::string calls;
  for (int i = 0; i < 70; ++i) {
    calls += "min(1, ";
  }
  calls += "1" + std::string(70, ')');
  EXPECT_THAT(EvalError(calls), HasSubstr("nested deeper than 64 levels"));

  std::string long_sum = "1";
  while (long_sum.size() <= kMaxExprLength) {
    long_sum += "+1";
  }
  EXPECT_THAT(EvalError(long_sum), HasSubstr("longer than 1024 characters"));
  std::string just_fits = std::string(kMaxExprLength - 1, ' ') + "7";
  EXPECT_EQ(Eval(just_fits), 7);
}

TEST(ExprTest, MessagesEscapeUnprintableBytes) {
  const std::string message = EvalError(std::string("1 + \x01\xff", 6));
  for (char c : message) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "byte " << static_cast<int>(c) << " in " << message;
  }
  EXPECT_THAT(message, HasSubstr("\\001"));
}

TEST(ExprTest, ValidateExprChecksNamesAndConstantParts) {
  const std::set<std::string> known = {"N", "ROWS"};
  EXPECT_TRUE(ValidateExpr("ceil_div(N, 256) * ROWS", known).ok());
  EXPECT_TRUE(ValidateExpr("N / ROWS", known).ok());  // values unknown: no division check
  absl::Status unknown = ValidateExpr("N * M", known);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.message()),
              HasSubstr("unknown name 'M' (known: N, ROWS) at column 5"));
  EXPECT_THAT(std::string(ValidateExpr("N / 0", known).message()), HasSubstr("division by zero"));
  EXPECT_THAT(std::string(ValidateExpr("N + 9223372036854775807 * 2", known).message()),
              HasSubstr("integer overflow"));
  EXPECT_THAT(std::string(ValidateExpr("N +", known).message()), HasSubstr("expected a number"));
}

TEST(ExprTest, CheckExprSyntaxAcceptsAnyName) {
  EXPECT_TRUE(CheckExprSyntax("anything * ceil_div(at, all)").ok());
  EXPECT_FALSE(CheckExprSyntax("a +* b").ok());
  EXPECT_FALSE(CheckExprSyntax("1/0").ok());
}

TEST(ExprTest, ExprNames) {
  EXPECT_THAT(ExprNames("ceil_div(N, B) * N + sizeof(float) + min(A, 1)"),
              ::testing::ElementsAre("N", "B", "A"));
  EXPECT_THAT(ExprNames("42"), ::testing::IsEmpty());
  EXPECT_THAT(ExprNames("N +"), ::testing::IsEmpty());
}

TEST(ExprTest, IsIdentifier) {
  EXPECT_TRUE(IsIdentifier("x"));
  EXPECT_TRUE(IsIdentifier("_a1"));
  EXPECT_FALSE(IsIdentifier(""));
  EXPECT_FALSE(IsIdentifier("1a"));
  EXPECT_FALSE(IsIdentifier("a b"));
  EXPECT_FALSE(IsIdentifier("a-b"));
}

}  // namespace
}  // namespace kerneleval::plan
