// ValidateProblem rejects each kind of broken problem (custom problems arrive
// over the wire, so every check here is a guard the server relies on).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "evaluator/problems/problems.h"

namespace kerneleval::problems {
namespace {

// A small valid problem: y[r] = sum of x[r, :] with a reference kernel.
v1::Problem ValidProblem() {
  absl::StatusOr<v1::Problem> problem = ParseProblemText(R"pb(
    id: "tiny_sum"
    title: "Tiny row sum"
    description: "y[r] = sum_c x[r, c]"
    parameters { name: "R" description: "rows" }
    parameters { name: "C" description: "columns" }
    inputs {
      name: "x"
      dtype: DTYPE_F32
      shape: [ "R", "C" ]
      distribution { pareto { scale: 1 alpha: 2 } }
    }
    outputs {
      name: "y"
      dtype: DTYPE_F32
      shape: "R"
      tolerance { rtol: 1e-4 }
    }
    flops: "R * C"
    compute_type: COMPUTE_TYPE_FP32
    timed_shape {
      label: "timed"
      values { key: "R" value: 4096 }
      values { key: "C" value: 4096 }
    }
    cpu_timed_shape {
      label: "cpu"
      values { key: "R" value: 64 }
      values { key: "C" value: 64 }
    }
    correctness_shapes {
      label: "odd"
      values { key: "R" value: 3 }
      values { key: "C" value: 7 }
    }
    correctness_shapes {
      label: "one"
      values { key: "R" value: 1 }
      values { key: "C" value: 1 }
    }
    reference_plan {
      launches {
        kernel: "sum_kernel"
        grid { x: "R" }
        block { x: "32" }
        args: [ "x", "y", "R", "C" ]
      }
    }
    reference_source: "__global__ void sum_kernel(const float* x, float* y, int rows, int cols) {\n"
                      "  float s = 0;\n"
                      "  for (int c = threadIdx.x; c < cols; c += 32) s += x[blockIdx.x * cols + c];\n"
                      "  for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);\n"
                      "  if (threadIdx.x == 0) y[blockIdx.x] = s;\n"
                      "}\n"
  )pb");
  EXPECT_TRUE(problem.ok()) << problem.status();
  return *problem;
}

TEST(ValidateTest, TheBaseProblemIsValid) {
  const absl::Status status = ValidateProblem(ValidProblem());
  EXPECT_TRUE(status.ok()) << status;
}

struct BrokenCase {
  const char* name;
  std::function<void(v1::Problem&)> breaks;
  const char* message;  // a fragment of the error
};

class ValidateRejects : public ::testing::TestWithParam<BrokenCase> {};

TEST_P(ValidateRejects, WithAClearMessage) {
  v1::Problem problem = ValidProblem();
  GetParam().breaks(problem);
  const absl::Status status = ValidateProblem(problem);
  ASSERT_FALSE(status.ok()) << GetParam().name;
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(GetParam().message), std::string::npos)
      << GetParam().name << ": " << status;
}

const BrokenCase kBrokenCases[] = {
    {"empty_id", [](v1::Problem& p) { p.clear_id(); }, "id must be"},
    {"id_with_slash", [](v1::Problem& p) { p.set_id("../etc"); }, "id must be"},
    {"id_too_long", [](v1::Problem& p) { p.set_id(std::string(65, 'a')); }, "id must be"},
    {"no_outputs", [](v1::Problem& p) { p.clear_outputs(); }, "no outputs"},
    {"input_dtype_unset", [](v1::Problem& p) { p.mutable_inputs(0)->clear_dtype(); },
     "input 'x': dtype is not set"},
    {"output_dtype_unset", [](v1::Problem& p) { p.mutable_outputs(0)->clear_dtype(); },
     "output 'y': dtype is not set"},
    {"duplicate_input_output", [](v1::Problem& p) { p.mutable_outputs(0)->set_name("x"); },
     "name 'x' is used twice"},
    {"parameter_named_like_input", [](v1::Problem& p) { p.mutable_inputs(0)->set_name("R"); },
     "name 'R' is used twice"},
    {"duplicate_parameter", [](v1::Problem& p) { p.add_parameters()->set_name("C"); },
     "name 'C' is used twice"},
    {"name_not_identifier", [](v1::Problem& p) { p.mutable_outputs(0)->set_name("y-1"); },
     "not an identifier"},
    {"reserved_name", [](v1::Problem& p) { p.mutable_parameters(0)->set_name("min"); }, "reserved"},
    {"unknown_name_in_shape", [](v1::Problem& p) { p.mutable_inputs(0)->set_shape(1, "COLS"); },
     "COLS"},
    {"bad_shape_syntax", [](v1::Problem& p) { p.mutable_inputs(0)->set_shape(1, "C +"); },
     "input 'x' dimension 1"},
    {"dimension_zero", [](v1::Problem& p) { p.mutable_inputs(0)->set_shape(1, "C - 7"); },
     "every dimension must be >= 1"},
    {"negative_dimension", [](v1::Problem& p) { p.mutable_inputs(0)->set_shape(1, "C - 100"); },
     "dimension 1 (C - 100) is -"},
    {"missing_parameter_value",
     [](v1::Problem& p) { p.mutable_correctness_shapes(1)->mutable_values()->erase("C"); },
     "correctness shape 'one': no value for parameter 'C'"},
    {"extra_binding_key",
     [](v1::Problem& p) { (*p.mutable_timed_shape()->mutable_values())["Z"] = 1; },
     "'Z' is not a parameter"},
    {"timed_shape_missing", [](v1::Problem& p) { p.clear_timed_shape(); },
     "timed_shape: no value for parameter"},
    {"cpu_timed_shape_broken",
     [](v1::Problem& p) { (*p.mutable_cpu_timed_shape()->mutable_values())["R"] = 0; },
     "cpu_timed_shape 'cpu'"},
    {"no_correctness_shapes", [](v1::Problem& p) { p.clear_correctness_shapes(); },
     "no correctness shapes"},
    {"duplicate_labels", [](v1::Problem& p) { p.mutable_correctness_shapes(1)->set_label("odd"); },
     "label 'odd' is used twice"},
    {"unlabeled_shape", [](v1::Problem& p) { p.mutable_correctness_shapes(0)->clear_label(); },
     "has no label"},
    {"flops_empty", [](v1::Problem& p) { p.clear_flops(); }, "flops expression is empty"},
    {"flops_unknown_name", [](v1::Problem& p) { p.set_flops("R * Q"); }, "flops"},
    {"flops_negative", [](v1::Problem& p) { p.set_flops("0 - R"); }, "flops is negative"},
    {"flops_overflow", [](v1::Problem& p) { p.set_flops("R * R * R * R * R * R"); }, "flops"},
    {"bytes_bad", [](v1::Problem& p) { p.set_bytes("R *"); }, "bytes"},
    {"negative_atol",
     [](v1::Problem& p) { p.mutable_outputs(0)->mutable_tolerance()->set_atol(-1e-5); },
     "tolerance atol must be finite and >= 0"},
    {"nan_rtol",
     [](v1::Problem& p) { p.mutable_outputs(0)->mutable_tolerance()->set_rtol(std::nan("")); },
     "tolerance rtol"},
    {"input_with_tolerance",
     [](v1::Problem& p) { p.mutable_inputs(0)->mutable_tolerance()->set_atol(1); },
     "applies to outputs only"},
    {"output_with_distribution",
     [](v1::Problem& p) { p.mutable_outputs(0)->mutable_distribution()->mutable_normal(); },
     "applies to inputs only"},
    {"bad_distribution",
     [](v1::Problem& p) {
       p.mutable_inputs(0)->mutable_distribution()->mutable_pareto()->set_alpha(0);
     },
     "alpha"},
    {"shape_distribution_of_an_unknown_input",
     [](v1::Problem& p) {
       (*p.mutable_correctness_shapes(0)->mutable_input_distributions())["z"].mutable_normal();
     },
     "correctness shape 'odd': input_distributions names 'z', which is not an input"},
    {"bad_shape_distribution",
     [](v1::Problem& p) {
       (*p.mutable_correctness_shapes(0)->mutable_input_distributions())["x"]
           .mutable_pareto()
           ->set_alpha(0);
     },
     "input_distributions['x']: pareto distribution needs"},
    {"no_reference_plan", [](v1::Problem& p) { p.clear_reference_plan(); },
     "reference_plan has no launches"},
    {"no_reference_source", [](v1::Problem& p) { p.clear_reference_source(); },
     "reference_source is empty"},
    {"plan_unknown_kernel",
     [](v1::Problem& p) { p.mutable_reference_plan()->mutable_launches(0)->set_kernel("nope"); },
     "reference_plan"},
    {"plan_unknown_argument",
     [](v1::Problem& p) { p.mutable_reference_plan()->mutable_launches(0)->set_args(1, "z"); },
     "reference_plan"},
    {"plan_too_few_arguments",
     [](v1::Problem& p) {
       p.mutable_reference_plan()->mutable_launches(0)->mutable_args()->RemoveLast();
     },
     "reference_plan"},
    {"plan_block_too_big",
     [](v1::Problem& p) {
       p.mutable_reference_plan()->mutable_launches(0)->mutable_block()->set_x("2048");
     },
     "reference_plan"},
    {"too_many_trials", [](v1::Problem& p) { p.set_correctness_trials(1000); },
     "correctness_trials"},
};

INSTANTIATE_TEST_SUITE_P(BrokenProblems, ValidateRejects, ::testing::ValuesIn(kBrokenCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ValidateTest, ErrorsNameTheProblem) {
  v1::Problem problem = ValidProblem();
  problem.clear_outputs();
  EXPECT_NE(ValidateProblem(problem).message().find("problem 'tiny_sum'"), std::string::npos);
}

TEST(ValidateTest, OptionalPartsMayBeAbsent) {
  v1::Problem problem = ValidProblem();
  problem.clear_cpu_timed_shape();
  problem.clear_title();
  problem.clear_description();
  problem.mutable_outputs(0)->clear_tolerance();
  problem.mutable_inputs(0)->clear_distribution();
  EXPECT_TRUE(ValidateProblem(problem).ok()) << ValidateProblem(problem);
}

TEST(ValidateTest, ParseProblemTextReportsLine) {
  absl::StatusOr<v1::Problem> bad = ParseProblemText("id: \"a\"\ninputs { name: 3 }\n", "x.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("x.txt: line 2"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace kerneleval::problems

namespace kerneleval::problems {
namespace {

// A custom problem may carry its plan as directives in its source.
TEST(CompleteReferencePlanTest, FillsAnEmptyPlanFromDirectives) {
  v1::Problem problem = ValidProblem();
  problem.clear_reference_plan();
  EXPECT_FALSE(ValidateProblem(problem).ok());
  problem.set_reference_source(
      "// @scratch unused: f32[R]\n"
      "// @launch sum_kernel<<<R, 32>>>(x, y, R, C)\n" +
      problem.reference_source());
  ASSERT_TRUE(CompleteReferencePlan(problem).ok());
  ASSERT_EQ(problem.reference_plan().launches_size(), 1);
  EXPECT_EQ(problem.reference_plan().launches(0).kernel(), "sum_kernel");
  EXPECT_EQ(problem.reference_plan().scratch_size(), 1);
  EXPECT_TRUE(ValidateProblem(problem).ok()) << ValidateProblem(problem);

  // A plan that is already there is left alone.
  const v1::LaunchPlan before = problem.reference_plan();
  ASSERT_TRUE(CompleteReferencePlan(problem).ok());
  EXPECT_EQ(problem.reference_plan().launches_size(), before.launches_size());

  v1::Problem broken = ValidProblem();
  broken.clear_reference_plan();
  broken.set_reference_source("// @launch sum_kernel(x)\n" + broken.reference_source());
  const absl::Status status = CompleteReferencePlan(broken);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("line 1"), std::string::npos) << status;
}

}  // namespace
}  // namespace kerneleval::problems
