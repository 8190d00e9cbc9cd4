#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "evaluator/problems/problems.h"

namespace kerneleval::problems {
namespace {

namespace fs = std::filesystem;

const char* const kBuiltinIds[] = {"layernorm", "matmul",  "relu",
                                   "row_sum",   "softmax", "vector_add"};

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("kerneleval_problems_test_" + std::to_string(::getpid()) +
                                         "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }
  void Write(const fs::path& relative, const std::string& contents) const {
    fs::create_directories((path_ / relative).parent_path());
    std::ofstream(path_ / relative) << contents;
  }
  void CopyProblem(const std::string& id, const std::string& as) const {
    fs::create_directories(path_ / as);
    for (const char* file : {"problem.textproto", "reference.cu"}) {
      fs::copy_file(fs::path(KERNELEVAL_TEST_PROBLEMS_DIR) / id / file, path_ / as / file);
    }
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

TEST(RegistryTest, LoadsEveryBuiltinProblem) {
  absl::StatusOr<ProblemRegistry> registry =
      ProblemRegistry::LoadFromDirectory(KERNELEVAL_TEST_PROBLEMS_DIR);
  ASSERT_TRUE(registry.ok()) << registry.status();
  // problems/ may hold more problems than these six; all of them loaded and
  // validated, or LoadFromDirectory would have failed.
  ASSERT_GE(registry->size(), 6u);
  const std::vector<const v1::Problem*> list = registry->List();
  ASSERT_EQ(list.size(), registry->size());
  for (size_t i = 1; i < list.size(); ++i) EXPECT_LT(list[i - 1]->id(), list[i]->id());
  for (const char* id : kBuiltinIds) {
    const v1::Problem* problem = registry->Find(id);
    ASSERT_NE(problem, nullptr) << id;
    EXPECT_EQ(problem->id(), id);
    EXPECT_NE(std::find(list.begin(), list.end(), problem), list.end());
  }
  EXPECT_EQ(registry->Find("nope"), nullptr);
  EXPECT_EQ(registry->Find(""), nullptr);
}

TEST(RegistryTest, EveryBuiltinProblemIsComplete) {
  absl::StatusOr<ProblemRegistry> registry =
      ProblemRegistry::LoadFromDirectory(KERNELEVAL_TEST_PROBLEMS_DIR);
  ASSERT_TRUE(registry.ok()) << registry.status();
  for (const char* id : kBuiltinIds) {
    const v1::Problem* problem = registry->Find(id);
    ASSERT_NE(problem, nullptr) << id;
    SCOPED_TRACE(problem->id());
    EXPECT_TRUE(ValidateProblem(*problem).ok()) << ValidateProblem(*problem);
    EXPECT_FALSE(problem->title().empty());
    EXPECT_GT(problem->description().size(), 200u);
    EXPECT_EQ(problem->compute_type(), v1::COMPUTE_TYPE_FP32);
    EXPECT_FALSE(problem->flops().empty());
    EXPECT_FALSE(problem->tags().empty());
    EXPECT_NE(problem->reference_source().find("__global__"), std::string::npos);
    EXPECT_GE(problem->correctness_shapes_size(), 2);
    EXPECT_LE(problem->correctness_shapes_size(), 4);
    for (const auto& parameter : problem->parameters()) {
      EXPECT_FALSE(parameter.description().empty()) << parameter.name();
    }
    // Shapes sized for their backends: correctness shapes stay small enough
    // for the CPU emulation, the CPU timed shape near 1e5-1e6 element
    // operations, the timed shape big enough to keep a large GPU busy.
    for (const auto& shape : problem->correctness_shapes()) {
      const plan::ParamMap params = ShapeParams(shape);
      for (const auto& tensor : problem->inputs()) {
        EXPECT_LE(*ElementCount(tensor, params), 300000u) << shape.label();
      }
      EXPECT_LE(*EvalFlops(*problem, params), 2.0 * 100 * 100 * 100) << shape.label();
    }
    const plan::ParamMap cpu = ShapeParams(problem->cpu_timed_shape());
    EXPECT_FALSE(problem->cpu_timed_shape().values().empty());
    EXPECT_GE(*EvalFlops(*problem, cpu), 1e5);
    EXPECT_LE(*EvalFlops(*problem, cpu), 3e6);
    const plan::ParamMap timed = ShapeParams(problem->timed_shape());
    EXPECT_GE(*EvalBytes(*problem, timed), 64.0 * (1 << 20));
  }
}

TEST(RegistryTest, IdMustMatchDirectory) {
  TempDir dir;
  dir.CopyProblem("relu", "not_relu");
  absl::StatusOr<ProblemRegistry> registry = ProblemRegistry::LoadFromDirectory(dir.path());
  ASSERT_FALSE(registry.ok());
  EXPECT_NE(registry.status().message().find("differs from its directory name 'not_relu'"),
            std::string::npos)
      << registry.status();
}

TEST(RegistryTest, ParseErrorsNameFileAndLine) {
  TempDir dir;
  dir.Write("broken/problem.textproto", "id: \"broken\"\ntitle: \"x\"\nnot_a_field: 3\n");
  dir.Write("broken/reference.cu", "__global__ void k() {}\n");
  absl::StatusOr<ProblemRegistry> registry = ProblemRegistry::LoadFromDirectory(dir.path());
  ASSERT_FALSE(registry.ok());
  const std::string message(registry.status().message());
  EXPECT_NE(message.find("broken/problem.textproto"), std::string::npos) << message;
  EXPECT_NE(message.find("line 3"), std::string::npos) << message;
  EXPECT_NE(message.find("not_a_field"), std::string::npos) << message;
}

TEST(RegistryTest, InvalidProblemNamesItsFile) {
  TempDir dir;
  dir.CopyProblem("relu", "relu");
  std::ifstream in(dir.path() / "relu" / "problem.textproto");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = text.find("flops: \"N\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "flops: \"N * UNKNOWN\"");
  dir.Write("relu/problem.textproto", text);
  absl::StatusOr<ProblemRegistry> registry = ProblemRegistry::LoadFromDirectory(dir.path());
  ASSERT_FALSE(registry.ok());
  const std::string message(registry.status().message());
  EXPECT_NE(message.find("relu/problem.textproto"), std::string::npos) << message;
  EXPECT_NE(message.find("flops"), std::string::npos) << message;
  EXPECT_NE(message.find("UNKNOWN"), std::string::npos) << message;
}

TEST(RegistryTest, MissingReferenceSource) {
  TempDir dir;
  dir.CopyProblem("relu", "relu");
  fs::remove(dir.path() / "relu" / "reference.cu");
  absl::StatusOr<ProblemRegistry> registry = ProblemRegistry::LoadFromDirectory(dir.path());
  ASSERT_FALSE(registry.ok());
  EXPECT_NE(registry.status().message().find("reference.cu"), std::string::npos);
}

TEST(RegistryTest, SkipsDirectoriesWithoutProblemAndMissingDirFails) {
  TempDir dir;
  dir.CopyProblem("vector_add", "vector_add");
  dir.Write("notes/README.md", "not a problem\n");
  dir.Write("README.md", "top-level file\n");
  absl::StatusOr<ProblemRegistry> registry = ProblemRegistry::LoadFromDirectory(dir.path());
  ASSERT_TRUE(registry.ok()) << registry.status();
  EXPECT_EQ(registry->size(), 1u);
  EXPECT_FALSE(ProblemRegistry::LoadFromDirectory(dir.path() / "missing").ok());
}

// A problem may declare its reference plan as directives in reference.cu.
TEST(RegistryTest, ReferencePlanFromDirectives) {
  TempDir dir;
  dir.Write("scale/problem.textproto", R"pb(
    id: "scale"
    title: "Scale"
    description: "y = 2 x"
    parameters { name: "N" description: "elements" }
    inputs { name: "x" dtype: DTYPE_F32 shape: "N" }
    outputs { name: "y" dtype: DTYPE_F32 shape: "N" }
    flops: "N"
    compute_type: COMPUTE_TYPE_FP32
    timed_shape {
      label: "timed"
      values { key: "N" value: 1000000 }
    }
    correctness_shapes {
      label: "odd"
      values { key: "N" value: 1001 }
    }
  )pb");
  dir.Write("scale/reference.cu", R"cu(
// @launch scale_kernel<<<ceil_div(N, 256), 256>>>(x, y, N)
__global__ void scale_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
)cu");
  absl::StatusOr<ProblemRegistry> registry = ProblemRegistry::LoadFromDirectory(dir.path());
  ASSERT_TRUE(registry.ok()) << registry.status();
  const v1::Problem* problem = registry->Find("scale");
  ASSERT_NE(problem, nullptr);
  ASSERT_EQ(problem->reference_plan().launches_size(), 1);
  EXPECT_EQ(problem->reference_plan().launches(0).kernel(), "scale_kernel");
  EXPECT_EQ(problem->reference_plan().launches(0).grid().x(), "ceil_div(N, 256)");
  EXPECT_EQ(problem->reference_plan().launches(0).source_line(), 2u);
}

TEST(RegistryTest, AddRejectsDuplicatesAndInvalidProblems) {
  absl::StatusOr<ProblemRegistry> registry =
      ProblemRegistry::LoadFromDirectory(KERNELEVAL_TEST_PROBLEMS_DIR);
  ASSERT_TRUE(registry.ok());
  v1::Problem copy = *registry->Find("relu");
  EXPECT_EQ(registry->Add(copy).code(), absl::StatusCode::kAlreadyExists);
  copy.set_id("relu_copy");
  copy.clear_outputs();
  EXPECT_EQ(registry->Add(copy).code(), absl::StatusCode::kInvalidArgument);
  copy = *registry->Find("relu");
  copy.set_id("relu_copy");
  EXPECT_TRUE(registry->Add(copy).ok());
  EXPECT_EQ(registry->Find("relu_copy")->id(), "relu_copy");
  // Pointers handed out earlier survive later additions and moves.
  const v1::Problem* relu = registry->Find("relu");
  ProblemRegistry moved = *std::move(registry);
  EXPECT_EQ(moved.Find("relu"), relu);
}

TEST(RegistryTest, DefaultProblemsDir) {
  ::setenv("KERNELEVAL_PROBLEMS_DIR", "/some/where", 1);
  EXPECT_EQ(DefaultProblemsDir(), fs::path("/some/where"));
  ::unsetenv("KERNELEVAL_PROBLEMS_DIR");
  // No installed tree next to the test binary: the source tree's problems/.
  EXPECT_EQ(fs::weakly_canonical(DefaultProblemsDir()),
            fs::weakly_canonical(KERNELEVAL_TEST_PROBLEMS_DIR));
}

TEST(ShapeTest, EvalShapeElementsFlopsBytes) {
  absl::StatusOr<ProblemRegistry> registry =
      ProblemRegistry::LoadFromDirectory(KERNELEVAL_TEST_PROBLEMS_DIR);
  ASSERT_TRUE(registry.ok());

  const v1::Problem& matmul = *registry->Find("matmul");
  const plan::ParamMap mnk = {{"M", 3}, {"N", 5}, {"K", 7}};
  EXPECT_EQ(*EvalShape(matmul.inputs(0), mnk), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(*EvalShape(matmul.inputs(1), mnk), (std::vector<int64_t>{7, 5}));
  EXPECT_EQ(*ElementCount(matmul.outputs(0), mnk), 15u);
  EXPECT_EQ(*EvalFlops(matmul, mnk), 2.0 * 3 * 5 * 7);
  EXPECT_EQ(*EvalBytes(matmul, mnk), 4.0 * (3 * 7 + 7 * 5 + 3 * 5));
  // The timed shape by hand: 2 * 4096^3 flops, 3 * 4096^2 floats.
  const plan::ParamMap timed = ShapeParams(matmul.timed_shape());
  EXPECT_EQ(*EvalFlops(matmul, timed), 137438953472.0);
  EXPECT_EQ(*EvalBytes(matmul, timed), 3.0 * 4096 * 4096 * 4);
  EXPECT_EQ(*EvalOutputBytes(matmul, mnk), 4.0 * 3 * 5);  // C only

  const v1::Problem& layernorm = *registry->Find("layernorm");
  const plan::ParamMap rc = {{"ROWS", 10}, {"COLS", 6}};
  // x and y are 10 x 6, gamma and beta 6 floats each.
  EXPECT_EQ(*EvalBytes(layernorm, rc), 4.0 * (60 + 6 + 6 + 60));
  EXPECT_EQ(*EvalFlops(layernorm, rc), 8.0 * 60);

  const v1::Problem& row_sum = *registry->Find("row_sum");
  EXPECT_EQ(*EvalBytes(row_sum, rc), 4.0 * (60 + 10));
  EXPECT_EQ(*EvalFlops(row_sum, rc), 60.0);

  // An explicit bytes expression wins.
  v1::Problem custom = row_sum;
  custom.set_bytes("4 * ROWS * COLS");
  EXPECT_EQ(*EvalBytes(custom, rc), 240.0);
  custom.set_flops("");
  EXPECT_EQ(*EvalFlops(custom, rc), 0.0);

  // Errors name the tensor.
  absl::StatusOr<std::vector<int64_t>> missing = EvalShape(row_sum.inputs(0), {{"ROWS", 1}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'x'"), std::string::npos) << missing.status();
  v1::TensorSpec negative;
  negative.set_name("t");
  negative.add_shape("N - 5");
  EXPECT_FALSE(EvalShape(negative, {{"N", 1}}).ok());
  v1::TensorSpec scalar;
  scalar.set_name("s");
  EXPECT_EQ(*ElementCount(scalar, {}), 1u);
  v1::TensorSpec huge;
  huge.set_name("h");
  for (int i = 0; i < 4; ++i) huge.add_shape("N");
  EXPECT_FALSE(ElementCount(huge, {{"N", int64_t{1} << 20}}).ok());  // 2^80 overflows
}

TEST(ShapeTest, AllShapesAndCpuTimedShape) {
  absl::StatusOr<ProblemRegistry> registry =
      ProblemRegistry::LoadFromDirectory(KERNELEVAL_TEST_PROBLEMS_DIR);
  ASSERT_TRUE(registry.ok());
  const v1::Problem& softmax = *registry->Find("softmax");
  const auto shapes = AllShapes(softmax);
  ASSERT_EQ(shapes.size(), 2u + softmax.correctness_shapes_size());
  EXPECT_EQ(shapes[0]->label(), "timed");
  EXPECT_EQ(shapes[1]->label(), "cpu_timed");
  EXPECT_EQ(&CpuTimedShape(softmax), &softmax.cpu_timed_shape());
  v1::Problem without = softmax;
  without.clear_cpu_timed_shape();
  EXPECT_EQ(AllShapes(without).size(), 1u + softmax.correctness_shapes_size());
  EXPECT_EQ(&CpuTimedShape(without), &without.correctness_shapes(0));
}

}  // namespace
}  // namespace kerneleval::problems
