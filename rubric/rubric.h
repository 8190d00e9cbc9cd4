// The reward of a judged kernel: a C++ port of the seed's reward_rubric.py
// (OpenEnv rubrics), number for number. Pure: no proto, gRPC or CUDA.
//
//   correct, speedup mode (default):  0.3 + clamp(log2(s), -0.2, 3.0)  if s > 0, else 0
//   correct, roofline mode:           0.3 + 2.7 * min(f, 1)  if f is truthy (not missing,
//                                     != 0), else the speedup score
//   incorrect:                        partial credit by stage if enabled ("runtime" 0.02,
//                                     "timeout" 0.02, "correctness" 0.05), else 0
//
// NaN policy. Score() reproduces the seed exactly, NaN included: the seed returns
// NaN for a correct kernel in roofline mode whose roofline_frac is NaN (and -inf
// for a -inf fraction). A NaN reward poisons GRPO's group normalisation (mean and
// std of the group become NaN, so every advantage in the group is NaN), so the
// server and the CLI report SanitizedScore(), which maps any non-finite score to
// 0.0 ("no measurable credit") and is otherwise identical. The parity test pins
// Score() to the seed; SanitizedScore() is kerneleval's documented deviation.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kerneleval::rubric {

// The seed rubric's observation, under the seed's field names.
struct Observation {
  bool correct = false;
  // "passed" for a correct kernel; "compile" | "runtime" | "timeout" |
  // "correctness" for failures. Any other string earns no partial credit.
  std::string stage;
  std::optional<double> speedup;        // t_ref / t_new; nullopt = not measured
  std::optional<double> roofline_frac;  // t_min / t_new; nullopt = unknown
};

enum class RewardMode {
  kSpeedup,   // "speedup" (the default)
  kRoofline,  // "roofline"
};

// Environment variables read by RewardConfigFromEnv, as in the seed.
inline constexpr char kRewardModeEnvVar[] = "KERNEL_ENV_REWARD";
inline constexpr char kPartialCreditEnvVar[] = "KERNEL_ENV_PARTIAL_CREDIT";

struct RewardConfig {
  RewardMode mode = RewardMode::kSpeedup;
  bool partial_credit = false;
};

// "speedup" -> kSpeedup, "roofline" -> kRoofline (case-sensitive, like the
// seed's dict lookup); anything else is InvalidArgument naming it and the
// valid modes.
absl::StatusOr<RewardMode> ParseRewardMode(std::string_view name);
// The inverse of ParseRewardMode.
std::string_view RewardModeName(RewardMode mode);

// The seed's kernel_rubric(mode, partial) defaults:
//   mode: `mode` if non-empty, else $KERNEL_ENV_REWARD if set (even when set to
//         "", which is then an unknown mode, as the seed's KeyError), else "speedup".
//   partial: `partial` if given, else $KERNEL_ENV_PARTIAL_CREDIT == "1" exactly.
// Reads the environment with getenv (not synchronised with setenv elsewhere).
absl::StatusOr<RewardConfig> RewardConfigFromEnv(std::string_view mode = "",
                                                 std::optional<bool> partial = std::nullopt);

// The reward, exactly as the seed computes it (may be NaN, +-inf or negative
// for nonsensical inputs; see the NaN policy above).
double Score(const RewardConfig& config, const Observation& observation);
// Score() with any non-finite result mapped to 0.0: what kerneleval reports.
double SanitizedScore(const RewardConfig& config, const Observation& observation);

// The seed's building blocks, exposed for tests and for explaining a reward.
// Speedup: 0.3 + clamp(log2(s), -0.2, 3.0) if s > 0, else 0.0 (missing, 0,
// negative and NaN all give 0.0; +inf gives 3.3).
double SpeedupScore(const Observation& observation);
// Roofline: 0.3 + 2.7 * min(f, 1.0) if f is truthy in Python's sense (present
// and != 0, so negative and NaN fractions count), else SpeedupScore.
double RooflineScore(const Observation& observation);
// 0.02 "runtime", 0.02 "timeout", 0.05 "correctness", else 0.0.
double PartialCredit(std::string_view stage);

// OpenEnv's containers (openenv-core 0.3.0, rubrics/containers.py).
// Gate: the child's score if score >= threshold, else 0.0 (a NaN score is not
// < threshold, so NaN passes through).
double Gate(double child_score, double threshold = 1.0);
// Sequential: runs the children in order; the first whose score == 0.0 (so
// -0.0 too) stops the run and the result is 0.0; otherwise the last child's
// score; 1.0 with no children.
double Sequential(std::initializer_list<std::function<double()>> children);

}  // namespace kerneleval::rubric
