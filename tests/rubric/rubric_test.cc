// Hand-computed values for rubric/rubric.h, including the seed's Python edge
// semantics (truthiness, min/max with NaN) and its environment defaults.
#include "rubric/rubric.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kerneleval::rubric {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Observation Passed(std::optional<double> speedup, std::optional<double> roofline_frac = {}) {
  return Observation{
      .correct = true, .stage = "passed", .speedup = speedup, .roofline_frac = roofline_frac};
}

Observation Failed(std::string stage) {
  return Observation{
      .correct = false, .stage = std::move(stage), .speedup = 2.0, .roofline_frac = std::nullopt};
}

constexpr RewardConfig kSpeedup{.mode = RewardMode::kSpeedup, .partial_credit = false};
constexpr RewardConfig kRoofline{.mode = RewardMode::kRoofline, .partial_credit = false};
constexpr RewardConfig kSpeedupPartial{.mode = RewardMode::kSpeedup, .partial_credit = true};

TEST(SpeedupScoreTest, LogScaleAroundOneX) {
  EXPECT_DOUBLE_EQ(Score(kSpeedup, Passed(1.0)), 0.3);
  EXPECT_DOUBLE_EQ(Score(kSpeedup, Passed(2.0)), 1.3);
  EXPECT_DOUBLE_EQ(Score(kSpeedup, Passed(4.0)), 2.3);
  EXPECT_DOUBLE_EQ(Score(kSpeedup, Passed(std::exp2(-0.1))), 0.2);
}

TEST(SpeedupScoreTest, ClampedToPointOneAndThreePointThree) {
  EXPECT_DOUBLE_EQ(Score(kSpeedup, Passed(8.0)), 3.3);
  EXPECT_DOUBLE_EQ(Score(kSpeedup, Passed(100.0)), 3.3);
  EXPECT_DOUBLE_EQ(Score(kSpeedup, Passed(1e300)), 3.3);
  EXPECT_DOUBLE_EQ(Score(kSpeedup, Passed(kInf)), 3.3);
  // Correct but slower still earns 0.3 - 0.2 (== 0.09999999999999998 in binary).
  EXPECT_EQ(Score(kSpeedup, Passed(0.5)), 0.3 + -0.2);
  EXPECT_EQ(Score(kSpeedup, Passed(1e-300)), 0.3 + -0.2);
  EXPECT_EQ(Score(kSpeedup, Passed(std::numeric_limits<double>::denorm_min())), 0.3 + -0.2);
}

TEST(SpeedupScoreTest, MissingZeroNegativeAndNaNScoreZero) {
  // Seed: `s = speedup or 0.0`, then `if s > 0`; NaN is truthy but not > 0.
  for (const std::optional<double> s :
       {std::optional<double>(), std::optional(0.0), std::optional(-0.0), std::optional(-1.0),
        std::optional(-kInf), std::optional(kNaN)}) {
    EXPECT_EQ(Score(kSpeedup, Passed(s)), 0.0) << (s ? *s : -12345.0);
    EXPECT_FALSE(std::signbit(Score(kSpeedup, Passed(s))));
  }
}

TEST(RooflineScoreTest, ShareOfTheRoof) {
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(2.0, 0.5)), 1.65);
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(2.0, 1.0)), 3.0);
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(2.0, 2.0)), 3.0);
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(2.0, kInf)), 3.0);
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(std::nullopt, 1e-300)), 0.3);
}

TEST(RooflineScoreTest, FallsBackToSpeedupWhenFalsy) {
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(2.0, std::nullopt)), 1.3);
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(2.0, 0.0)), 1.3);
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(2.0, -0.0)), 1.3);
  EXPECT_EQ(Score(kRoofline, Passed(std::nullopt, 0.0)), 0.0);
}

TEST(RooflineScoreTest, NegativeAndNonFiniteFractionsAreTruthyLikeInPython) {
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(2.0, -1.0)), 0.3 - 2.7);
  EXPECT_DOUBLE_EQ(Score(kRoofline, Passed(2.0, -0.5)), 0.3 - 1.35);
  EXPECT_EQ(Score(kRoofline, Passed(2.0, -kInf)), -kInf);
  EXPECT_TRUE(std::isnan(Score(kRoofline, Passed(2.0, kNaN))));
  // -1/9 lands on exactly 0.0; Sequential's stop-at-zero returns +0.0.
  const double at_zero = Score(kRoofline, Passed(2.0, -1.0 / 9.0));
  EXPECT_EQ(at_zero, 0.0);
  EXPECT_FALSE(std::signbit(at_zero));
}

TEST(SanitizedScoreTest, NonFiniteBecomesZeroAndTheRestIsUnchanged) {
  EXPECT_EQ(SanitizedScore(kRoofline, Passed(2.0, kNaN)), 0.0);
  EXPECT_EQ(SanitizedScore(kRoofline, Passed(2.0, -kInf)), 0.0);
  EXPECT_DOUBLE_EQ(SanitizedScore(kRoofline, Passed(2.0, -1.0)), 0.3 - 2.7);
  EXPECT_DOUBLE_EQ(SanitizedScore(kRoofline, Passed(2.0, 0.5)), 1.65);
  EXPECT_DOUBLE_EQ(SanitizedScore(kSpeedup, Passed(kInf)), 3.3);
}

TEST(PartialCreditTest, ByStageOnlyWhenEnabled) {
  EXPECT_DOUBLE_EQ(Score(kSpeedupPartial, Failed("runtime")), 0.02);
  EXPECT_DOUBLE_EQ(Score(kSpeedupPartial, Failed("timeout")), 0.02);
  EXPECT_DOUBLE_EQ(Score(kSpeedupPartial, Failed("correctness")), 0.05);
  EXPECT_EQ(Score(kSpeedupPartial, Failed("compile")), 0.0);
  EXPECT_EQ(Score(kSpeedupPartial, Failed("passed")), 0.0);
  EXPECT_EQ(Score(kSpeedupPartial, Failed("Runtime")), 0.0);  // case-sensitive
  EXPECT_EQ(Score(kSpeedupPartial, Failed("")), 0.0);
  for (const char* stage : {"runtime", "timeout", "correctness", "compile"}) {
    EXPECT_EQ(Score(kSpeedup, Failed(stage)), 0.0) << stage;
  }
}

TEST(PartialCreditTest, CorrectKernelsIgnoreTheirStage) {
  Observation correct = Passed(2.0);
  correct.stage = "correctness";
  EXPECT_DOUBLE_EQ(Score(kSpeedupPartial, correct), 1.3);
  correct.speedup = std::nullopt;  // correct but unmeasured: the speed score, not credit
  EXPECT_EQ(Score(kSpeedupPartial, correct), 0.0);
}

TEST(GateTest, ThresholdSemantics) {
  EXPECT_EQ(Gate(1.0), 1.0);
  EXPECT_EQ(Gate(0.999), 0.0);
  EXPECT_EQ(Gate(0.0), 0.0);
  EXPECT_EQ(Gate(2.5), 2.5);
  EXPECT_EQ(Gate(0.5, 0.5), 0.5);
  EXPECT_EQ(Gate(0.4, 0.5), 0.0);
  EXPECT_TRUE(std::isnan(Gate(kNaN)));  // NaN < 1.0 is false: passes through
}

TEST(SequentialTest, StopsAtExactZeroElseLastScore) {
  EXPECT_EQ(Sequential({}), 1.0);
  EXPECT_EQ(Sequential({[] { return 1.0; }, [] { return 0.7; }}), 0.7);
  int later_calls = 0;
  const double stopped = Sequential({[] { return 1.0; }, [] { return -0.0; },
                                     [&] {
                                       ++later_calls;
                                       return 5.0;
                                     }});
  EXPECT_EQ(stopped, 0.0);
  EXPECT_FALSE(std::signbit(stopped));
  EXPECT_EQ(later_calls, 0);
  EXPECT_EQ(Sequential({[] { return -0.5; }, [] { return 0.25; }}), 0.25);
  EXPECT_TRUE(std::isnan(Sequential({[] { return 1.0; }, [] { return kNaN; }})));
}

TEST(RewardModeTest, ParseAndName) {
  EXPECT_EQ(*ParseRewardMode("speedup"), RewardMode::kSpeedup);
  EXPECT_EQ(*ParseRewardMode("roofline"), RewardMode::kRoofline);
  for (RewardMode mode : {RewardMode::kSpeedup, RewardMode::kRoofline}) {
    EXPECT_EQ(*ParseRewardMode(RewardModeName(mode)), mode);
  }
}

TEST(RewardModeTest, UnknownModeIsInvalidArgumentNamingIt) {
  for (const char* bad : {"Speedup", "bogus", "", " roofline"}) {
    const absl::StatusOr<RewardMode> parsed = ParseRewardMode(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(parsed.status().message(), HasSubstr("\"" + std::string(bad) + "\""));
    EXPECT_THAT(parsed.status().message(), HasSubstr("speedup, roofline"));
  }
}

// Sets or unsets the rubric's environment variables for one test and restores
// them afterwards.
class RewardConfigFromEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {kRewardModeEnvVar, kPartialCreditEnvVar}) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
      ::unsetenv(name);
    }
  }
  void TearDown() override {
    for (const auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name, value->c_str(), 1);
      } else {
        ::unsetenv(name);
      }
    }
  }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

TEST_F(RewardConfigFromEnvTest, DefaultsToSpeedupWithoutPartialCredit) {
  const absl::StatusOr<RewardConfig> config = RewardConfigFromEnv();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->mode, RewardMode::kSpeedup);
  EXPECT_FALSE(config->partial_credit);
}

TEST_F(RewardConfigFromEnvTest, ModeFromEnvUnlessGiven) {
  ::setenv(kRewardModeEnvVar, "roofline", 1);
  EXPECT_EQ(RewardConfigFromEnv()->mode, RewardMode::kRoofline);
  EXPECT_EQ(RewardConfigFromEnv("speedup")->mode, RewardMode::kSpeedup);
  ::setenv(kRewardModeEnvVar, "bogus", 1);
  EXPECT_EQ(RewardConfigFromEnv("roofline")->mode, RewardMode::kRoofline);  // arg wins
}

TEST_F(RewardConfigFromEnvTest, UnknownModeFromEnvIsAnErrorNamingTheVariable) {
  ::setenv(kRewardModeEnvVar, "ROOFLINE", 1);
  absl::StatusOr<RewardConfig> config = RewardConfigFromEnv();
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("\"ROOFLINE\""));
  EXPECT_THAT(config.status().message(), HasSubstr(kRewardModeEnvVar));
  // Set but empty: the seed's `mode or env.get(...)` yields "" and a KeyError.
  ::setenv(kRewardModeEnvVar, "", 1);
  config = RewardConfigFromEnv();
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("\"\""));
}

TEST_F(RewardConfigFromEnvTest, UnknownModeArgumentIsAnError) {
  const absl::StatusOr<RewardConfig> config = RewardConfigFromEnv("fastest");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("\"fastest\""));
}

TEST_F(RewardConfigFromEnvTest, PartialCreditOnlyForExactlyOne) {
  ::setenv(kPartialCreditEnvVar, "1", 1);
  EXPECT_TRUE(RewardConfigFromEnv()->partial_credit);
  EXPECT_FALSE(RewardConfigFromEnv("", false)->partial_credit);  // arg wins
  for (const char* value : {"", "0", "true", "yes", " 1", "1 ", "01"}) {
    ::setenv(kPartialCreditEnvVar, value, 1);
    EXPECT_FALSE(RewardConfigFromEnv()->partial_credit) << '"' << value << '"';
    EXPECT_TRUE(RewardConfigFromEnv("", true)->partial_credit);
  }
}

}  // namespace
}  // namespace kerneleval::rubric
