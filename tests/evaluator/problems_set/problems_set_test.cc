// The built-in problem set (problems/): every problem loads and is complete,
// its correctness shapes fit the CPU emulation, and
//   - its CUDA reference, run for real through the CPU backend on every
//     correctness shape, matches an independent float64 computation rounded
//     to the output dtype, under the problem's own tolerance;
//   - an all-zero output fails every correctness shape (float64 expectation,
//     three seeds as the evaluator's three trials);
//   - the exact result rounded to fp16 fails every fp32 problem (the
//     tolerances are tight enough to catch an fp32 problem computed in fp16);
//   - a constant output, an input copied to the output and another trial's
//     exact answer fail too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "evaluator/cpu/cpu_backend.h"
#include "evaluator/data/compare.h"
#include "evaluator/data/dtype.h"
#include "evaluator/plan/binding.h"
#include "evaluator/plan/signature.h"
#include "evaluator/problems/problems.h"
#include "tests/evaluator/problems_set/float64_reference.h"
#include "tests/evaluator/problems_set/solutions.h"

namespace kerneleval::problems_set {
namespace {

using problems::ProblemRegistry;
using problems::ShapeParams;

constexpr uint64_t kSeeds[] = {11, 12, 13};
// One-element shapes whose single output can legitimately be 0 (or tiny)
// get more trials: relu of one element is 0 half the time. The problem's
// other shapes catch a zero kernel anyway.
constexpr uint64_t kSingleElementSeeds[] = {11, 12, 13, 14, 15, 16, 17, 18};

// Shapes where fp16 rounding of the exact result provably stays within the
// tolerance, so the fp16 check cannot apply there (the problem's other shapes
// catch it). GEMM-like outputs with a reduction length K of 1 or 3 are O(1),
// below atol 5e-4 / 4.9e-4 in half an fp16 ulp; atol 5e-4 is needed for the
// honest reorderings at K = 4096.
bool Fp16Exempt(const std::string& problem, const std::string& shape,
                const plan::ParamMap& params) {
  if (params.count("K") && params.at("K") == 1) return true;
  return problem == "matvec" && shape == "narrow";  // K = 3
}

const ProblemRegistry& Registry() {
  static const ProblemRegistry* registry = [] {
    absl::StatusOr<ProblemRegistry> loaded =
        ProblemRegistry::LoadFromDirectory(KERNELEVAL_TEST_PROBLEMS_DIR);
    if (!loaded.ok()) {
      ADD_FAILURE() << loaded.status();
      return new ProblemRegistry();
    }
    return new ProblemRegistry(*std::move(loaded));
  }();
  return *registry;
}

std::vector<std::string> AllProblemIds() {
  std::vector<std::string> ids;
  for (const v1::Problem* problem : Registry().List()) ids.push_back(problem->id());
  return ids;
}

internal::Tensor ToTensor(const v1::TensorSpec& spec, const std::vector<double>& values,
                          v1::DType round_through = v1::DTYPE_UNSPECIFIED) {
  internal::Tensor tensor;
  tensor.set_name(spec.name());
  tensor.set_dtype(spec.dtype());
  tensor.set_elements(values.size());
  std::string bytes(values.size() * data::DTypeSize(spec.dtype()), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const double v = round_through == v1::DTYPE_UNSPECIFIED
                         ? values[i]
                         : data::RoundToDType(values[i], round_through);
    data::WriteElement(bytes.data(), spec.dtype(), i, v);
  }
  tensor.set_data(std::move(bytes));
  return tensor;
}

// The check the evaluator makes, for one output.
v1::OutputCheck Check(const v1::TensorSpec& spec, const plan::ParamMap& params,
                      const internal::Tensor& expected, const internal::Tensor& got) {
  const data::ToleranceValues tolerance = data::ResolveTolerance(spec.dtype(), spec.tolerance());
  return data::CompareTensor(expected, got, *problems::EvalShape(spec, params), tolerance.atol,
                             tolerance.rtol);
}

// Input elements plus flops: the work of one run, for sizing shapes.
double Work(const v1::Problem& problem, const plan::ParamMap& params) {
  double elements = 0;
  for (const auto& input : problem.inputs()) elements += *problems::ElementCount(input, params);
  return std::max(elements, *problems::EvalFlops(problem, params));
}

TEST(ProblemSetTest, LoadsAtLeastFortyProblemsIncludingTheWholeSet) {
  EXPECT_GE(Registry().size(), 40u);
  for (const char* id : kSetProblems) EXPECT_NE(Registry().Find(id), nullptr) << id;
  for (const char* id : {"vector_add", "relu", "softmax", "row_sum", "matmul", "layernorm"}) {
    EXPECT_NE(Registry().Find(id), nullptr) << id;
  }
}

TEST(ProblemSetTest, EveryProblemHasAFloat64Version) {
  for (const v1::Problem* problem : Registry().List()) {
    EXPECT_TRUE(Float64References().count(problem->id()))
        << problem->id() << ": add its float64 version to float64_reference.cc";
  }
}

TEST(ProblemSetTest, EveryProblemIsCompleteAndSizedForItsBackends) {
  for (const v1::Problem* problem : Registry().List()) {
    SCOPED_TRACE(problem->id());
    EXPECT_TRUE(problems::ValidateProblem(*problem).ok()) << problems::ValidateProblem(*problem);
    EXPECT_FALSE(problem->title().empty());
    EXPECT_GT(problem->description().size(), 200u);
    EXPECT_NE(problem->compute_type(), v1::COMPUTE_TYPE_UNSPECIFIED);
    EXPECT_FALSE(problem->flops().empty());
    EXPECT_FALSE(problem->tags().empty());
    EXPECT_NE(problem->reference_source().find("__global__"), std::string::npos);
    // Plain CUDA only: no PTX, tensor cores or libraries in a reference, which
    // every backend (and emulation) must run alike.
    for (const char* forbidden : {"asm(", "asm volatile", "wmma::", "cub::", "<mma.h>"}) {
      EXPECT_EQ(problem->reference_source().find(forbidden), std::string::npos) << forbidden;
    }
    EXPECT_GE(problem->correctness_shapes_size(), 2);
    EXPECT_LE(problem->correctness_shapes_size(), 4);
    for (const auto& parameter : problem->parameters()) {
      EXPECT_FALSE(parameter.description().empty()) << parameter.name();
    }
    for (const auto& shape : problem->correctness_shapes()) {
      const plan::ParamMap params = ShapeParams(shape);
      for (const auto& tensor : problem->inputs()) {
        EXPECT_LE(*problems::ElementCount(tensor, params), 300000u) << shape.label();
      }
      EXPECT_LE(*problems::EvalFlops(*problem, params), 2.1e6) << shape.label();
    }
    ASSERT_FALSE(problem->cpu_timed_shape().values().empty());
    const double cpu_work = Work(*problem, ShapeParams(problem->cpu_timed_shape()));
    EXPECT_GE(cpu_work, 1e5);
    EXPECT_LE(cpu_work, 5.3e6);
    EXPECT_GE(*problems::EvalBytes(*problem, ShapeParams(problem->timed_shape())),
              64.0 * (1 << 20));
  }
}

// A kernel writing zeros fails every correctness shape: in every trial when
// the shape has more than one output element, in at least one of the
// evaluator's trials otherwise. And the exact result rounded to fp16 fails
// every fp32 output (a precision downcast is caught), except where fp16
// rounding provably stays within tolerance (Fp16Exempt).
TEST(ProblemSetTest, ZerosAndFp16RoundedResultsFailEveryShape) {
  for (const v1::Problem* problem : Registry().List()) {
    auto f64 = Float64References().find(problem->id());
    if (f64 == Float64References().end()) continue;  // reported above
    for (const auto& shape : problem->correctness_shapes()) {
      SCOPED_TRACE(problem->id() + " / " + shape.label());
      const plan::ParamMap params = ShapeParams(shape);
      int zero_failures = 0;
      size_t output_elements = 0;
      uint64_t elements_per_output = 0;
      for (const auto& spec : problem->outputs()) {
        elements_per_output = std::max(elements_per_output, *problems::ElementCount(spec, params));
      }
      const std::vector<uint64_t> seeds =
          elements_per_output > 1 ? std::vector<uint64_t>(std::begin(kSeeds), std::end(kSeeds))
                                  : std::vector<uint64_t>(std::begin(kSingleElementSeeds),
                                                          std::end(kSingleElementSeeds));
      for (const uint64_t seed : seeds) {
        const Tensors exact = f64->second(GenerateInputs(*problem, shape, seed), params);
        bool zeros_fail = false;
        for (const auto& spec : problem->outputs()) {
          const std::vector<double>& values = exact.at(spec.name());
          output_elements = values.size();
          const internal::Tensor expected = ToTensor(spec, values);
          const internal::Tensor zeros = ToTensor(spec, std::vector<double>(values.size(), 0.0));
          zeros_fail |= !Check(spec, params, expected, zeros).passed();

          if (spec.dtype() != v1::DTYPE_F32) continue;
          const std::set<double> distinct(values.begin(), values.end());
          if (distinct.size() < 32 || Fp16Exempt(problem->id(), shape.label(), params)) continue;
          const v1::OutputCheck fp16 =
              Check(spec, params, expected, ToTensor(spec, values, v1::DTYPE_F16));
          EXPECT_FALSE(fp16.passed()) << spec.name() << " rounded to fp16 passes (seed " << seed
                                      << "): the tolerance cannot catch an fp16 computation";
        }
        zero_failures += zeros_fail;
        if (output_elements > 1) {
          EXPECT_TRUE(zeros_fail) << "zeros pass (seed " << seed << ")";
        }
      }
      EXPECT_GE(zero_failures, 1) << "zeros pass every trial";
    }
  }
}

// Other answers a kernel can give without doing the work fail, in every
// trial, on at least one correctness shape (a kernel is judged on all of
// them; on some shapes these are the right answer: a row sum over one column
// is its input, layernorm over one column is beta):
//   - a constant, the mean of the exact output (what a kernel that learned
//     the output's scale writes, e.g. 1/COLS for a long softmax);
//   - an input of the output's dtype copied through (an activation that
//     does nothing);
//   - the exact output for another trial's inputs (an answer remembered from
//     an earlier run, or computed from inputs the kernel made up); this one
//     also on every shape with more than one output element.
TEST(ProblemSetTest, ConstantsCopiedInputsAndOtherTrialsAnswersFail) {
  int answers_checked = 0;
  for (const v1::Problem* problem : Registry().List()) {
    auto f64 = Float64References().find(problem->id());
    if (f64 == Float64References().end()) continue;  // reported above
    for (size_t trial = 0; trial < std::size(kSeeds); ++trial) {
      const uint64_t seed = kSeeds[trial];
      const uint64_t other_seed = kSeeds[(trial + 1) % std::size(kSeeds)];
      // "constant y", "copy x to y": whether some shape failed it.
      std::map<std::string, bool> failed_somewhere;
      for (const auto& shape : problem->correctness_shapes()) {
        SCOPED_TRACE(absl::StrCat(problem->id(), " / ", shape.label(), " seed ", seed));
        const plan::ParamMap params = ShapeParams(shape);
        const Tensors inputs = GenerateInputs(*problem, shape, seed);
        const Tensors exact = f64->second(inputs, params);
        const Tensors other_trial =
            f64->second(GenerateInputs(*problem, shape, other_seed), params);
        for (const auto& spec : problem->outputs()) {
          const std::vector<double>& values = exact.at(spec.name());
          const internal::Tensor expected = ToTensor(spec, values);
          auto fails = [&](const std::vector<double>& answer) {
            ++answers_checked;
            return !Check(spec, params, expected, ToTensor(spec, answer)).passed();
          };
          double mean = 0;
          for (const double v : values) mean += v / static_cast<double>(values.size());
          if (!data::IsFloatingDType(spec.dtype())) mean = std::round(mean);
          if (values.size() > 1) {  // one element: its mean is the answer
            failed_somewhere["constant " + spec.name()] |=
                fails(std::vector<double>(values.size(), mean));
          }
          for (const auto& input : problem->inputs()) {
            if (input.dtype() != spec.dtype()) continue;
            // y[i] = x[i] for every i of y: where x is shorter, the rest of
            // y keeps its poison and fails.
            const std::vector<double>& input_values = inputs.at(input.name());
            const bool copy_fails =
                input_values.size() < values.size() ||
                fails(std::vector<double>(
                    input_values.begin(),
                    input_values.begin() + static_cast<ptrdiff_t>(values.size())));
            failed_somewhere["copy " + input.name() + " to " + spec.name()] |= copy_fails;
          }
          const bool other_trials_answer_fails = fails(other_trial.at(spec.name()));
          failed_somewhere["seed " + std::to_string(other_seed) + "'s " + spec.name()] |=
              other_trials_answer_fails;
          // One element can be the same for any input (softmax of one
          // element is 1).
          if (values.size() > 1) {
            EXPECT_TRUE(other_trials_answer_fails)
                << spec.name() << ": seed " << other_seed << "'s answer passes";
          }
        }
      }
      for (const auto& [answer, failed] : failed_somewhere) {
        EXPECT_TRUE(failed) << problem->id() << " seed " << seed << ": \"" << answer
                            << "\" passes every correctness shape";
      }
    }
  }
  EXPECT_GT(answers_checked, 500);  // the loops above ran
}

// Every reference kernel, compiled by the host compiler and run by the CPU
// backend exactly as the evaluator runs it, against the float64 version.
class ReferenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    cpu::CpuBackendOptions options;
    options.timeout_seconds = 120;
    auto backend = cpu::CpuBackend::Create(options);
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = backend->release();
  }
  static void TearDownTestSuite() {
    delete backend_;
    backend_ = nullptr;
  }
  static inline cpu::CpuBackend* backend_ = nullptr;
};

TEST_P(ReferenceTest, MatchesFloat64OnEveryCorrectnessShape) {
  ASSERT_NE(backend_, nullptr);
  const v1::Problem* problem = Registry().Find(GetParam());
  ASSERT_NE(problem, nullptr);
  auto f64 = Float64References().find(problem->id());
  ASSERT_NE(f64, Float64References().end()) << "no float64 version";
  absl::StatusOr<plan::ParsedSource> parsed = plan::ParseSource(problem->reference_source());
  ASSERT_TRUE(parsed.ok()) << parsed.status();

  // Two trials per shape, all in one run (one host compile).
  internal::RunRequest request;
  request.mutable_program()->set_label("reference");
  request.mutable_program()->set_source(problem->reference_source());
  request.set_timeout_seconds(120);
  std::vector<const v1::ShapeBinding*> shapes;  // of each case
  for (const auto& shape : problem->correctness_shapes()) {
    for (const uint64_t seed : {kSeeds[0], kSeeds[1]}) {
      const plan::ParamMap params = ShapeParams(shape);
      absl::StatusOr<internal::ResolvedPlan> plan =
          plan::ResolvePlan(problem->reference_plan(), *problem, params, *parsed);
      ASSERT_TRUE(plan.ok()) << shape.label() << ": " << plan.status();
      // The shape's own input distributions, as the engine's Resolve applies them.
      problems::ApplyInputDistributions(shape, &*plan);
      shapes.push_back(&shape);
      internal::Case* c = request.add_cases();
      c->set_label(absl::StrCat(shape.label(), "#", seed));
      *c->mutable_params() = shape.values();
      c->set_input_seed(seed);
      *c->mutable_plan() = *std::move(plan);
    }
  }
  absl::StatusOr<internal::RunResult> result = backend_->Run(request);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_FALSE(result->has_failure())
      << result->failure().stage() << ": " << result->failure().message() << " (case "
      << result->failure().case_label() << ")";
  ASSERT_EQ(result->cases_size(), request.cases_size());

  for (int i = 0; i < request.cases_size(); ++i) {
    const internal::Case& c = request.cases(i);
    SCOPED_TRACE(c.label());
    plan::ParamMap params;
    for (const auto& [name, value] : c.params()) params[name] = value;
    const Tensors exact = f64->second(
        GenerateInputs(*problem, *shapes[static_cast<size_t>(i)], c.input_seed()), params);
    EXPECT_TRUE(result->cases(i).modified_input().empty()) << result->cases(i).modified_input();
    for (const auto& spec : problem->outputs()) {
      const internal::Tensor* got = nullptr;
      for (const auto& t : result->cases(i).outputs()) {
        if (t.name() == spec.name()) got = &t;
      }
      ASSERT_NE(got, nullptr) << spec.name();
      const v1::OutputCheck check =
          Check(spec, params, ToTensor(spec, exact.at(spec.name())), *got);
      EXPECT_TRUE(check.passed()) << spec.name() << ": " << check.ShortDebugString();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllProblems, ReferenceTest, ::testing::ValuesIn(AllProblemIds()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace kerneleval::problems_set
