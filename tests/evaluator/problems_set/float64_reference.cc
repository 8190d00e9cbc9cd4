#include "tests/evaluator/problems_set/float64_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "evaluator/data/dtype.h"
#include "evaluator/data/prng.h"
#include "evaluator/problems/problems.h"

namespace kerneleval::problems_set {
namespace {

using Params = plan::ParamMap;
using Vec = std::vector<double>;

int64_t P(const Params& params, const char* name) { return params.at(name); }

// ------------------------------------------------------------ elementwise

Float64Fn Unary(std::function<double(double)> f) {
  return [f](const Tensors& in, const Params&) {
    const Vec& x = in.at("x");
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = f(x[i]);
    return Tensors{{"y", y}};
  };
}

double GeluErf(double v) { return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))); }
double GeluTanh(double v) {
  return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
}
double Sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }
double Silu(double v) { return v * Sigmoid(v); }

// ------------------------------------------------------------- row-wise

// y[r] = reduce(row r) for x [ROWS, COLS].
Float64Fn PerRow(std::function<double(const double* row, int64_t cols)> f,
                 const char* in_name = "x", const char* out_name = "y") {
  return [=](const Tensors& in, const Params& p) {
    const int64_t rows = P(p, "ROWS"), cols = P(p, "COLS");
    const Vec& x = in.at(in_name);
    Vec y(rows);
    for (int64_t r = 0; r < rows; ++r) y[r] = f(&x[r * cols], cols);
    return Tensors{{out_name, y}};
  };
}

double Sum(const double* v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += v[i];
  return s;
}

Tensors SoftmaxRows(const Vec& x, int64_t rows, int64_t cols, bool log) {
  Vec y(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    const double* in = &x[r * cols];
    const double max = *std::max_element(in, in + cols);
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(in[c] - max);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = log ? in[c] - max - std::log(sum) : std::exp(in[c] - max) / sum;
    }
  }
  return {{"y", y}};
}

// (x - mean) / sqrt(var + eps) per row, biased variance.
Vec Normalize(const Vec& x, int64_t rows, int64_t cols, double eps) {
  Vec z(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    const double* in = &x[r * cols];
    const double mean = Sum(in, cols) / cols;
    double var = 0;
    for (int64_t c = 0; c < cols; ++c) var += (in[c] - mean) * (in[c] - mean);
    var /= cols;
    for (int64_t c = 0; c < cols; ++c) z[r * cols + c] = (in[c] - mean) / std::sqrt(var + eps);
  }
  return z;
}

Vec RmsNorm(const Vec& h, const Vec& weight, int64_t rows, int64_t cols, double eps) {
  Vec y(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double squares = 0;
    for (int64_t c = 0; c < cols; ++c) squares += h[r * cols + c] * h[r * cols + c];
    const double inverse = 1.0 / std::sqrt(squares / cols + eps);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = h[r * cols + c] * inverse * weight[c];
  }
  return y;
}

// ---------------------------------------------------------------- GEMMs

// C[b] = A[b] op(B[b]); B is K x N, or N x K when transposed.
Vec Gemm(const Vec& a, const Vec& b, int64_t batch, int64_t m, int64_t n, int64_t k,
         bool b_transposed) {
  Vec c(batch * m * n, 0.0);
  for (int64_t bi = 0; bi < batch; ++bi) {
    const double* A = &a[bi * m * k];
    const double* B = &b[bi * k * n];
    double* C = &c[bi * m * n];
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
          s += A[i * k + kk] * (b_transposed ? B[j * k + kk] : B[kk * n + j]);
        }
        C[i * n + j] = s;
      }
    }
  }
  return c;
}

Float64Fn PlainMatmul(const char* out = "C") {
  return [=](const Tensors& in, const Params& p) {
    return Tensors{{out, Gemm(in.at("A"), in.at("B"), 1, P(p, "M"), P(p, "N"), P(p, "K"), false)}};
  };
}

// ------------------------------------------------------------- the table

std::map<std::string, Float64Fn> Build() {
  std::map<std::string, Float64Fn> f;

  // Elementwise.
  f["vector_add"] = [](const Tensors& in, const Params&) {
    Vec c(in.at("a").size());
    for (size_t i = 0; i < c.size(); ++i) c[i] = in.at("a")[i] + in.at("b")[i];
    return Tensors{{"c", c}};
  };
  f["relu"] = f["relu_f16"] = Unary([](double v) { return std::max(v, 0.0); });
  f["leaky_relu"] = Unary([](double v) { return v > 0 ? v : 0.01 * v; });
  f["gelu_tanh"] = Unary(GeluTanh);
  f["gelu_erf"] = f["gelu_bf16"] = Unary(GeluErf);
  f["silu"] = f["silu_f16"] = Unary(Silu);
  f["sigmoid"] = Unary(Sigmoid);
  f["tanh"] = Unary([](double v) { return std::tanh(v); });
  f["softplus"] = Unary([](double v) { return v > 20 ? v : std::log1p(std::exp(v)); });
  f["elu"] = Unary([](double v) { return v > 0 ? v : std::expm1(v); });
  f["hardtanh"] = Unary([](double v) { return std::clamp(v, -1.0, 1.0); });

  // Reductions.
  f["row_sum"] = PerRow(Sum);
  f["mean_rows"] = PerRow([](const double* v, int64_t n) { return Sum(v, n) / n; });
  f["max_rows"] = PerRow([](const double* v, int64_t n) { return *std::max_element(v, v + n); });
  f["min_rows"] = PerRow([](const double* v, int64_t n) { return *std::min_element(v, v + n); });
  // std::max_element / min_element return the first extreme: torch's rule.
  f["argmax_rows"] =
      PerRow([](const double* v, int64_t n) { return double(std::max_element(v, v + n) - v); });
  f["argmin_rows"] =
      PerRow([](const double* v, int64_t n) { return double(std::min_element(v, v + n) - v); });
  f["prod_rows"] = PerRow([](const double* v, int64_t n) {
    double p = 1;
    for (int64_t i = 0; i < n; ++i) p *= v[i];
    return p;
  });
  f["col_sum"] = [](const Tensors& in, const Params& p) {
    const int64_t rows = P(p, "ROWS"), cols = P(p, "COLS");
    Vec y(cols, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) y[c] += in.at("x")[r * cols + c];
    }
    return Tensors{{"y", y}};
  };
  f["cumsum_rows"] = [](const Tensors& in, const Params& p) {
    const int64_t rows = P(p, "ROWS"), cols = P(p, "COLS");
    Vec y(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = s += in.at("x")[r * cols + c];
    }
    return Tensors{{"y", y}};
  };

  // Softmax family.
  f["softmax"] = f["softmax_long_rows"] = [](const Tensors& in, const Params& p) {
    return SoftmaxRows(in.at("x"), P(p, "ROWS"), P(p, "COLS"), false);
  };
  f["log_softmax"] = [](const Tensors& in, const Params& p) {
    return SoftmaxRows(in.at("x"), P(p, "ROWS"), P(p, "COLS"), true);
  };

  // Normalization.
  f["layernorm"] = [](const Tensors& in, const Params& p) {
    const int64_t rows = P(p, "ROWS"), cols = P(p, "COLS");
    Vec y = Normalize(in.at("x"), rows, cols, 1e-5);
    for (int64_t i = 0; i < rows * cols; ++i) {
      y[i] = y[i] * in.at("gamma")[i % cols] + in.at("beta")[i % cols];
    }
    return Tensors{{"y", y}};
  };
  f["layernorm_gelu"] = [](const Tensors& in, const Params& p) {
    const int64_t rows = P(p, "ROWS"), cols = P(p, "COLS");
    Vec y = Normalize(in.at("x"), rows, cols, 1e-5);
    for (int64_t i = 0; i < rows * cols; ++i) {
      y[i] = GeluErf(y[i] * in.at("gamma")[i % cols] + in.at("beta")[i % cols]);
    }
    return Tensors{{"y", y}};
  };
  f["rmsnorm"] = [](const Tensors& in, const Params& p) {
    return Tensors{{"y", RmsNorm(in.at("x"), in.at("weight"), P(p, "ROWS"), P(p, "COLS"), 1e-6)}};
  };
  f["residual_add_rmsnorm"] = [](const Tensors& in, const Params& p) {
    Vec h(in.at("x").size());
    for (size_t i = 0; i < h.size(); ++i) h[i] = in.at("x")[i] + in.at("residual")[i];
    Vec y = RmsNorm(h, in.at("weight"), P(p, "ROWS"), P(p, "COLS"), 1e-6);
    return Tensors{{"h", h}, {"y", y}};
  };
  f["l2norm_rows"] = [](const Tensors& in, const Params& p) {
    const int64_t rows = P(p, "ROWS"), cols = P(p, "COLS");
    const Vec& x = in.at("x");
    Vec y(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      double squares = 0;
      for (int64_t c = 0; c < cols; ++c) squares += x[r * cols + c] * x[r * cols + c];
      const double norm = std::max(std::sqrt(squares), 1e-12);
      for (int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] / norm;
    }
    return Tensors{{"y", y}};
  };
  f["batchnorm_inference"] = [](const Tensors& in, const Params& p) {
    const int64_t channels = P(p, "C"), plane = P(p, "H") * P(p, "W");
    const Vec& x = in.at("x");
    Vec y(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const int64_t c = (static_cast<int64_t>(i) / plane) % channels;
      y[i] = (x[i] - in.at("mean")[c]) / std::sqrt(in.at("var")[c] + 1e-5) * in.at("gamma")[c] +
             in.at("beta")[c];
    }
    return Tensors{{"y", y}};
  };
  f["groupnorm"] = [](const Tensors& in, const Params& p) {
    const int64_t n = P(p, "N"), channels = P(p, "C"), groups = P(p, "G");
    const int64_t plane = P(p, "H") * P(p, "W");
    const int64_t group_size = channels / groups * plane;
    // Groups are contiguous in NCHW: normalize n * G "rows" of group_size.
    Vec y = Normalize(in.at("x"), n * groups, group_size, 1e-5);
    for (size_t i = 0; i < y.size(); ++i) {
      const int64_t c = (static_cast<int64_t>(i) / plane) % channels;
      y[i] = y[i] * in.at("gamma")[c] + in.at("beta")[c];
    }
    return Tensors{{"y", y}};
  };

  // GEMMs.
  f["matmul"] = f["matmul_rect"] = f["matmul_tall_skinny"] = f["matmul_f16"] = f["matmul_bf16"] =
      PlainMatmul();
  f["batched_matmul"] = [](const Tensors& in, const Params& p) {
    return Tensors{
        {"C", Gemm(in.at("A"), in.at("B"), P(p, "BATCH"), P(p, "M"), P(p, "N"), P(p, "K"), false)}};
  };
  f["matmul_transposed_b"] = [](const Tensors& in, const Params& p) {
    return Tensors{{"C", Gemm(in.at("A"), in.at("B"), 1, P(p, "M"), P(p, "N"), P(p, "K"), true)}};
  };
  f["gemm_bias_relu"] = [](const Tensors& in, const Params& p) {
    const int64_t n = P(p, "N");
    Vec y = Gemm(in.at("x"), in.at("W"), 1, P(p, "M"), n, P(p, "K"), true);
    for (size_t i = 0; i < y.size(); ++i) y[i] = std::max(y[i] + in.at("bias")[i % n], 0.0);
    return Tensors{{"y", y}};
  };
  f["matvec"] = [](const Tensors& in, const Params& p) {
    return Tensors{{"y", Gemm(in.at("A"), in.at("x"), 1, P(p, "M"), 1, P(p, "K"), false)}};
  };
  f["scaled_matmul_softmax"] = [](const Tensors& in, const Params& p) {
    const int64_t bh = P(p, "BH"), s = P(p, "S"), d = P(p, "D");
    Vec scores = Gemm(in.at("q"), in.at("k"), bh, s, s, d, true);
    for (double& v : scores) v /= std::sqrt(static_cast<double>(d));
    Vec probabilities = SoftmaxRows(scores, bh * s, s, false).at("y");
    return Tensors{{"out", Gemm(probabilities, in.at("v"), bh, s, d, s, false)}};
  };

  // Convolution and pooling.
  f["conv1d"] = [](const Tensors& in, const Params& p) {
    const int64_t n = P(p, "N"), cin = P(p, "CIN"), cout = P(p, "COUT"), l = P(p, "L"),
                  kw = P(p, "KW"), lout = l - kw + 1;
    const Vec &x = in.at("x"), &w = in.at("w");
    Vec y(n * cout * lout, 0.0);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < cout; ++o)
        for (int64_t pos = 0; pos < lout; ++pos) {
          double s = 0;
          for (int64_t i = 0; i < cin; ++i)
            for (int64_t k = 0; k < kw; ++k)
              s += x[(b * cin + i) * l + pos + k] * w[(o * cin + i) * kw + k];
          y[(b * cout + o) * lout + pos] = s;
        }
    return Tensors{{"y", y}};
  };
  f["conv2d"] = [](const Tensors& in, const Params& p) {
    const int64_t n = P(p, "N"), cin = P(p, "CIN"), cout = P(p, "COUT"), h = P(p, "H"),
                  w = P(p, "W"), k = P(p, "K"), ho = h - k + 1, wo = w - k + 1;
    const Vec &x = in.at("x"), &wt = in.at("wt");
    Vec y(n * cout * ho * wo);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t o = 0; o < cout; ++o)
        for (int64_t i0 = 0; i0 < ho; ++i0)
          for (int64_t j0 = 0; j0 < wo; ++j0) {
            double s = 0;
            for (int64_t i = 0; i < cin; ++i)
              for (int64_t pp = 0; pp < k; ++pp)
                for (int64_t q = 0; q < k; ++q)
                  s += x[((b * cin + i) * h + i0 + pp) * w + j0 + q] *
                       wt[((o * cin + i) * k + pp) * k + q];
            y[((b * cout + o) * ho + i0) * wo + j0] = s;
          }
    return Tensors{{"y", y}};
  };
  f["depthwise_conv2d"] = [](const Tensors& in, const Params& p) {
    const int64_t planes = P(p, "N") * P(p, "C"), channels = P(p, "C"), h = P(p, "H"),
                  w = P(p, "W"), k = P(p, "K"), r = (k - 1) / 2;
    const Vec &x = in.at("x"), &wt = in.at("wt");
    Vec y(planes * h * w);
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t i0 = 0; i0 < h; ++i0)
        for (int64_t j0 = 0; j0 < w; ++j0) {
          double s = 0;
          for (int64_t pp = 0; pp < k; ++pp)
            for (int64_t q = 0; q < k; ++q) {
              const int64_t i = i0 + pp - r, j = j0 + q - r;
              if (i >= 0 && i < h && j >= 0 && j < w) {
                s += x[(pl * h + i) * w + j] * wt[((pl % channels) * k + pp) * k + q];
              }
            }
          y[(pl * h + i0) * w + j0] = s;
        }
    return Tensors{{"y", y}};
  };
  auto pool = [](bool max, const Tensors& in, int64_t planes, int64_t h, int64_t w, int64_t k,
                 int64_t stride, int64_t ho, int64_t wo) {
    const Vec& x = in.at("x");
    Vec y(planes * ho * wo);
    for (int64_t pl = 0; pl < planes; ++pl)
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {
          double acc = max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t pp = 0; pp < k; ++pp)
            for (int64_t q = 0; q < k; ++q) {
              const double v = x[(pl * h + stride * i + pp) * w + stride * j + q];
              acc = max ? std::max(acc, v) : acc + v;
            }
          y[(pl * ho + i) * wo + j] = max ? acc : acc / (k * k);
        }
    return Tensors{{"y", y}};
  };
  f["maxpool2d"] = [pool](const Tensors& in, const Params& p) {
    const int64_t h = P(p, "H"), w = P(p, "W");
    return pool(true, in, P(p, "N") * P(p, "C"), h, w, 3, 2, (h - 3) / 2 + 1, (w - 3) / 2 + 1);
  };
  f["avgpool2d"] = [pool](const Tensors& in, const Params& p) {
    const int64_t h = P(p, "H"), w = P(p, "W"), k = P(p, "K");
    return pool(false, in, P(p, "N") * P(p, "C"), h, w, k, k, h / k, w / k);
  };

  // Data movement, histogram.
  f["transpose"] = [](const Tensors& in, const Params& p) {
    const int64_t rows = P(p, "ROWS"), cols = P(p, "COLS");
    Vec y(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) y[c * rows + r] = in.at("x")[r * cols + c];
    return Tensors{{"y", y}};
  };
  f["embedding_gather"] = [](const Tensors& in, const Params& p) {
    const int64_t b = P(p, "B"), d = P(p, "D");
    Vec y(b * d);
    for (int64_t i = 0; i < b; ++i) {
      const auto index = static_cast<int64_t>(in.at("indices")[i]);
      for (int64_t j = 0; j < d; ++j) y[i * d + j] = in.at("weight")[index * d + j];
    }
    return Tensors{{"y", y}};
  };
  f["histogram"] = [](const Tensors& in, const Params&) {
    Vec counts(256, 0.0);
    for (double v : in.at("x")) counts[static_cast<int>(v)] += 1;
    return Tensors{{"counts", counts}};
  };

  // Losses.
  f["mse_loss"] = [](const Tensors& in, const Params& p) {
    double s = 0;
    for (size_t i = 0; i < in.at("pred").size(); ++i) {
      const double d = in.at("pred")[i] - in.at("target")[i];
      s += d * d;
    }
    return Tensors{{"loss", Vec{s / P(p, "N")}}};
  };
  f["cross_entropy"] = [](const Tensors& in, const Params& p) {
    const int64_t b = P(p, "B"), c = P(p, "C");
    const Vec& x = in.at("logits");
    Vec loss(b);
    for (int64_t r = 0; r < b; ++r) {
      const double* row = &x[r * c];
      const double max = *std::max_element(row, row + c);
      double sum = 0;
      for (int64_t j = 0; j < c; ++j) sum += std::exp(row[j] - max);
      loss[r] = max + std::log(sum) - row[static_cast<int64_t>(in.at("labels")[r])];
    }
    return Tensors{{"loss", loss}};
  };
  f["huber_loss"] = [](const Tensors& in, const Params& p) {
    const int64_t rows = P(p, "ROWS"), cols = P(p, "COLS");
    Vec loss(rows, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const double d = in.at("pred")[r * cols + c] - in.at("target")[r * cols + c];
        loss[r] += std::fabs(d) < 1 ? 0.5 * d * d : std::fabs(d) - 0.5;
      }
      loss[r] /= cols;
    }
    return Tensors{{"loss", loss}};
  };
  f["kl_div"] = [](const Tensors& in, const Params& p) {
    const int64_t rows = P(p, "ROWS"), cols = P(p, "COLS");
    Vec loss(rows, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const double pv = in.at("p")[r * cols + c];
        loss[r] += pv * (std::log(pv) - in.at("logq")[r * cols + c]);
      }
    }
    return Tensors{{"loss", loss}};
  };
  return f;
}

}  // namespace

const std::map<std::string, Float64Fn>& Float64References() {
  static const auto* table = new std::map<std::string, Float64Fn>(Build());
  return *table;
}

Tensors GenerateInputs(const v1::Problem& problem, const v1::ShapeBinding& shape, uint64_t seed) {
  const plan::ParamMap params = problems::ShapeParams(shape);
  Tensors inputs;
  for (const auto& spec : problem.inputs()) {
    internal::BufferSpec buffer;
    buffer.set_name(spec.name());
    buffer.set_dtype(spec.dtype());
    buffer.set_elements(*problems::ElementCount(spec, params));
    buffer.set_role(internal::BUFFER_ROLE_INPUT);
    *buffer.mutable_distribution() = problems::InputDistributionAt(spec, shape);
    const std::string bytes = data::GenerateInput(buffer, seed);
    Vec values(buffer.elements());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = data::ReadElement(bytes, spec.dtype(), i);
    inputs[spec.name()] = std::move(values);
  }
  return inputs;
}

}  // namespace kerneleval::problems_set
