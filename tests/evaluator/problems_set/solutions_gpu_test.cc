// Solutions on a real GPU (ctest label "gpu"; skipped without a CUDA
// device): every solution of every problem, solutions/gpu_only/ included
// (tensor-core kernels the CPU backend cannot run), evaluated on the CUDA
// backend with the same expectations as solutions_test.
//
// Built a second time as problems_solutions_fake_driver_test
// (KERNELEVAL_TEST_FAKE_DRIVER, not labelled gpu): the CUDA backend on the
// test driver tests/support/fake_cuda, every program rebuilt as a host module.
// There the correctness verdicts are checked (timing at the GPU's timed
// shapes would take the host hours) and solutions/gpu_only/ is left out (the
// host cannot run tensor-core code).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "evaluator/engine/engine.h"
#include "evaluator/problems/problems.h"
#include "tests/evaluator/problems_set/solutions.h"
#include "tests/support/fake_cuda/fake_driver_build.h"

namespace kerneleval::problems_set {
namespace {

using fake_cuda::kFakeDriver;

// The problems the engine loads: $KERNELEVAL_PROBLEMS_DIR (a GPU-check
// bundle sets it), else the source tree's.
std::string TestProblemsDir() { return problems::DefaultProblemsDir().string(); }

class SolutionsGpuTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    EngineOptions options;
    options.problems_dir = TestProblemsDir();
    options.enable_cuda = true;
    options.enable_cpu = false;
    options.reward_mode = "speedup";
    options.partial_credit = false;
#ifdef KERNELEVAL_TEST_FAKE_DRIVER
    kerneleval::fake_cuda::UseFakeDriver(&options);
#endif
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
  // The test driver is always there: not starting on it is a failure.
  if ((engine_ == nullptr || !has_gpu_) && kFakeDriver) FAIL() << "no engine on the test driver";
  if (engine_ == nullptr || !has_gpu_) GTEST_SKIP() << "no CUDA device";
  const std::filesystem::path folder =
      std::filesystem::path(TestProblemsDir()) / GetParam() / "solutions";
  std::vector<Solution> solutions = LoadSolutions(folder);
  for (Solution& s : kFakeDriver ? std::vector<Solution>() : LoadSolutions(folder / "gpu_only")) {
    s.file = "gpu_only/" + s.file;
    solutions.push_back(std::move(s));
  }
  v1::EvaluateGroupRequest request;
  request.set_problem_id(GetParam());
  request.set_backend(v1::BACKEND_CUDA);
  request.set_seed(2024);
  request.set_skip_timing(kFakeDriver);
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
