// Solutions as tests: every problems/<id>/solutions/*.cu evaluated through
// the engine on the CPU backend. correct_* must pass (stage "passed", a
// positive reward); wrong_* must fail at the stage its first line names
// ("// expect: correctness", "// expect: runtime", ...) with reward 0. One
// EvaluateGroup per problem: one reference run, timing on the CPU timed shape
// (so the outputs of timed runs are checked too). solutions/gpu_only/ holds
// kernels the CPU backend cannot run (tensor cores): solutions_gpu_test.
#include "tests/evaluator/problems_set/solutions.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "evaluator/engine/engine.h"

namespace kerneleval::problems_set {
namespace {

class SolutionsTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    EngineOptions options;
    options.problems_dir = KERNELEVAL_TEST_PROBLEMS_DIR;
    options.enable_cuda = false;
    options.compile_workers = 2;
    options.run_timeout_seconds = 30;
    options.reward_mode = "speedup";
    options.partial_credit = false;
    auto engine = Engine::Create(options);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = engine->release();
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }
  static inline Engine* engine_ = nullptr;
};

TEST(SolutionsLayoutTest, EveryProblemOfTheSetHasACorrectAndAWrongSolution) {
  for (const std::string& id : ProblemsWithSolutions(KERNELEVAL_TEST_PROBLEMS_DIR)) {
    const std::vector<Solution> solutions =
        LoadSolutions(std::filesystem::path(KERNELEVAL_TEST_PROBLEMS_DIR) / id / "solutions");
    const auto correct = std::count_if(solutions.begin(), solutions.end(),
                                       [](const Solution& s) { return s.expect == "pass"; });
    EXPECT_GE(correct, 1) << id;
    EXPECT_GE(static_cast<long>(solutions.size()) - correct, 1) << id;
    for (const Solution& s : solutions) {
      EXPECT_FALSE(s.expect.empty())
          << id << "/" << s.file << ": first line must be // expect: STAGE";
      EXPECT_EQ(s.expect == "pass", s.file.rfind("correct_", 0) == 0) << id << "/" << s.file;
    }
  }
  for (const char* id : kSetProblems) {
    const auto with = ProblemsWithSolutions(KERNELEVAL_TEST_PROBLEMS_DIR);
    EXPECT_NE(std::find(with.begin(), with.end(), id), with.end()) << id << " has no solutions/";
  }
}

TEST_P(SolutionsTest, CorrectOnesPassAndWrongOnesFailAtTheirStage) {
  ASSERT_NE(engine_, nullptr);
  const std::vector<Solution> solutions =
      LoadSolutions(std::filesystem::path(KERNELEVAL_TEST_PROBLEMS_DIR) / GetParam() / "solutions");
  ASSERT_FALSE(solutions.empty());
  v1::EvaluateGroupRequest request;
  request.set_problem_id(GetParam());
  request.set_seed(2024);
  for (const Solution& s : solutions) request.add_submissions()->set_source(s.source);
  absl::StatusOr<v1::EvaluateGroupResponse> response = engine_->EvaluateGroup(request, {});
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->verdicts_size(), static_cast<int>(solutions.size()));
  for (size_t i = 0; i < solutions.size(); ++i) {
    const v1::Verdict& verdict = response->verdicts(static_cast<int>(i));
    SCOPED_TRACE(solutions[i].file + ": " + verdict.error());
    if (solutions[i].expect == "pass") {
      EXPECT_TRUE(verdict.correct());
      EXPECT_EQ(verdict.stage(), "passed");
      EXPECT_GT(verdict.reward(), 0.0);
    } else {
      EXPECT_FALSE(verdict.correct());
      EXPECT_EQ(verdict.stage(), solutions[i].expect);
      EXPECT_EQ(verdict.reward(), 0.0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Problems, SolutionsTest,
                         ::testing::ValuesIn(ProblemsWithSolutions(KERNELEVAL_TEST_PROBLEMS_DIR)),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace kerneleval::problems_set
