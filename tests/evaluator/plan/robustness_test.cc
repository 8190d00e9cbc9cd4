// Deterministic fuzzing: ~200k random and mutated inputs through every parser
// of evaluator/plan (see check_all_parsers.h for the properties). Built a
// second time with AddressSanitizer and UndefinedBehaviorSanitizer where the
// compiler supports them (plan_robustness_asan_test).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "check_all_parsers.h"

namespace kerneleval::plan {
namespace {

constexpr int kInputsPerGenerator = 50000;

class InputGenerator {
 public:
  explicit InputGenerator(uint64_t seed) : rng_(seed) {}

  size_t Below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  template <size_t N>
  std::string_view Pick(const std::array<std::string_view, N>& items) {
    return items[Below(N)];
  }

  std::string RandomBytes() {
    static constexpr std::string_view kInteresting =
        "0123456789xX+-*/%(),<>[]{}:;@ \t\n\r/\"'\\_aZ";
    std::string out(Below(80), '\0');
    for (char& c : out) {
      c = Below(2) == 0 ? static_cast<char>(Below(256)) : kInteresting[Below(kInteresting.size())];
    }
    return out;
  }

  // A well-formed expression over N, M, BIG (which may still overflow or
  // divide by zero), `depth` levels deep at most.
  std::string RandomExpression(int depth) {
    static constexpr std::array<std::string_view, 16> kLeaves = {"N",
                                                                 "M",
                                                                 "BIG",
                                                                 "0",
                                                                 "1",
                                                                 "2",
                                                                 "7",
                                                                 "-1",
                                                                 "256",
                                                                 "9223372036854775807",
                                                                 "0x10",
                                                                 "4096u",
                                                                 "3ull",
                                                                 "sizeof(float)",
                                                                 "sizeof(unsigned long long)",
                                                                 "sizeof(__half2)"};
    if (depth == 0 || Below(4) == 0) {
      return std::string(Pick(kLeaves));
    }
    static constexpr std::array<std::string_view, 5> kOps = {" + ", " - ", " * ", " / ", " % "};
    static constexpr std::array<std::string_view, 3> kFunctions = {"ceil_div", "min", "max"};
    switch (Below(4)) {
      case 0:
        return RandomExpression(depth - 1) + std::string(Pick(kOps)) + RandomExpression(depth - 1);
      case 1:
        return "(" + RandomExpression(depth - 1) + ")";
      case 2:
        return "-" + RandomExpression(depth - 1);
      default:
        return std::string(Pick(kFunctions)) + "(" + RandomExpression(depth - 1) + ", " +
               RandomExpression(depth - 1) + ")";
    }
  }

  std::string ExpressionSoup() {
    if (Below(2) == 0) {
      std::string expr = RandomExpression(static_cast<int>(Below(6)));
      return Below(4) == 0 ? Mutate(std::move(expr)) : expr;
    }
    static constexpr std::array<std::string_view, 44> kTokens = {"N",
                                                                 "M",
                                                                 "BIG",
                                                                 "x",
                                                                 "y",
                                                                 "0",
                                                                 "1",
                                                                 "-1",
                                                                 "2",
                                                                 "256",
                                                                 "9223372036854775807",
                                                                 "9223372036854775808",
                                                                 "0x7fffffffffffffff",
                                                                 "4096u",
                                                                 "10ULL",
                                                                 "0x",
                                                                 "1e3",
                                                                 "1.5",
                                                                 "012",
                                                                 "+",
                                                                 "-",
                                                                 "*",
                                                                 "/",
                                                                 "%",
                                                                 "(",
                                                                 ")",
                                                                 ",",
                                                                 "ceil_div(",
                                                                 "min(",
                                                                 "max(",
                                                                 "sizeof(float)",
                                                                 "sizeof(",
                                                                 "unsigned",
                                                                 "long",
                                                                 "int)",
                                                                 " ",
                                                                 "\t",
                                                                 "dim3(",
                                                                 "<<<",
                                                                 ">>>",
                                                                 "@launch",
                                                                 "//",
                                                                 "\n",
                                                                 "\xff"};
    std::string out;
    const size_t n = 1 + Below(30);
    for (size_t i = 0; i < n; ++i) {
      out += Pick(kTokens);
    }
    return out;
  }

  std::string Mutate(std::string text) {
    const size_t mutations = Below(5);
    for (size_t m = 0; m < mutations; ++m) {
      switch (Below(6)) {
        case 0:  // truncate
          text.resize(Below(text.size() + 1));
          break;
        case 1: {  // delete a range
          const size_t at = Below(text.size() + 1);
          text.erase(at, Below(8));
          break;
        }
        case 2: {  // insert a character
          static constexpr std::string_view kChars = "()<>,;:[]{}*&/\"'\\\n @0";
          text.insert(Below(text.size() + 1), 1, kChars[Below(kChars.size())]);
          break;
        }
        case 3: {  // duplicate a piece
          const size_t at = Below(text.size() + 1);
          const std::string piece = text.substr(at, Below(16));
          text.insert(Below(text.size() + 1), piece);
          break;
        }
        case 4:  // flip a byte
          if (!text.empty()) {
            text[Below(text.size())] = static_cast<char>(Below(256));
          }
          break;
        default: {  // swap two bytes
          if (text.size() >= 2) {
            std::swap(text[Below(text.size())], text[Below(text.size())]);
          }
          break;
        }
      }
    }
    return text;
  }

  std::string MutatedDirectives() {
    static constexpr std::array<std::string_view, 10> kValid = {
        "// @launch k<<<ceil_div(N, 256), 256>>>(x, y, N)\n"
        "__global__ void k(const float* x, float* y, int n) {}\n",
        "// @scratch s: f32[N]\n// @launch k<<<dim3(N, 2), dim3(32, 4), 64>>>(s, y, N * 2)\n"
        "extern \"C\" __global__ void __launch_bounds__(128) k(float4* a, float* b, long n) {}\n",
        "// @launch softmax_kernel<<<ROWS, 256, 256 * sizeof(float)>>>(x, y, ROWS, COLS)\n",
        "// @launch k2<<<dim3(ceil_div(N, 256), 1, 1), dim3(256)>>>(partial, y, N)\n",
        "// @scratch partial: f32[ceil_div(N, 1024)]\n",
        "// @scratch t: bf16[N][2];\n",
        "// @launch k<<<dim3{N, 2}, dim3(32, 8), 0>>>(x, y, N);\n",
        "// @launch ops::k<<<1, 32>>>()\n",
        "__global__ void k(const float* x, float* y, int n) {}\n",
        "extern \"C\" __global__ void __launch_bounds__(256) k2(double* p, float* y, int n) {}\n",
    };
    std::string text;
    const size_t lines = 1 + Below(4);
    for (size_t i = 0; i < lines; ++i) {
      text += Pick(kValid);
    }
    return Mutate(std::move(text));
  }

  std::string SourceSoup() {
    static constexpr std::array<std::string_view, 64> kTokens = {"__global__",
                                                                 "void",
                                                                 "extern",
                                                                 "\"C\"",
                                                                 "{",
                                                                 "}",
                                                                 "(",
                                                                 ")",
                                                                 "<",
                                                                 ">",
                                                                 ",",
                                                                 ";",
                                                                 "*",
                                                                 "&",
                                                                 "const",
                                                                 "float",
                                                                 "int",
                                                                 "unsigned",
                                                                 "long",
                                                                 "template",
                                                                 "typename",
                                                                 "T",
                                                                 "k",
                                                                 "x",
                                                                 "n",
                                                                 "=",
                                                                 "4",
                                                                 "__launch_bounds__",
                                                                 "namespace",
                                                                 "ns",
                                                                 "typedef",
                                                                 "using",
                                                                 "\n#define ",
                                                                 "BLOCK",
                                                                 "256",
                                                                 "\n",
                                                                 "/*",
                                                                 "*/",
                                                                 "//",
                                                                 "\"",
                                                                 "'",
                                                                 "R\"(",
                                                                 ")\"",
                                                                 "\\",
                                                                 "[",
                                                                 "]",
                                                                 "[[",
                                                                 "]]",
                                                                 "constexpr",
                                                                 "static",
                                                                 "__restrict__",
                                                                 "::",
                                                                 "std",
                                                                 "...",
                                                                 "\n// @launch k<<<1, 32>>>(x)\n",
                                                                 "\n// @scratch s: f32[N]\n",
                                                                 "__half",
                                                                 "float4",
                                                                 "size_t",
                                                                 "int64_t",
                                                                 "\n#",
                                                                 "struct",
                                                                 "__device__",
                                                                 " "};
    std::string out;
    const size_t n = 1 + Below(60);
    for (size_t i = 0; i < n; ++i) {
      out += Pick(kTokens);
      out += ' ';
    }
    return out;
  }

 private:
  std::mt19937_64 rng_;
};

template <typename Generate>
testing::ParserReach RunInputs(uint64_t seed, Generate generate) {
  InputGenerator generator(seed);
  testing::ParserReach reach;
  int failures = 0;
  for (int i = 0; i < kInputsPerGenerator && failures < 5; ++i) {
    const std::string input = generate(generator);
    const std::string failure = testing::CheckAllParsers(input, &reach);
    if (!failure.empty()) {
      ++failures;
      ADD_FAILURE() << failure << "\ninput (" << input.size() << " bytes): " << input;
    }
  }
  std::printf(
      "%d inputs: %d evaluated, %d plans with launches, %d sources with kernels, %d "
      "resolved\n",
      reach.inputs, reach.evaluated, reach.plans_with_launches, reach.sources_with_kernels,
      reach.resolved);
  return reach;
}

TEST(PlanRobustnessTest, RandomBytes) {
  RunInputs(1, [](InputGenerator& g) { return g.RandomBytes(); });
}

TEST(PlanRobustnessTest, ExpressionTokenSoup) {
  const testing::ParserReach reach =
      RunInputs(2, [](InputGenerator& g) { return g.ExpressionSoup(); });
  EXPECT_GT(reach.evaluated, kInputsPerGenerator / 10)
      << "the generator no longer reaches evaluation";
}

TEST(PlanRobustnessTest, MutatedDirectivesAndKernels) {
  const testing::ParserReach reach =
      RunInputs(3, [](InputGenerator& g) { return g.MutatedDirectives(); });
  EXPECT_GT(reach.plans_with_launches, kInputsPerGenerator / 10);
  EXPECT_GT(reach.sources_with_kernels, kInputsPerGenerator / 10);
  EXPECT_GT(reach.resolved, kInputsPerGenerator / 100) << "the generator no longer reaches binding";
}

TEST(PlanRobustnessTest, SourceTokenSoup) {
  const testing::ParserReach reach =
      RunInputs(4, [](InputGenerator& g) { return g.Mutate(g.SourceSoup()); });
  EXPECT_GT(reach.plans_with_launches, kInputsPerGenerator / 100);
}

TEST(PlanRobustnessTest, PathologicalInputs) {
  const std::vector<std::string> inputs = {
      std::string(100000, '('),
      std::string(100000, '-') + "1",
      "// @launch k<<<" + std::string(5000, '(') + ">>>()",
      "// @launch k<<<1, 1>>>(" + std::string(100000, ',') + ")",
      "__global__ void k(" + std::string(100000, '<') + ")",
      "template " + std::string(50000, '<'),
      std::string(50000, '{') + "__global__ void k(int);" + std::string(50000, '}'),
      "R\"" + std::string(100, 'x') + "(",
      std::string("\0\0\0", 3),
      "#define A A\n#define B (B + 1)\n__global__ void __launch_bounds__(B) k(int) {}",
  };
  for (const std::string& input : inputs) {
    EXPECT_EQ(testing::CheckAllParsers(input), "") << input.substr(0, 80);
  }
}

}  // namespace
}  // namespace kerneleval::plan
