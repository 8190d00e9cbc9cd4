// Parity with the seed: every row of golden_rewards.jsonl (written by
// make_golden.py running the seed's reward_rubric.py with openenv-core) must be
// reproduced by Score() within 1e-12, non-finite values exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "rubric/rubric.h"

namespace kerneleval::rubric {
namespace {

using nlohmann::json;

constexpr double kTolerance = 1e-12;
constexpr size_t kMinObservations = 10000;

// The golden's encoding: null = missing; "nan" / "inf" / "-inf"; else a number.
std::optional<double> Decode(const json& value) {
  if (value.is_null()) return std::nullopt;
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
    ADD_FAILURE() << "unexpected string value " << text;
    return std::nullopt;
  }
  return value.get<double>();
}

// True when `actual` reproduces the seed's `expected`: both NaN, the same
// infinity, or within kTolerance.
bool Matches(double actual, double expected) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return actual == expected;
  return std::abs(actual - expected) <= kTolerance;
}

struct Golden {
  json meta;
  std::vector<json> observations;
  std::vector<json> configs;
};

const Golden& LoadGolden() {
  static const Golden golden = [] {
    Golden loaded;
    std::ifstream in(KERNELEVAL_RUBRIC_GOLDEN);
    EXPECT_TRUE(in.good()) << "cannot open " << KERNELEVAL_RUBRIC_GOLDEN;
    std::string line;
    while (std::getline(in, line)) {
      json row = json::parse(line);
      if (row.contains("meta")) {
        loaded.meta = row["meta"];
      } else if (row.contains("config")) {
        loaded.configs.push_back(std::move(row));
      } else {
        loaded.observations.push_back(std::move(row));
      }
    }
    return loaded;
  }();
  return golden;
}

std::string ToString(const json& row) { return row.dump(); }

TEST(RubricParityTest, GoldenHasEnoughObservations) {
  const Golden& golden = LoadGolden();
  EXPECT_GE(golden.observations.size(), kMinObservations);
  EXPECT_EQ(golden.observations.size(), golden.meta.value("observations", size_t{0}));
  EXPECT_FALSE(golden.configs.empty());
}

TEST(RubricParityTest, EveryObservationInEveryConfigMatchesTheSeed) {
  const std::vector<std::pair<std::string, RewardConfig>> columns = {
      {"speedup", {RewardMode::kSpeedup, false}},
      {"speedup+partial", {RewardMode::kSpeedup, true}},
      {"roofline", {RewardMode::kRoofline, false}},
      {"roofline+partial", {RewardMode::kRoofline, true}},
  };
  size_t compared = 0, exact = 0, mismatches = 0;
  for (const json& row : LoadGolden().observations) {
    const Observation observation{.correct = row.at("correct").get<bool>(),
                                  .stage = row.at("stage").get<std::string>(),
                                  .speedup = Decode(row.at("speedup")),
                                  .roofline_frac = Decode(row.at("roofline_frac"))};
    for (const auto& [name, config] : columns) {
      const double expected = *Decode(row.at("reward").at(name));
      const double actual = Score(config, observation);
      ++compared;
      if (actual == expected || (std::isnan(actual) && std::isnan(expected))) ++exact;
      if (!Matches(actual, expected) && ++mismatches <= 20) {
        ADD_FAILURE() << name << ": C++ " << actual << " vs seed " << expected << " on "
                      << ToString(row);
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GE(compared, 4 * kMinObservations);
  std::printf("compared %zu rewards, %zu bit-identical, %zu mismatches\n", compared, exact,
              mismatches);
}

// Restores the rubric's environment variables after the config rows.
class EnvRestorer {
 public:
  EnvRestorer() {
    for (const char* name : {kRewardModeEnvVar, kPartialCreditEnvVar}) {
      const char* value = std::getenv(name);
      saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
    }
  }
  ~EnvRestorer() {
    for (const auto& [name, value] : saved_) Set(name, value);
  }
  static void Set(const char* name, const std::optional<std::string>& value) {
    if (value) {
      ::setenv(name, value->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

std::optional<std::string> OptionalString(const json& value) {
  return value.is_null() ? std::nullopt : std::optional(value.get<std::string>());
}

TEST(RubricParityTest, ArgumentsAndEnvironmentResolveLikeTheSeed) {
  // The seed's probes (make_golden.py PROBES).
  const std::vector<Observation> probes = {
      {.correct = true, .stage = "passed", .speedup = 2.0, .roofline_frac = 0.5},
      {.correct = false,
       .stage = "correctness",
       .speedup = std::nullopt,
       .roofline_frac = std::nullopt},
  };
  EnvRestorer restorer;
  for (const json& row : LoadGolden().configs) {
    const json& config = row.at("config");
    EnvRestorer::Set(kRewardModeEnvVar, OptionalString(config.at("env_reward")));
    EnvRestorer::Set(kPartialCreditEnvVar, OptionalString(config.at("env_partial")));
    const std::optional<bool> partial_arg =
        config.at("partial_arg").is_null() ? std::nullopt
                                           : std::optional(config.at("partial_arg").get<bool>());
    const absl::StatusOr<RewardConfig> resolved =
        RewardConfigFromEnv(config.at("mode_arg").get<std::string>(), partial_arg);
    if (row.contains("error")) {
      EXPECT_FALSE(resolved.ok()) << ToString(row);
      EXPECT_EQ(resolved.status().code(), absl::StatusCode::kInvalidArgument) << ToString(row);
      continue;
    }
    ASSERT_TRUE(resolved.ok()) << resolved.status() << " on " << ToString(row);
    const json& expected = row.at("probe_rewards");
    ASSERT_EQ(expected.size(), probes.size());
    for (size_t i = 0; i < probes.size(); ++i) {
      EXPECT_TRUE(Matches(Score(*resolved, probes[i]), *Decode(expected[i])))
          << "probe " << i << " on " << ToString(row);
    }
  }
}

}  // namespace
}  // namespace kerneleval::rubric
