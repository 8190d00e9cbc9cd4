// Solutions on a real GPU (ctest label "gpu"; skipped without a CUDA
// device): every solution of every problem, solutions/gpu_only/ included
// (tensor-core kernels the CPU backend cannot run), evaluated on the CUDA
// backend with the same expectations as solutions_test.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "evaluator/engine/engine.h"
#include "tests/evaluator/problems_set/solutions.h"

namespace kerneleval::problems_set {
namespace {

// The problems: $KERNELEVAL_PROBLEMS_DIR (a GPU-check bundle sets it), else
// the source tree's.
std::string TestProblemsDir() {
  const char* env = std::getenv("KERNELEVAL_PROBLEMS_DIR");
  return env != nullptr && *env != '\0' ? std::string(env)
                                        : std::string(KERNELEVAL_TEST_PROBLEMS_DIR);
}

class SolutionsGpuTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    EngineOptions options;
    options.problems_dir = TestProblemsDir();
    options.enable_cuda = true;
    options.enable_cpu = false;
    options.reward_mode = "speedup";
    options.partial_credit = false;
    auto engine = Engine::Create(options);
    if (!engine.ok()) return;  // no backend at all: every test skips
    engine_ = engine->release();
    // Keep the response alive: looping over a temporary's field would dangle.
    const v1::ListDevicesResponse devices = engine_->ListDevices();
    for (const auto& device : devices.devices()) {
      has_gpu_ |= device.backend() == "cuda";
    }
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }
  static inline Engine* engine_ = nullptr;
  static inline bool has_gpu_ = false;
};

TEST_P(SolutionsGpuTest, EverySolutionMeetsItsExpectationOnTheGpu) {
  if (engine_ == nullptr || !has_gpu_) GTEST_SKIP() << "no CUDA device";
  const std::filesystem::path folder =
      std::filesystem::path(TestProblemsDir()) / GetParam() / "solutions";
  std::vector<Solution> solutions = LoadSolutions(folder);
  for (Solution& s : LoadSolutions(folder / "gpu_only")) {
    s.file = "gpu_only/" + s.file;
    solutions.push_back(std::move(s));
  }
  v1::EvaluateGroupRequest request;
  request.set_problem_id(GetParam());
  request.set_backend(v1::BACKEND_CUDA);
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
    } else {
      EXPECT_FALSE(verdict.correct());
      EXPECT_EQ(verdict.stage(), solutions[i].expect);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Problems, SolutionsGpuTest,
                         ::testing::ValuesIn(ProblemsWithSolutions(TestProblemsDir())),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace kerneleval::problems_set
