#include "evaluator/plan/directives.h"

#include <gmock/gmock.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <string>

namespace kerneleval::plan {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;

v1::LaunchPlan Parse(std::string_view source) {
  absl::StatusOr<v1::LaunchPlan> plan = ParseDirectives(source);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.value_or(v1::LaunchPlan());
}

std::string ParseError(std::string_view source) {
  absl::StatusOr<v1::LaunchPlan> plan = ParseDirectives(source);
  EXPECT_FALSE(plan.ok()) << "parsed: " << plan->DebugString();
  if (plan.ok()) {
    return "";
  }
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  const absl::string_view message = plan.status().message();
  return {message.data(), message.size()};
}

v1::LaunchPlan FromText(const std::string& text) {
  v1::LaunchPlan plan;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &plan)) << text;
  return plan;
}

void ExpectPlanEq(const v1::LaunchPlan& got, const v1::LaunchPlan& want) {
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(got, want))
      << "got:\n"
      << got.DebugString() << "want:\n"
      << want.DebugString();
}

TEST(DirectivesTest, TheDocumentedExample) {
  const v1::LaunchPlan plan = Parse(
      "// @launch softmax_kernel<<<ROWS, 256, 256 * sizeof(float)>>>(x, y, ROWS, COLS)\n"
      "// @launch k2<<<dim3(ceil_div(N, 256), 1, 1), dim3(256)>>>(partial, y, N)\n"
      "// @scratch partial: f32[ceil_div(N, 1024)]\n");
  ExpectPlanEq(
      plan, FromText(R"pb(
        launches {
          kernel: "softmax_kernel"
          grid { x: "ROWS" }
          block { x: "256" }
          shared_mem_bytes: "256 * sizeof(float)"
          args: [ "x", "y", "ROWS", "COLS" ]
          source_line: 1
        }
        launches {
          kernel: "k2"
          grid { x: "ceil_div(N, 256)" y: "1" z: "1" }
          block { x: "256" }
          args: [ "partial", "y", "N" ]
          source_line: 2
        }
        scratch { name: "partial" dtype: DTYPE_F32 shape: "ceil_div(N, 1024)" source_line: 3 }
      )pb"));
}

TEST(DirectivesTest, DirectivesAmongCodeKeepTheirLineNumbers) {
  const v1::LaunchPlan plan = Parse(R"cu(#include <cuda_fp16.h>

// Row-wise softmax, one block per row.
// @launch softmax<<<ROWS, dim3(32, 8)>>>(x, y, COLS);
extern "C" __global__ void softmax(const float* x, float* y, int cols) {
  // not a directive: @launch in the middle of a comment
  const char* s = "// @launch fake<<<1, 1>>>()";
  /* // @launch also_fake<<<1, 1>>>() */
}
// @scratch tmp: bf16[ROWS][COLS]   	
)cu");
  ASSERT_EQ(plan.launches_size(), 1);
  EXPECT_EQ(plan.launches(0).kernel(), "softmax");
  EXPECT_EQ(plan.launches(0).source_line(), 4u);
  EXPECT_EQ(plan.launches(0).block().x(), "32");
  EXPECT_EQ(plan.launches(0).block().y(), "8");
  EXPECT_EQ(plan.launches(0).block().z(), "");
  ASSERT_EQ(plan.scratch_size(), 1);
  EXPECT_EQ(plan.scratch(0).source_line(), 10u);
  EXPECT_THAT(plan.scratch(0).shape(), ElementsAre("ROWS", "COLS"));
}

TEST(DirectivesTest, CommentVariants) {
  const v1::LaunchPlan plan = Parse(
      "//@launch a<<<1, 1>>>()\n"
      "/// @launch b<<<1,1>>>() ;\n"
      "int x; // @launch c<<< 2 , 3 , 0 >>> ( n )\n"
      "// @launches are not directives\n"
      "// @param x doxygen is not a directive\n"
      "// @launch_bounds neither\n");
  ASSERT_EQ(plan.launches_size(), 3);
  EXPECT_EQ(plan.launches(0).kernel(), "a");
  EXPECT_EQ(plan.launches(0).args_size(), 0);
  EXPECT_EQ(plan.launches(1).kernel(), "b");
  EXPECT_EQ(plan.launches(1).source_line(), 2u);
  EXPECT_EQ(plan.launches(2).kernel(), "c");
  EXPECT_EQ(plan.launches(2).grid().x(), "2");
  EXPECT_EQ(plan.launches(2).block().x(), "3");
  EXPECT_EQ(plan.launches(2).shared_mem_bytes(), "0");
  EXPECT_THAT(plan.launches(2).args(), ElementsAre("n"));
}

TEST(DirectivesTest, Dim3Forms) {
  const v1::LaunchPlan plan = Parse(
      "// @launch k<<<dim3{G, 2}, dim3 (16, 16, 2)>>>(a)\n"
      "// @launch k<<<dim3(), dim3(min(N, 1024))>>>(a)\n"
      "// @launch k<<<(N + 255) / 256, 256>>>(a, (N), ceil_div(N, 2))\n");
  ASSERT_EQ(plan.launches_size(), 3);
  EXPECT_EQ(plan.launches(0).grid().x(), "G");
  EXPECT_EQ(plan.launches(0).grid().y(), "2");
  EXPECT_EQ(plan.launches(0).block().z(), "2");
  EXPECT_EQ(plan.launches(1).grid().x(), "");  // dim3() is (1, 1, 1)
  EXPECT_EQ(plan.launches(1).block().x(), "min(N, 1024)");
  EXPECT_EQ(plan.launches(2).grid().x(), "(N + 255) / 256");
  EXPECT_THAT(plan.launches(2).args(), ElementsAre("a", "(N)", "ceil_div(N, 2)"));
}

// Comparisons and ?: inside <<<...>>> and the arguments: '<' and '>' there
// are operators, not the launch brackets.
TEST(DirectivesTest, ConditionalsInTheLaunch) {
  const v1::LaunchPlan plan = Parse(
      "// @launch k<<<N > 1024 ? ceil_div(N, 256) : 1, N < 256 ? N : 256>>>(a, N == 0 ? 1 : N)\n");
  ASSERT_EQ(plan.launches_size(), 1);
  EXPECT_EQ(plan.launches(0).grid().x(), "N > 1024 ? ceil_div(N, 256) : 1");
  EXPECT_EQ(plan.launches(0).block().x(), "N < 256 ? N : 256");
  EXPECT_THAT(plan.launches(0).args(), ElementsAre("a", "N == 0 ? 1 : N"));
}

TEST(DirectivesTest, QualifiedKernelName) {
  const v1::LaunchPlan plan = Parse("// @launch ops::k<<<1, 32>>>(x)\n");
  ASSERT_EQ(plan.launches_size(), 1);
  EXPECT_EQ(plan.launches(0).kernel(), "ops::k");
}

TEST(DirectivesTest, ScratchForms) {
  const v1::LaunchPlan plan = Parse(
      "// @scratch a: f64[N]\n"
      "// @scratch b : i32 [ROWS, COLS];\n"
      "// @scratch c: u8[2][ceil_div(N, 8)]\n"
      "// @scratch d: bool[1]\n");
  ASSERT_EQ(plan.scratch_size(), 4);
  EXPECT_EQ(plan.scratch(0).dtype(), v1::DTYPE_F64);
  EXPECT_EQ(plan.scratch(1).dtype(), v1::DTYPE_I32);
  EXPECT_THAT(plan.scratch(1).shape(), ElementsAre("ROWS", "COLS"));
  EXPECT_THAT(plan.scratch(2).shape(), ElementsAre("2", "ceil_div(N, 8)"));
  EXPECT_EQ(plan.scratch(3).dtype(), v1::DTYPE_BOOL);
  EXPECT_EQ(plan.scratch(3).source_line(), 4u);
}

TEST(DirectivesTest, AllDTypeNames) {
  const std::pair<std::string, v1::DType> cases[] = {
      {"f64", v1::DTYPE_F64},   {"f32", v1::DTYPE_F32}, {"f16", v1::DTYPE_F16},
      {"bf16", v1::DTYPE_BF16}, {"i64", v1::DTYPE_I64}, {"i32", v1::DTYPE_I32},
      {"i8", v1::DTYPE_I8},     {"u8", v1::DTYPE_U8},   {"bool", v1::DTYPE_BOOL}};
  for (const auto& [name, dtype] : cases) {
    const v1::LaunchPlan plan = Parse("// @scratch s: " + name + "[4]\n");
    ASSERT_EQ(plan.scratch_size(), 1) << name;
    EXPECT_EQ(plan.scratch(0).dtype(), dtype) << name;
  }
}

TEST(DirectivesTest, NoDirectivesGiveAnEmptyPlan) {
  const v1::LaunchPlan plan = Parse("__global__ void k(float* x) { x[0] = 1; }\n");
  EXPECT_EQ(plan.launches_size(), 0);
  EXPECT_EQ(plan.scratch_size(), 0);
  EXPECT_EQ(Parse("").launches_size(), 0);
}

// A template kernel's instance: its name expression, as NVRTC instantiates
// it and the CPU backend's launcher names it.
TEST(DirectivesTest, TemplateKernelsAreLaunchedWithTheirArguments) {
  const v1::LaunchPlan plan = Parse(
      "// @launch scale<256, float><<<ceil_div(N, 256), 256>>>(x, y, N)\n"
      "// @launch ops::tile<(8 > 4), kTile * 2, Vec<float, 4>> <<<1, dim3(32, 8)>>>(y)\n"
      "// @launch plain<<<1, 1>>>(y)\n"
      "// @launch split<1024 / 4, 7 % 3><<<1, 1>>>(y)\n");
  ASSERT_EQ(plan.launches_size(), 4);
  EXPECT_EQ(plan.launches(3).kernel(), "split<1024 / 4, 7 % 3>");
  EXPECT_EQ(plan.launches(0).kernel(), "scale<256, float>");
  EXPECT_EQ(plan.launches(0).grid().x(), "ceil_div(N, 256)");
  EXPECT_THAT(plan.launches(0).args(), ElementsAre("x", "y", "N"));
  // '>' inside parentheses does not close the list; '>>' closes two.
  EXPECT_EQ(plan.launches(1).kernel(), "ops::tile<(8 > 4), kTile * 2, Vec<float, 4>>");
  EXPECT_EQ(plan.launches(1).block().y(), "8");
  EXPECT_EQ(plan.launches(2).kernel(), "plain");
}

TEST(DirectivesTest, CrLfLineEndings) {
  const v1::LaunchPlan plan = Parse("// x\r\n// @launch k<<<1, 1>>>(a)\r\n");
  ASSERT_EQ(plan.launches_size(), 1);
  EXPECT_EQ(plan.launches(0).source_line(), 2u);
  EXPECT_THAT(plan.launches(0).args(), ElementsAre("a"));
}

TEST(DirectivesTest, LaunchErrorsNameTheLine) {
  EXPECT_EQ(ParseError("int x;\n\n// @launch k(a, b)\n"),
            "line 3: @launch: expected '<<<' after the kernel name: the launch configuration "
            "<<<grid, block[, shared_bytes]>>> is required");
  EXPECT_EQ(ParseError("// @launch k<<1, 1>>(a)\n"),
            "line 1: @launch: expected '<<<' after the kernel name, found '<<1, 1>>(a)'");
  EXPECT_EQ(ParseError("// @launch k<float; int><<<1, 1>>>(a)\n"),
            "line 1: @launch: expected template arguments closed by '>' after 'k' (identifiers, "
            "numbers and `: < > , ( ) * + - & / %`), found '<float; int><<<1, 1>>>(a)'");
  EXPECT_THAT(ParseError("// @launch k<8 // 2><<<1, 1>>>(a)\n"),
              StartsWith("line 1: @launch: expected template arguments closed by '>' after 'k'"));
  EXPECT_THAT(ParseError("// @launch k<float<<<1, 1>>>(a)\n"),
              StartsWith("line 1: @launch: expected template arguments closed by '>' after 'k'"));
  EXPECT_EQ(ParseError("// @launch k<float>(a)\n"),
            "line 1: @launch: expected '<<<' after the kernel name: the launch configuration "
            "<<<grid, block[, shared_bytes]>>> is required");
  EXPECT_EQ(ParseError("// @launch k x\n"),
            "line 1: @launch: expected '<<<' after the kernel name");
  EXPECT_EQ(ParseError("// @launch\n"), "line 1: @launch: expected a kernel name");
  EXPECT_EQ(ParseError("// @launch <<<1, 1>>>()\n"),
            "line 1: @launch: expected a kernel name, found '<<<1, 1>>>()'");
  EXPECT_EQ(ParseError("// @launch k<<<1, 1(a)\n"),
            "line 1: @launch: expected '>>>' closing the launch configuration");
  EXPECT_EQ(ParseError("// @launch k<<<1, 1, 0, stream>>>(a)\n"),
            "line 1: @launch: a stream argument is not allowed: the harness owns the stream");
  EXPECT_EQ(ParseError("// @launch k<<<1>>>(a)\n"),
            "line 1: @launch: the launch configuration is <<<grid, block[, shared_bytes]>>>, "
            "found 1 value");
  EXPECT_EQ(ParseError("// @launch k<<<1, 1>>> a\n"),
            "line 1: @launch: expected '(' and the kernel's arguments after '>>>'");
  EXPECT_THAT(ParseError("// @launch k<<<1, 1>>>(a, min(b, c)\n"),
              StartsWith("line 1: @launch: expected ')' closing the argument list"));
  EXPECT_EQ(ParseError("// @launch k<<<1, 1>>>(a) b\n"),
            "line 1: @launch: unexpected text after the argument list: 'b'");
  EXPECT_EQ(ParseError("// @launch k<<<1, 1>>>(a, , b)\n"), "line 1: @launch: argument 2 is empty");
  EXPECT_THAT(ParseError("// @launch k<<<ceil_div(N,), 1>>>(a)\n"),
              StartsWith("line 1: @launch: grid: expression \"ceil_div(N,)\": unexpected ')'"));
  EXPECT_THAT(ParseError("// @launch k<<<1, dim3(1, 2 +)>>>(a)\n"),
              StartsWith("line 1: @launch: block.y: expression \"2 +\""));
  EXPECT_EQ(ParseError("// @launch k<<<dim3(1, 2, 3, 4), 1>>>(a)\n"),
            "line 1: @launch: grid: dim3 takes at most 3 values, found 4");
  EXPECT_EQ(ParseError("// @launch k<<<dim3(4) * 2, 1>>>(a)\n"),
            "line 1: @launch: grid: dim3(...) must be the whole grid, found '* 2' after it");
  EXPECT_EQ(ParseError("// @launch k<<<dim3 4, 1>>>(a)\n"),
            "line 1: @launch: grid: expected '(' after dim3");
  EXPECT_THAT(ParseError("// @launch k<<<1, 1, 4 * sizeof(Foo)>>>(a)\n"),
              StartsWith("line 1: @launch: shared memory bytes: expression \"4 * sizeof(Foo)\": "
                         "unknown type 'Foo'"));
  EXPECT_THAT(ParseError("// @launch k<<<1, 1>>>(a, x.y)\n"),
              StartsWith("line 1: @launch: argument 2: expression \"x.y\": unexpected '.'"));
  EXPECT_THAT(ParseError("// @launch k<<<1, 1>>>(a, b))\n"),
              StartsWith("line 1: @launch: unexpected text after the argument list: ')'"));
  EXPECT_THAT(ParseError("// @launch k<<<(1, 1>>>(a)\n"),
              StartsWith("line 1: @launch: launch configuration: missing ')'"));
}

TEST(DirectivesTest, ScratchErrorsNameTheLine) {
  EXPECT_EQ(ParseError("// @scratch\n"),
            "line 1: @scratch: expected a buffer name, e.g. '@scratch partial: f32[N]'");
  EXPECT_EQ(ParseError("\n// @scratch p f32[N]\n"),
            "line 2: @scratch: expected ':' after the buffer name");
  EXPECT_EQ(ParseError("// @scratch p: float[N]\n"),
            "line 1: @scratch: unknown dtype 'float' (dtypes: f64, f32, f16, bf16, i64, i32, i8, "
            "u8, bool)");
  EXPECT_EQ(
      ParseError("// @scratch p: [N]\n"),
      "line 1: @scratch: missing dtype (dtypes: f64, f32, f16, bf16, i64, i32, i8, u8, bool)");
  EXPECT_EQ(ParseError("// @scratch p: f32\n"),
            "line 1: @scratch: expected '[' and the shape after the dtype, e.g. f32[N]");
  EXPECT_EQ(ParseError("// @scratch p: f32[]\n"),
            "line 1: @scratch: the shape needs at least one dimension");
  EXPECT_EQ(ParseError("// @scratch p: f32[N\n"),
            "line 1: @scratch: expected ']' closing the shape");
  EXPECT_EQ(ParseError("// @scratch p: f32[N, ]\n"), "line 1: @scratch: dimension 2 is empty");
  EXPECT_EQ(ParseError("// @scratch p: f32[N] extra\n"),
            "line 1: @scratch: unexpected text after the shape: 'extra'");
  EXPECT_EQ(ParseError("// @scratch tmp: bf16[ROWS][COLS]   trailing words\n"),
            "line 1: @scratch: unexpected text after the shape: 'trailing words'");
  EXPECT_EQ(ParseError("// @scratch p: f32[N]\n//\n// @scratch p: i32[N]\n"),
            "line 3: @scratch: buffer 'p' is already declared at line 1");
}

TEST(DirectivesTest, TheFirstBadDirectiveIsReported) {
  EXPECT_THAT(ParseError("// @launch ok<<<1, 1>>>()\n// @launch bad\n// @launch worse(\n"),
              StartsWith("line 2: "));
}

TEST(DirectivesTest, TooManyDirectives) {
  std::string source;
  for (int i = 0; i <= kMaxDirectives; ++i) {
    source += "// @launch k<<<1, 1>>>(a)\n";
  }
  EXPECT_EQ(ParseError(source), "line 257: more than 256 directives");
}

TEST(DirectivesTest, MessagesArePrintable) {
  const std::string message = ParseError(std::string("// @launch k<<<1, 1>>>(a) \x01\xfe\n"));
  for (char c : message) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << message;
  }
}

}  // namespace
}  // namespace kerneleval::plan
