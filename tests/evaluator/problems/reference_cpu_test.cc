// The built-in problems cannot be passed by degenerate kernels.
//
// For every problem, correctness shape and trial seed, inputs come from the
// real generator (prng.h), the expected output from a plain fp32 CPU version
// of the problem (what an honest kernel computes, in one particular order),
// and the test asserts that
//   (a) an all-zero output fails,                      (degenerate output)
//   (b) the float64 result rounded to f32 passes,      (honest fp32 differences)
//   (c) the float64 result rounded to fp16 fails,      (precision downcast)
//   (d) a problem-specific shortcut fails (skipping elements, no max
//       subtraction, no eps, TF32 inputs, ...).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "evaluator/data/compare.h"
#include "evaluator/data/dtype.h"
#include "evaluator/data/prng.h"
#include "evaluator/problems/problems.h"

namespace kerneleval::problems {
namespace {

using Tensors = std::map<std::string, std::vector<double>>;
using Params = plan::ParamMap;

// ------------------------------------------------------ float64 references

Tensors VectorAdd64(const Tensors& in, const Params& p) {
  std::vector<double> c(p.at("N"));
  for (size_t i = 0; i < c.size(); ++i) c[i] = in.at("a")[i] + in.at("b")[i];
  return {{"c", c}};
}

Tensors Relu64(const Tensors& in, const Params& p) {
  std::vector<double> y(p.at("N"));
  for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(in.at("x")[i], 0.0);
  return {{"y", y}};
}

Tensors Softmax64(const Tensors& in, const Params& p) {
  const int64_t rows = p.at("ROWS"), cols = p.at("COLS");
  const auto& x = in.at("x");
  std::vector<double> y(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) max = std::max(max, x[r * cols + c]);
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(x[r * cols + c] - max);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = std::exp(x[r * cols + c] - max) / sum;
  }
  return {{"y", y}};
}

Tensors RowSum64(const Tensors& in, const Params& p) {
  const int64_t rows = p.at("ROWS"), cols = p.at("COLS");
  std::vector<double> y(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) y[r] += in.at("x")[r * cols + c];
  }
  return {{"y", y}};
}

Tensors Matmul64(const Tensors& in, const Params& p) {
  const int64_t m = p.at("M"), n = p.at("N"), k = p.at("K");
  const auto &a = in.at("A"), &b = in.at("B");
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t kk = 0; kk < k; ++kk) {
      for (int64_t j = 0; j < n; ++j) c[i * n + j] += a[i * k + kk] * b[kk * n + j];
    }
  }
  return {{"C", c}};
}

Tensors Layernorm64(const Tensors& in, const Params& p) {
  const int64_t rows = p.at("ROWS"), cols = p.at("COLS");
  const auto &x = in.at("x"), &gamma = in.at("gamma"), &beta = in.at("beta");
  std::vector<double> y(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += (x[r * cols + c] - mean) * (x[r * cols + c] - mean);
    var /= cols;
    const double inverse_std = 1.0 / std::sqrt(var + 1e-5);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = (x[r * cols + c] - mean) * inverse_std * gamma[c] + beta[c];
    }
  }
  return {{"y", y}};
}

// --------------------------------------- fp32 versions (the "expected" side)

Tensors Softmax32(const Tensors& in, const Params& p) {
  const int64_t rows = p.at("ROWS"), cols = p.at("COLS");
  const auto& x = in.at("x");
  std::vector<double> y(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    float max = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) max = std::max(max, static_cast<float>(x[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(static_cast<float>(x[r * cols + c]) - max);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = std::exp(static_cast<float>(x[r * cols + c]) - max) / sum;
    }
  }
  return {{"y", y}};
}

Tensors RowSum32(const Tensors& in, const Params& p) {
  const int64_t rows = p.at("ROWS"), cols = p.at("COLS");
  std::vector<double> y(rows);
  for (int64_t r = 0; r < rows; ++r) {
    float sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += static_cast<float>(in.at("x")[r * cols + c]);
    y[r] = sum;
  }
  return {{"y", y}};
}

Tensors Matmul32(const Tensors& in, const Params& p) {
  const int64_t m = p.at("M"), n = p.at("N"), k = p.at("K");
  const auto &a = in.at("A"), &b = in.at("B");
  std::vector<double> c(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        sum = std::fma(static_cast<float>(a[i * k + kk]), static_cast<float>(b[kk * n + j]), sum);
      }
      c[i * n + j] = sum;
    }
  }
  return {{"C", c}};
}

Tensors Layernorm32(const Tensors& in, const Params& p) {
  const int64_t rows = p.at("ROWS"), cols = p.at("COLS");
  const auto &x = in.at("x"), &gamma = in.at("gamma"), &beta = in.at("beta");
  std::vector<double> y(rows * cols);
  // Sums as the reference kernel does (a block of 256 threads per row): a
  // strided partial sum per thread, then the partials. One running fp32 sum
  // over a 20,011-long row of values near 10 (the problem's inputs) drifts
  // by 3e-4 in the output, past the tolerance; the reference does not.
  constexpr int64_t kThreads = 256;
  // Sum of x, or with `mean` given, of (x - mean)^2.
  const auto row_sum = [&](int64_t r, std::optional<float> mean) {
    float partials[kThreads] = {};
    for (int64_t c = 0; c < cols; ++c) {
      const float v = static_cast<float>(x[r * cols + c]);
      partials[c % kThreads] += mean ? (v - *mean) * (v - *mean) : v;
    }
    float sum = 0;
    for (const float partial : partials) sum += partial;
    return sum;
  };
  for (int64_t r = 0; r < rows; ++r) {
    const float mean = row_sum(r, std::nullopt) / cols;
    const float var = row_sum(r, mean) / cols;
    const float inverse_std = 1.0f / std::sqrt(var + 1e-5f);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = (static_cast<float>(x[r * cols + c]) - mean) * inverse_std *
                            static_cast<float>(gamma[c]) +
                        static_cast<float>(beta[c]);
    }
  }
  return {{"y", y}};
}

struct Implementations {
  std::function<Tensors(const Tensors&, const Params&)> f64;
  std::function<Tensors(const Tensors&, const Params&)> f32;  // null: f64 rounded is exact
};

const std::map<std::string, Implementations>& AllImplementations() {
  static const auto* implementations = new std::map<std::string, Implementations>{
      {"vector_add", {VectorAdd64, nullptr}}, {"relu", {Relu64, nullptr}},
      {"softmax", {Softmax64, Softmax32}},    {"row_sum", {RowSum64, RowSum32}},
      {"matmul", {Matmul64, Matmul32}},       {"layernorm", {Layernorm64, Layernorm32}},
  };
  return *implementations;
}

// ---------------------------------------------------------------- helpers

Tensors GenerateInputs(const v1::Problem& problem, const v1::ShapeBinding& shape, uint64_t seed) {
  const Params params = ShapeParams(shape);
  Tensors inputs;
  for (const auto& spec : problem.inputs()) {
    internal::BufferSpec buffer;
    buffer.set_name(spec.name());
    buffer.set_dtype(spec.dtype());
    buffer.set_elements(*ElementCount(spec, params));
    *buffer.mutable_distribution() = InputDistributionAt(spec, shape);
    const std::string bytes = data::GenerateInput(buffer, seed);
    std::vector<double> values(buffer.elements());
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = data::ReadElement(bytes, spec.dtype(), i);
    }
    inputs[spec.name()] = std::move(values);
  }
  return inputs;
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

class ProblemsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<ProblemRegistry> registry =
        ProblemRegistry::LoadFromDirectory(KERNELEVAL_TEST_PROBLEMS_DIR);
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = new ProblemRegistry(*std::move(registry));
  }
  static void TearDownTestSuite() {
    delete registry_;
    registry_ = nullptr;
  }

  // Compares `got` (values per output) with `expected` for every output.
  static bool Passes(const v1::Problem& problem, const Params& params, const Tensors& expected,
                     const Tensors& got, v1::DType round_got = v1::DTYPE_UNSPECIFIED,
                     std::string* detail = nullptr) {
    bool all = true;
    for (const auto& spec : problem.outputs()) {
      const data::ToleranceValues tolerance =
          data::ResolveTolerance(spec.dtype(), spec.tolerance());
      const v1::OutputCheck check = data::CompareTensor(
          ToTensor(spec, expected.at(spec.name())), ToTensor(spec, got.at(spec.name()), round_got),
          *EvalShape(spec, params), tolerance.atol, tolerance.rtol);
      if (!check.passed() && detail != nullptr) *detail = check.ShortDebugString();
      all = all && check.passed();
    }
    return all;
  }

  // The problems this file has CPU versions of (other problem files carry
  // their own tests).
  static std::vector<const v1::Problem*> Covered() {
    std::vector<const v1::Problem*> covered;
    for (const auto& [id, impl] : AllImplementations()) {
      const v1::Problem* problem = registry_->Find(id);
      EXPECT_NE(problem, nullptr) << id;
      if (problem != nullptr) covered.push_back(problem);
    }
    return covered;
  }

  static inline ProblemRegistry* registry_ = nullptr;
  static constexpr uint64_t kSeeds[] = {1, 2, 0xC0FFEE};
};

TEST_F(ProblemsTest, HonestFp32PassesZerosAndFp16Fail) {
  for (const v1::Problem* problem : Covered()) {
    const Implementations& impl = AllImplementations().at(problem->id());
    for (const auto& shape : problem->correctness_shapes()) {
      for (const uint64_t seed : kSeeds) {
        SCOPED_TRACE(problem->id() + " " + shape.label() + " seed " + std::to_string(seed));
        const Params params = ShapeParams(shape);
        const Tensors inputs = GenerateInputs(*problem, shape, seed);
        const Tensors exact = impl.f64(inputs, params);
        const Tensors expected = impl.f32 ? impl.f32(inputs, params) : exact;
        Tensors zeros = exact;
        for (auto& [name, values] : zeros) std::fill(values.begin(), values.end(), 0.0);

        std::string detail;
        EXPECT_TRUE(Passes(*problem, params, expected, exact, v1::DTYPE_F32, &detail))
            << "(b) f64 rounded to f32 fails: " << detail;
        // (a) and (c) need outputs with many distinct values: a 1-element relu
        // output is 0 half the time (zeros are right), a 1-element sum may sit
        // within tolerance of an fp16 value, and layernorm with one column
        // outputs beta[0] everywhere.
        std::set<double> distinct;
        for (const auto& [name, values] : exact) distinct.insert(values.begin(), values.end());
        if (distinct.size() >= 32 || problem->id() != "relu") {
          EXPECT_FALSE(Passes(*problem, params, expected, zeros)) << "(a) zeros pass";
        }
        // matmul with K = 1: |C| < 1 sits below atol 5e-4 / 4.9e-4 (see the
        // problem's tolerance comment), so fp16 rounding passes there.
        const bool fp16_exempt = problem->id() == "matmul" && params.at("K") == 1;
        if (distinct.size() >= 32 && !fp16_exempt) {
          EXPECT_FALSE(Passes(*problem, params, expected, exact, v1::DTYPE_F16))
              << "(c) fp16-rounded outputs pass";
        }
      }
    }
  }
}

// A zero kernel fails every shape of every problem in at least one of the
// trials the evaluator runs (3 by default), and every trial of a shape with
// more than one output element.
TEST_F(ProblemsTest, ZeroOutputsFailEveryShape) {
  for (const v1::Problem* problem : Covered()) {
    const Implementations& impl = AllImplementations().at(problem->id());
    for (const auto& shape : problem->correctness_shapes()) {
      SCOPED_TRACE(problem->id() + " " + shape.label());
      const Params params = ShapeParams(shape);
      int failed_trials = 0;
      for (const uint64_t seed : kSeeds) {
        const Tensors inputs = GenerateInputs(*problem, shape, seed);
        const Tensors expected = impl.f32 ? impl.f32(inputs, params) : impl.f64(inputs, params);
        Tensors zeros = expected;
        size_t elements = 0;
        for (auto& [name, values] : zeros) {
          std::fill(values.begin(), values.end(), 0.0);
          elements += values.size();
        }
        const bool failed = !Passes(*problem, params, expected, zeros);
        failed_trials += failed;
        if (elements > 1) {
          EXPECT_TRUE(failed) << "seed " << seed;
        }
      }
      EXPECT_GE(failed_trials, 1);
    }
  }
}

// Sizes of outputs relative to the tolerance: no output tensor may be mostly
// below atol (a kernel could write anything there).
TEST_F(ProblemsTest, OutputsAreWellAboveAbsoluteTolerance) {
  for (const v1::Problem* problem : Covered()) {
    const Implementations& impl = AllImplementations().at(problem->id());
    for (const auto& shape : problem->correctness_shapes()) {
      SCOPED_TRACE(problem->id() + " " + shape.label());
      const Params params = ShapeParams(shape);
      const Tensors exact = impl.f64(GenerateInputs(*problem, shape, 7), params);
      for (const auto& spec : problem->outputs()) {
        const double atol = data::ResolveTolerance(spec.dtype(), spec.tolerance()).atol;
        const auto& values = exact.at(spec.name());
        size_t below = 0;
        for (double v : values) below += std::fabs(v) <= 10 * atol;
        if (values.size() < 32) continue;  // too few to judge a fraction
        // relu: half its outputs are exactly 0 by definition.
        const double allowed = problem->id() == "relu" ? 0.6 : 0.05;
        EXPECT_LE(static_cast<double>(below) / values.size(), allowed) << spec.name();
      }
    }
  }
}

// ----------------------------------------------- problem-specific shortcuts

TEST_F(ProblemsTest, RowSumSkippingElementsFails) {
  const v1::Problem& problem = *registry_->Find("row_sum");
  for (const auto& shape : problem.correctness_shapes()) {
    const Params params = ShapeParams(shape);
    const int64_t rows = params.at("ROWS"), cols = params.at("COLS");
    if (cols < 100) continue;
    for (const uint64_t seed : kSeeds) {
      const Tensors inputs = GenerateInputs(problem, shape, seed);
      const Tensors expected = RowSum32(inputs, params);
      // Sum 99% of each row and scale up (the law-of-large-numbers shortcut).
      Tensors sampled = expected;
      const int64_t kept = cols * 99 / 100;
      for (int64_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (int64_t c = 0; c < kept; ++c) sum += inputs.at("x")[r * cols + c];
        sampled["y"][r] = sum * cols / kept;
      }
      EXPECT_FALSE(Passes(problem, params, expected, sampled)) << shape.label();
    }
  }
}

TEST_F(ProblemsTest, SoftmaxWithoutMaxSubtractionFails) {
  const v1::Problem& problem = *registry_->Find("softmax");
  int failing_shapes = 0;
  for (const auto& shape : problem.correctness_shapes()) {
    const Params params = ShapeParams(shape);
    const int64_t rows = params.at("ROWS"), cols = params.at("COLS");
    const Tensors inputs = GenerateInputs(problem, shape, 3);
    const Tensors expected = Softmax32(inputs, params);
    Tensors naive = expected;
    for (int64_t r = 0; r < rows; ++r) {
      float sum = 0;
      for (int64_t c = 0; c < cols; ++c)
        sum += std::exp(static_cast<float>(inputs.at("x")[r * cols + c]));
      for (int64_t c = 0; c < cols; ++c) {
        naive["y"][r * cols + c] = std::exp(static_cast<float>(inputs.at("x")[r * cols + c])) / sum;
      }
    }
    failing_shapes += !Passes(problem, params, expected, naive);
  }
  // Every shape with more than one column overflows.
  EXPECT_GE(failing_shapes, problem.correctness_shapes_size() - 1);
}

TEST_F(ProblemsTest, LayernormVariantsFail) {
  const v1::Problem& problem = *registry_->Find("layernorm");
  const Params params = ShapeParams(problem.correctness_shapes(0));  // 333 x 45
  const Tensors inputs = GenerateInputs(problem, problem.correctness_shapes(0), 5);
  const Tensors expected = Layernorm32(inputs, params);
  const int64_t rows = params.at("ROWS"), cols = params.at("COLS");
  const auto variant = [&](double eps, bool unbiased, bool eps_outside, bool center) {
    Tensors out = expected;
    const auto &x = inputs.at("x"), &gamma = inputs.at("gamma"), &beta = inputs.at("beta");
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0;
      for (int64_t c = 0; c < cols; ++c) mean += x[r * cols + c];
      mean /= cols;
      for (int64_t c = 0; c < cols; ++c) var += std::pow(x[r * cols + c] - mean, 2);
      var /= unbiased ? cols - 1 : cols;
      const double scale = eps_outside ? 1.0 / (std::sqrt(var) + eps) : 1.0 / std::sqrt(var + eps);
      for (int64_t c = 0; c < cols; ++c) {
        out["y"][r * cols + c] =
            (x[r * cols + c] - (center ? mean : 0.0)) * scale * gamma[c] + beta[c];
      }
    }
    return out;
  };
  EXPECT_TRUE(Passes(problem, params, expected, variant(1e-5, false, false, true)));
  EXPECT_FALSE(Passes(problem, params, expected, variant(0.0, false, false, true))) << "no eps";
  EXPECT_FALSE(Passes(problem, params, expected, variant(1e-5, true, false, true))) << "unbiased";
  EXPECT_FALSE(Passes(problem, params, expected, variant(1e-5, false, true, true)))
      << "eps outside the square root";
  EXPECT_FALSE(Passes(problem, params, expected, variant(1e-5, false, false, false)))
      << "mean not subtracted";
}

float Tf32(float value) {  // round to 10 mantissa bits, nearest
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits = (bits + 0x1000u) & ~0x1FFFu;
  std::memcpy(&value, &bits, 4);
  return value;
}

TEST_F(ProblemsTest, MatmulWithTf32InputsFails) {
  const v1::Problem& problem = *registry_->Find("matmul");
  for (const auto& shape : problem.correctness_shapes()) {
    const Params params = ShapeParams(shape);
    if (params.at("K") < 30) continue;  // K = 1: one product, TF32 error ~1e-3 * |C| < atol
    const Tensors inputs = GenerateInputs(problem, shape, 11);
    const Tensors expected = Matmul32(inputs, params);
    Tensors tf32_inputs = inputs;
    for (const char* name : {"A", "B"}) {
      for (double& v : tf32_inputs[name]) v = Tf32(static_cast<float>(v));
    }
    EXPECT_FALSE(Passes(problem, params, expected, Matmul32(tf32_inputs, params))) << shape.label();
  }
}

// At the timed shape (K = 4096) the matmul tolerance must accept another
// honest fp32 summation order and still reject TF32: checked on a sample of
// 20000 dot products (the whole 4096^3 product is too slow for a unit test).
TEST_F(ProblemsTest, MatmulToleranceAtTheTimedShape) {
  const v1::Problem& problem = *registry_->Find("matmul");
  const int64_t k = problem.timed_shape().values().at("K");
  const data::ToleranceValues tolerance =
      data::ResolveTolerance(v1::DTYPE_F32, problem.outputs(0).tolerance());
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  int reorder_failures = 0, tf32_failures = 0;
  constexpr int kDots = 20000;
  std::vector<float> a(k), b(k);
  for (int d = 0; d < kDots; ++d) {
    for (int64_t i = 0; i < k; ++i) {
      a[i] = uniform(rng);
      b[i] = uniform(rng);
    }
    float sequential = 0, tf32 = 0;
    float lanes[32] = {};
    for (int64_t i = 0; i < k; ++i) {
      sequential = std::fma(a[i], b[i], sequential);
      lanes[i % 32] = std::fma(a[i], b[i], lanes[i % 32]);  // split-K over a warp
      tf32 = std::fma(Tf32(a[i]), Tf32(b[i]), tf32);
    }
    for (int width = 16; width >= 1; width /= 2) {
      for (int i = 0; i < width; ++i) lanes[i] += lanes[i + width];
    }
    reorder_failures += !data::ElementMatches(sequential, lanes[0], tolerance.atol, tolerance.rtol);
    tf32_failures += !data::ElementMatches(sequential, tf32, tolerance.atol, tolerance.rtol);
  }
  EXPECT_EQ(reorder_failures, 0);
  EXPECT_GT(tf32_failures, kDots / 2);
}

}  // namespace
}  // namespace kerneleval::problems
