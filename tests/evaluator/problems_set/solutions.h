// problems/<id>/solutions/: alternative kernels kept as tests. Each file's
// first line says what the evaluator must conclude:
//   // expect: pass          correct_*.cu (a correct alternative)
//   // expect: correctness   wrong_*.cu (or runtime, timeout, compile)
// and the file carries its own // @launch directives. Files under
// solutions/gpu_only/ need a GPU (tensor cores) and are loaded separately.
#pragma once

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace kerneleval::problems_set {

struct Solution {
  std::string file;  // name within the folder, e.g. "correct_scalar.cu"
  std::string source;
  std::string expect;  // "pass", "correctness", "runtime", ...; empty if missing
};

inline std::vector<Solution> LoadSolutions(const std::filesystem::path& folder) {
  std::vector<Solution> solutions;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".cu") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    Solution s{entry.path().filename().string(), text.str(), ""};
    std::smatch match;
    const std::string first_line = s.source.substr(0, s.source.find('\n'));
    if (std::regex_match(first_line, match, std::regex(R"(//\s*expect:\s*(\w+)\s*)"))) {
      s.expect = match[1];
    }
    solutions.push_back(std::move(s));
  }
  std::sort(solutions.begin(), solutions.end(),
            [](const Solution& a, const Solution& b) { return a.file < b.file; });
  return solutions;
}

// Ids of the problems that have a solutions/ folder with at least one .cu file.
inline std::vector<std::string> ProblemsWithSolutions(const std::filesystem::path& problems_dir) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(problems_dir, ec)) {
    if (!entry.is_directory()) continue;
    if (!LoadSolutions(entry.path() / "solutions").empty()) {
      ids.push_back(entry.path().filename().string());
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

// The problems of the set (all but the first six), each with solutions.
inline constexpr const char* kSetProblems[] = {"leaky_relu",
                                               "gelu_tanh",
                                               "gelu_erf",
                                               "silu",
                                               "sigmoid",
                                               "tanh",
                                               "softplus",
                                               "elu",
                                               "hardtanh",
                                               "relu_f16",
                                               "silu_f16",
                                               "gelu_bf16",
                                               "mean_rows",
                                               "max_rows",
                                               "min_rows",
                                               "argmax_rows",
                                               "argmin_rows",
                                               "prod_rows",
                                               "col_sum",
                                               "cumsum_rows",
                                               "rmsnorm",
                                               "l2norm_rows",
                                               "batchnorm_inference",
                                               "groupnorm",
                                               "log_softmax",
                                               "softmax_long_rows",
                                               "matmul_rect",
                                               "matmul_tall_skinny",
                                               "matvec",
                                               "batched_matmul",
                                               "matmul_transposed_b",
                                               "matmul_f16",
                                               "matmul_bf16",
                                               "conv1d",
                                               "conv2d",
                                               "depthwise_conv2d",
                                               "maxpool2d",
                                               "avgpool2d",
                                               "transpose",
                                               "embedding_gather",
                                               "histogram",
                                               "mse_loss",
                                               "cross_entropy",
                                               "huber_loss",
                                               "kl_div",
                                               "gemm_bias_relu",
                                               "layernorm_gelu",
                                               "scaled_matmul_softmax",
                                               "residual_add_rmsnorm"};

}  // namespace kerneleval::problems_set
