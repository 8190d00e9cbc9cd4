// The compile-option allow-list: accepted spellings, canonical forms, and
// refusals that name the option and the reason.
#include "evaluator/compile/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kerneleval::compile {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(OptionsTest, AcceptsTheAllowListInEverySpellingAndCanonicalizes) {
  absl::StatusOr<std::vector<std::string>> checked = CheckUserOptions(
      {"-use_fast_math", "-maxrregcount=64", "-lineinfo", "-DTILE=32", "--define-macro=USE_X",
       "-std=c++20", "-extra-device-vectorization", "-ftz=true", "--prec-div=false",
       "-prec-sqrt=true", "--fmad=false", "-restrict"});
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_THAT(*checked, ElementsAre("--extra-device-vectorization", "--fmad=false", "--ftz=true",
                                    "--generate-line-info", "--maxrregcount=64", "--prec-div=false",
                                    "--prec-sqrt=true", "--restrict", "--std=c++20",
                                    "--use_fast_math", "-DTILE=32", "-DUSE_X"));
}

TEST(OptionsTest, OrderDoesNotMatterForTheCanonicalList) {
  EXPECT_EQ(*CheckUserOptions({"-DA=1", "--use_fast_math"}),
            *CheckUserOptions({"--use_fast_math", "-DA=1"}));
  EXPECT_TRUE(CheckUserOptions({}).ok());
}

TEST(OptionsTest, MacroValuesMayBeExpressions) {
  EXPECT_TRUE(CheckUserOptions({"-DN=(1<<10)", "-DF=1.5f", "-DE=-2", "-DEMPTY="}).ok());
}

struct Refusal {
  std::string option;
  std::string reason;  // a substring of the message
};

class OptionsRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(OptionsRefusalTest, RefusesNamingTheOption) {
  absl::StatusOr<std::vector<std::string>> checked =
      CheckUserOptions({"-DOK=1", GetParam().option});
  ASSERT_FALSE(checked.ok()) << GetParam().option;
  EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(checked.status().message()), HasSubstr("\"" + GetParam().option + "\""));
  EXPECT_THAT(std::string(checked.status().message()), HasSubstr(GetParam().reason));
}

INSTANTIATE_TEST_SUITE_P(
    Forbidden, OptionsRefusalTest,
    ::testing::Values(
        Refusal{"-I/etc", "include paths"}, Refusal{"--include-path=/etc", "include"},
        Refusal{"-isystem", "include paths"}, Refusal{"--pre-include=/etc/passwd", "pre-included"},
        Refusal{"-include", "pre-included"}, Refusal{"-rdc=true", "relocatable"},
        Refusal{"--relocatable-device-code=true", "dynamic parallelism"},
        Refusal{"-dlto", "device linking"}, Refusal{"--pch", "precompiled"},
        Refusal{"--pch-dir=/tmp", "precompiled"}, Refusal{"--create-pch=x", "precompiled"},
        Refusal{"-G", "debug"}, Refusal{"--device-debug", "debug"},
        Refusal{"-arch=sm_80", "CompileOptions.arch"}, Refusal{"--ptxas-options=-O0", "back-end"},
        Refusal{"-Xptxas", "back-end"}, Refusal{"-UFOO", "undefined"},
        Refusal{"-default-device", "allow-list"}, Refusal{"--fdevice-time-trace=x", "allow-list"},
        Refusal{"-maxrregcount=0", "1..255"}, Refusal{"-maxrregcount=x", "1..255"},
        Refusal{"-std=c++11", "c++17"}, Refusal{"-ftz=yes", "true or =false"},
        Refusal{"-D__CUDA_ARCH__=900", "reserved"}, Refusal{"-D1X", "identifier"},
        Refusal{"-DX=\"str\"", "quotes"}, Refusal{"-DX=a;b", "macro value"},
        Refusal{"-DX=1 -I/etc", "whitespace"}, Refusal{"-DOK=2", "twice"},
        Refusal{"use_fast_math", "start with '-'"}, Refusal{"", "start with '-'"}));

TEST(OptionsTest, RefusesRepeatedOptionsAndTooMany) {
  EXPECT_FALSE(CheckUserOptions({"-ftz=true", "--ftz=false"}).ok());
  EXPECT_FALSE(CheckUserOptions({"--use_fast_math", "-use_fast_math"}).ok());
  std::vector<std::string> many;
  for (size_t i = 0; i <= kMaxUserOptions; ++i) many.push_back("-DM" + std::to_string(i));
  EXPECT_THAT(std::string(CheckUserOptions(many).status().message()), HasSubstr("too many"));
}

TEST(OptionsTest, NameExpressionsAreNamesWithTemplateArguments) {
  absl::StatusOr<std::vector<std::string>> ok =
      CheckNameExpressions({"scale<float, 4>", "ops::tile<(8 > 4), kTile * 2>", "scale<float, 4>",
                            "plain", "k<1024 / 4, 7 % 3>"});
  ASSERT_TRUE(ok.ok()) << ok.status();
  // Sorted, each once: the cache key's form.
  EXPECT_THAT(*ok, ElementsAre("k<1024 / 4, 7 % 3>", "ops::tile<(8 > 4), kTile * 2>", "plain",
                               "scale<float, 4>"));
  for (const std::string bad :
       {std::string(""), std::string("k<1>; int x"), std::string("k<1> /* c */"),
        std::string("k<1> // c"), std::string("k<\"s\">"), std::string("k<1>\n#include <x>"),
        std::string("<1>"), std::string("k{1}"), std::string(kMaxNameExpressionBytes + 1, 'k')}) {
    absl::StatusOr<std::vector<std::string>> refused = CheckNameExpressions({bad});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr("name expression")) << bad;
  }
  EXPECT_FALSE(
      CheckNameExpressions(std::vector<std::string>(kMaxNameExpressions + 1, "k<1>")).ok());
}

TEST(OptionsTest, Architectures) {
  for (const char* ok : {"sm_90", "sm_90a", "sm_100f", "sm_120", "compute_90", "sm_75"}) {
    EXPECT_TRUE(CheckArch(ok).ok()) << ok;
  }
  for (const char* bad : {"", "sm90", "sm_9", "sm_9000", "compute_", "sm_90 -I/etc", "gfx90a"}) {
    EXPECT_FALSE(CheckArch(bad).ok()) << bad;
  }
  EXPECT_TRUE(IsVirtualArch("compute_90"));
  EXPECT_FALSE(IsVirtualArch("sm_90"));
}

}  // namespace
}  // namespace kerneleval::compile
