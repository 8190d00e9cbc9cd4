#include "rubric/rubric.h"

#include <cmath>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kerneleval::rubric {
namespace {

constexpr double kBaseScore = 0.3;        // what a correct kernel at 1x earns
constexpr double kMinLog2Speedup = -0.2;  // floor: correct-but-slower earns >= 0.1
constexpr double kMaxLog2Speedup = 3.0;   // cap at 8x so outliers don't dominate
constexpr double kRooflineSpan = 2.7;     // roofline score runs 0.3 .. 3.0

// Python's two-argument min/max, NaN behaviour included: the first argument
// wins unless the second compares strictly smaller (larger).
double PyMin(double a, double b) { return b < a ? b : a; }
double PyMax(double a, double b) { return b > a ? b : a; }

// The seed's Correct rubric.
double CorrectScore(const Observation& observation) { return observation.correct ? 1.0 : 0.0; }

double SpeedScore(RewardMode mode, const Observation& observation) {
  switch (mode) {
    case RewardMode::kSpeedup:
      return SpeedupScore(observation);
    case RewardMode::kRoofline:
      return RooflineScore(observation);
  }
  return 0.0;  // unreachable: every mode is handled above
}

}  // namespace

absl::StatusOr<RewardMode> ParseRewardMode(std::string_view name) {
  if (name == "speedup") return RewardMode::kSpeedup;
  if (name == "roofline") return RewardMode::kRoofline;
  return absl::InvalidArgumentError(absl::StrCat("unknown reward mode \"",
                                                 absl::string_view(name.data(), name.size()),
                                                 "\"; valid modes: speedup, roofline"));
}

std::string_view RewardModeName(RewardMode mode) {
  switch (mode) {
    case RewardMode::kSpeedup:
      return "speedup";
    case RewardMode::kRoofline:
      return "roofline";
  }
  return "unknown";
}

absl::StatusOr<RewardConfig> RewardConfigFromEnv(std::string_view mode,
                                                 std::optional<bool> partial) {
  // Seed: `mode = mode or os.environ.get("KERNEL_ENV_REWARD", "speedup")`.
  std::string mode_name(mode);
  bool mode_from_env = false;
  if (mode_name.empty()) {
    const char* env_mode = std::getenv(kRewardModeEnvVar);
    mode_name = env_mode != nullptr ? env_mode : "speedup";
    mode_from_env = env_mode != nullptr;
  }
  absl::StatusOr<RewardMode> parsed = ParseRewardMode(mode_name);
  if (!parsed.ok()) {
    if (!mode_from_env) return parsed.status();
    return absl::InvalidArgumentError(
        absl::StrCat(parsed.status().message(), " (from $", kRewardModeEnvVar, ")"));
  }
  RewardConfig config;
  config.mode = *parsed;
  if (partial.has_value()) {
    config.partial_credit = *partial;
  } else {
    // Seed: `os.environ.get("KERNEL_ENV_PARTIAL_CREDIT") == "1"`.
    const char* env_partial = std::getenv(kPartialCreditEnvVar);
    config.partial_credit = env_partial != nullptr && std::string_view(env_partial) == "1";
  }
  return config;
}

double SpeedupScore(const Observation& observation) {
  // Seed: `s = observation.speedup or 0.0` then `... if s > 0 else 0.0`.
  // NaN is truthy but not > 0, so it scores 0 like a missing speedup.
  const double s = observation.speedup.value_or(0.0);
  if (!(s > 0.0)) return 0.0;
  return kBaseScore + PyMin(PyMax(std::log2(s), kMinLog2Speedup), kMaxLog2Speedup);
}

double RooflineScore(const Observation& observation) {
  // Seed: `0.3 + 2.7 * min(f, 1.0) if f else fallback`. Python truthiness:
  // None and 0.0 (and -0.0) are false; negative and NaN fractions are true.
  const std::optional<double>& f = observation.roofline_frac;
  const bool truthy = f.has_value() && *f != 0.0;
  if (!truthy) return SpeedupScore(observation);
  return kBaseScore + kRooflineSpan * PyMin(*f, 1.0);
}

double PartialCredit(std::string_view stage) {
  if (stage == "runtime" || stage == "timeout") return 0.02;
  if (stage == "correctness") return 0.05;
  return 0.0;
}

double Gate(double child_score, double threshold) {
  return child_score < threshold ? 0.0 : child_score;
}

double Sequential(std::initializer_list<std::function<double()>> children) {
  double result = 1.0;
  for (const auto& child : children) {
    const double score = child();
    if (score == 0.0) return 0.0;
    result = score;
  }
  return result;
}

double Score(const RewardConfig& config, const Observation& observation) {
  // Seed: KernelReward(Sequential(Gate(Correct()), speed), partial).
  if (observation.correct) {
    return Sequential({[&] { return Gate(CorrectScore(observation)); },
                       [&] { return SpeedScore(config.mode, observation); }});
  }
  return config.partial_credit ? PartialCredit(observation.stage) : 0.0;
}

double SanitizedScore(const RewardConfig& config, const Observation& observation) {
  const double score = Score(config, observation);
  return std::isfinite(score) ? score : 0.0;
}

}  // namespace kerneleval::rubric
