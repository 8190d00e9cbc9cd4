#include "evaluator/problems/describe.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "evaluator/plan/directives.h"
#include "evaluator/problems/problems.h"

namespace kerneleval::problems {
namespace {

class DescribeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<ProblemRegistry> registry =
        ProblemRegistry::LoadFromDirectory(KERNELEVAL_TEST_PROBLEMS_DIR);
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = *std::move(registry);
  }
  const v1::Problem& Get(const char* id) { return *registry_.Find(id); }
  // The problems of this task (problems/ holds others, tested with their files).
  std::vector<const v1::Problem*> Mine() {
    std::vector<const v1::Problem*> mine;
    for (const char* id : {"layernorm", "matmul", "relu", "row_sum", "softmax", "vector_add"}) {
      mine.push_back(registry_.Find(id));
      EXPECT_NE(mine.back(), nullptr) << id;
    }
    return mine;
  }
  ProblemRegistry registry_;
};

TEST_F(DescribeTest, Signatures) {
  EXPECT_EQ(Describe(Get("softmax")).signature,
            "inputs: x f32[ROWS, COLS]; outputs: y f32[ROWS, COLS]; parameters: ROWS, COLS");
  EXPECT_EQ(Describe(Get("layernorm")).signature,
            "inputs: x f32[ROWS, COLS], gamma f32[COLS], beta f32[COLS]; "
            "outputs: y f32[ROWS, COLS]; parameters: ROWS, COLS");
  EXPECT_EQ(Describe(Get("vector_add")).signature,
            "inputs: a f32[N], b f32[N]; outputs: c f32[N]; parameters: N");
}

TEST_F(DescribeTest, ExampleLaunchRenamesTheKernel) {
  EXPECT_EQ(Describe(Get("softmax")).example_launch,
            "// @launch my_kernel<<<ROWS, 256>>>(x, y, ROWS, COLS)");
  EXPECT_EQ(Describe(Get("matmul")).example_launch,
            "// @launch my_kernel<<<dim3(ceil_div(N, 64), ceil_div(M, 64)), 256>>>"
            "(A, B, C, M, N, K)");
  const ProblemDescription relu = Describe(Get("relu"));
  EXPECT_EQ(relu.example_kernel,
            "__global__ void my_kernel(const float * __restrict__ x, float * __restrict__ y, "
            "long long n)");
  // Nothing of the reference's own kernel name leaks.
  EXPECT_EQ(relu.prompt.find("relu_kernel"), std::string::npos);
}

// The example is a valid directive: parsing it gives back the reference plan
// (renamed).
TEST_F(DescribeTest, ExampleLaunchParsesBack) {
  for (const v1::Problem* problem : Mine()) {
    const ProblemDescription description = Describe(*problem);
    absl::StatusOr<v1::LaunchPlan> parsed = plan::ParseDirectives(description.example_launch);
    ASSERT_TRUE(parsed.ok()) << problem->id() << ": " << parsed.status();
    ASSERT_EQ(parsed->launches_size(), problem->reference_plan().launches_size());
    const v1::Launch& example = parsed->launches(0);
    const v1::Launch& reference = problem->reference_plan().launches(0);
    EXPECT_EQ(example.kernel(), "my_kernel");
    EXPECT_EQ(example.grid().x(), reference.grid().x()) << problem->id();
    EXPECT_EQ(example.grid().y(), reference.grid().y()) << problem->id();
    EXPECT_EQ(example.block().x(), reference.block().x()) << problem->id();
    EXPECT_EQ(std::vector<std::string>(example.args().begin(), example.args().end()),
              std::vector<std::string>(reference.args().begin(), reference.args().end()));
  }
}

TEST_F(DescribeTest, PromptHasEverythingNeeded) {
  for (const v1::Problem* problem : Mine()) {
    SCOPED_TRACE(problem->id());
    const ProblemDescription description = Describe(*problem);
    const std::string& prompt = description.prompt;
    EXPECT_NE(prompt.find(problem->title()), std::string::npos);
    EXPECT_NE(prompt.find(problem->description()), std::string::npos);
    EXPECT_NE(prompt.find(description.signature), std::string::npos);
    EXPECT_NE(prompt.find(description.example_launch), std::string::npos);
    EXPECT_NE(prompt.find("// @launch KERNEL<<<GRID, BLOCK"), std::string::npos);
    EXPECT_NE(prompt.find("@scratch"), std::string::npos);
    EXPECT_NE(prompt.find(FormatShape(*problem, problem->timed_shape())), std::string::npos);
    for (const auto& parameter : problem->parameters()) {
      EXPECT_NE(prompt.find("- " + parameter.name() + ": " + parameter.description()),
                std::string::npos);
    }
    // Correctness shapes are not revealed (they would invite special cases).
    for (const auto& shape : problem->correctness_shapes()) {
      const std::string text = FormatShape(*problem, shape);
      for (size_t at = prompt.find(text); at != std::string::npos; at = prompt.find(text, at + 1)) {
        const char next = at + text.size() < prompt.size() ? prompt[at + text.size()] : ' ';
        EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(next)))  // a prefix of a longer value
            << shape.label() << " is revealed";
      }
    }
  }
  const std::string softmax = Describe(Get("softmax")).prompt;
  EXPECT_NE(softmax.find("y: |got - expected| <= 1e-08 + 0.0001 * |expected|"), std::string::npos)
      << softmax;
  EXPECT_NE(softmax.find("Speed is measured at ROWS=4096, COLS=4096."), std::string::npos);
}

TEST_F(DescribeTest, SeveralKernelsAndScratch) {
  v1::Problem problem = Get("row_sum");
  problem.set_reference_source(
      "__global__ void partial_sums(const float* x, float* p, int rows, int cols) {}\n"
      "__global__ void finish(const float* p, float* y, int rows) {}\n");
  v1::LaunchPlan& plan = *problem.mutable_reference_plan();
  plan.clear_launches();
  auto* first = plan.add_launches();
  first->set_kernel("partial_sums");
  first->mutable_grid()->set_x("ROWS");
  first->mutable_grid()->set_y("8");
  first->mutable_block()->set_x("256");
  first->set_shared_mem_bytes("256 * sizeof(float)");
  for (const char* arg : {"x", "partial", "ROWS", "COLS"}) first->add_args(arg);
  auto* second = plan.add_launches();
  second->set_kernel("finish");
  second->mutable_grid()->set_x("ceil_div(ROWS, 256)");
  second->mutable_block()->set_x("256");
  for (const char* arg : {"partial", "y", "ROWS"}) second->add_args(arg);
  auto* scratch = plan.add_scratch();
  scratch->set_name("partial");
  scratch->set_dtype(v1::DTYPE_F32);
  scratch->add_shape("ROWS");
  scratch->add_shape("8");
  const ProblemDescription description = Describe(problem);
  EXPECT_EQ(description.example_launch,
            "// @scratch partial: f32[ROWS, 8]\n"
            "// @launch my_kernel<<<dim3(ROWS, 8), 256, 256 * sizeof(float)>>>"
            "(x, partial, ROWS, COLS)\n"
            "// @launch my_kernel_2<<<ceil_div(ROWS, 256), 256>>>(partial, y, ROWS)");
  EXPECT_EQ(description.example_kernel,
            "__global__ void my_kernel(const float * x, float * p, int rows, int cols)\n"
            "__global__ void my_kernel_2(const float * p, float * y, int rows)");
}

TEST_F(DescribeTest, FormatShape) {
  EXPECT_EQ(FormatShape(Get("matmul"), Get("matmul").timed_shape()), "M=4096, N=4096, K=4096");
}

}  // namespace
}  // namespace kerneleval::problems
