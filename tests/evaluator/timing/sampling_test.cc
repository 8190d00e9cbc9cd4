// Statistics by hand and the stopping rule on synthetic sample streams.
#include "evaluator/timing/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace kerneleval::timing {
namespace {

constexpr double kZ = 1.959963984540054;

TEST(SummarizeTest, FiveSamplesByHand) {
  const std::vector<double> samples = {4, 1, 10, 3, 2};  // sorted: 1 2 3 4 10
  const SampleStats stats = Summarize(samples);
  EXPECT_EQ(stats.samples, 5u);
  EXPECT_DOUBLE_EQ(stats.median, 3);
  EXPECT_DOUBLE_EQ(stats.mean, 4);
  // deviations -3 -2 -1 0 6: squares sum to 50; 50 / (5 - 1) = 12.5.
  EXPECT_DOUBLE_EQ(stats.stdev, std::sqrt(12.5));
  EXPECT_DOUBLE_EQ(stats.min, 1);
  EXPECT_DOUBLE_EQ(stats.max, 10);
  // c = round(3 - z * sqrt(5/4)) = round(0.809) = 1: x_(1) = 1, x_(5) = 10.
  EXPECT_NEAR(stats.rel_stderr_median, (10.0 - 1.0) / (2 * kZ) / 3.0, 1e-12);
}

TEST(SummarizeTest, TenSamplesByHand) {
  std::vector<double> samples;
  for (int i = 10; i >= 1; --i) samples.push_back(i);
  const SampleStats stats = Summarize(samples);
  EXPECT_DOUBLE_EQ(stats.median, 5.5);  // even count: mean of the middle two
  EXPECT_DOUBLE_EQ(stats.mean, 5.5);
  EXPECT_NEAR(stats.stdev, 3.0276503540974917, 1e-12);  // sqrt(82.5 / 9)
  // c = round(5.5 - z * sqrt(10/4)) = round(2.401) = 2: x_(2) = 2, x_(9) = 9.
  EXPECT_NEAR(MedianStandardError(samples), 7.0 / (2 * kZ), 1e-12);
  EXPECT_NEAR(stats.rel_stderr_median, 7.0 / (2 * kZ) / 5.5, 1e-12);
}

TEST(SummarizeTest, OutliersDoNotInflateTheMedianError) {
  // 99 identical samples and one 10x outlier (an interrupt): sigma is large,
  // the median and its standard error are not moved.
  std::vector<double> samples(99, 100.0);
  samples.push_back(1000.0);
  const SampleStats stats = Summarize(samples);
  EXPECT_DOUBLE_EQ(stats.median, 100.0);
  EXPECT_GT(stats.stdev, 80.0);
  EXPECT_DOUBLE_EQ(stats.rel_stderr_median, 0.0);
}

TEST(SummarizeTest, EmptyAndTooFewSamples) {
  const SampleStats empty = Summarize(std::span<const double>());
  EXPECT_EQ(empty.samples, 0u);
  EXPECT_TRUE(std::isinf(empty.rel_stderr_median));
  const std::vector<double> two = {1.0, 1.0};
  const SampleStats stats = Summarize(two);
  EXPECT_DOUBLE_EQ(stats.median, 1.0);
  EXPECT_DOUBLE_EQ(stats.stdev, 0.0);
  EXPECT_TRUE(std::isinf(stats.rel_stderr_median));
  const std::vector<double> one = {7.0};
  EXPECT_DOUBLE_EQ(Summarize(one).stdev, 0.0);
  EXPECT_DOUBLE_EQ(Summarize(one).median, 7.0);
}

TEST(SummarizeTest, RepeatedFieldOverload) {
  internal::ProgramTiming timing;
  for (double x : {4.0, 1.0, 10.0, 3.0, 2.0}) timing.add_samples_us(x);
  const SampleStats stats = Summarize(timing.samples_us());
  EXPECT_EQ(stats.samples, 5u);
  EXPECT_DOUBLE_EQ(stats.median, 3);
  EXPECT_DOUBLE_EQ(stats.mean, 4);
}

TEST(SummarizeTest, ZeroMedianHasNoRelativeError) {
  const std::vector<double> zeros = {0, 0, 0, 0};
  EXPECT_TRUE(std::isinf(Summarize(zeros).rel_stderr_median));
}

// A deterministic stream: `spread` relative noise around 100 µs (an LCG, so
// the test needs no seed and never flakes).
std::vector<double> Stream(size_t n, double spread) {
  std::vector<double> samples;
  uint64_t state = 12345;
  for (size_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(state >> 11) * 0x1.0p-53;  // [0, 1)
    samples.push_back(100.0 * (1.0 + spread * (2 * u - 1)));
  }
  return samples;
}

internal::TimingConfig Config() {
  internal::TimingConfig config;
  config.set_min_samples(10);
  config.set_min_seconds(0.25);
  config.set_max_seconds(5.0);
  config.set_target_rel_stderr(0.005);
  return config;
}

// Feeds samples one at a time, `seconds_per_sample` of wall clock each, and
// returns how many were taken when the rule said stop (0: never).
size_t StopsAfter(const StoppingRule& rule, const std::vector<double>& stream,
                  double seconds_per_sample) {
  for (size_t n = 1; n <= stream.size(); ++n) {
    if (rule.ShouldStop(std::span<const double>(stream.data(), n), n * seconds_per_sample)) {
      return n;
    }
  }
  return 0;
}

TEST(StoppingRuleTest, TightStreamStopsAtTheMinimumTime) {
  // 0.1 % noise converges at once; 1/64 s per sample (exact in binary):
  // min_seconds 0.25 s is reached at sample 16.
  const StoppingRule rule(Config());
  EXPECT_EQ(StopsAfter(rule, Stream(1000, 0.001), 1.0 / 64), 16u);
}

TEST(StoppingRuleTest, MinSamplesAreHonoured) {
  // 0.1 s per sample: min_seconds is met at sample 3, min_samples at 10
  // (and the 5 s cap, at 50, is far away).
  const StoppingRule rule(Config());
  EXPECT_EQ(StopsAfter(rule, Stream(1000, 0.001), 0.1), 10u);
  EXPECT_FALSE(rule.Converged(std::span<const double>(Stream(9, 0.0).data(), 9)));
}

TEST(StoppingRuleTest, NoisyStreamSamplesUntilTheCap) {
  // +-50 % uniform noise: the median's relative standard error is ~0.6 /
  // sqrt(n), below 0.5 % only after ~15000 samples; at 1/64 s per sample the
  // 5 s cap comes first (sample 320) and the rule must not stop before it.
  const StoppingRule rule(Config());
  const std::vector<double> noisy = Stream(2000, 0.5);
  EXPECT_EQ(StopsAfter(rule, noisy, 1.0 / 64), 320u);
  EXPECT_FALSE(rule.Converged(std::span<const double>(noisy.data(), 320)));
  EXPECT_TRUE(rule.TimedOut(5.0));
  EXPECT_FALSE(rule.TimedOut(4.99));
}

TEST(StoppingRuleTest, CapAppliesEvenWithoutSamples) {
  const StoppingRule rule(Config());
  EXPECT_TRUE(rule.ShouldStop({}, 5.0));
  EXPECT_FALSE(rule.ShouldStop({}, 1.0));
}

TEST(StoppingRuleTest, ConvergesWhenTheErrorIsBelowTarget) {
  const StoppingRule rule(Config());
  const std::vector<double> tight = Stream(100, 0.001);
  EXPECT_TRUE(rule.Converged(tight));
  EXPECT_FALSE(rule.ShouldStop(tight, 0.1));  // converged but under min_seconds
  EXPECT_TRUE(rule.ShouldStop(tight, 0.3));
}

TEST(TimingConfigTest, DefaultsAndWithDefaults) {
  const internal::TimingConfig defaults = DefaultTimingConfig();
  EXPECT_EQ(defaults.warmup_runs(), 3u);
  EXPECT_EQ(defaults.min_samples(), 10u);
  EXPECT_DOUBLE_EQ(defaults.min_seconds(), 0.2);
  EXPECT_DOUBLE_EQ(defaults.max_seconds(), 5.0);
  EXPECT_DOUBLE_EQ(defaults.target_rel_stderr(), 0.005);
  EXPECT_EQ(defaults.input_sets(), 4u);
  EXPECT_TRUE(defaults.flush_l2());

  internal::TimingConfig requested;
  requested.set_min_samples(50);
  requested.set_max_seconds(1.5);
  const internal::TimingConfig filled = WithDefaults(requested);
  EXPECT_EQ(filled.min_samples(), 50u);
  EXPECT_DOUBLE_EQ(filled.max_seconds(), 1.5);
  EXPECT_EQ(filled.warmup_runs(), 3u);
  EXPECT_DOUBLE_EQ(filled.target_rel_stderr(), 0.005);
  EXPECT_FALSE(filled.flush_l2());  // indistinguishable from unset: taken as given
  // No config at all: the defaults, flush included.
  EXPECT_TRUE(WithDefaults(internal::TimingConfig()).flush_l2());
  EXPECT_EQ(WithDefaults(internal::TimingConfig()).min_samples(), 10u);
}

TEST(SpeedupTest, RatioOfMedians) {
  SampleStats reference, candidate;
  reference.median = 200;
  candidate.median = 50;
  EXPECT_DOUBLE_EQ(Speedup(reference, candidate), 4.0);
  candidate.median = 0;
  EXPECT_DOUBLE_EQ(Speedup(reference, candidate), 0.0);
  candidate.median = std::numeric_limits<double>::quiet_NaN();
  EXPECT_DOUBLE_EQ(Speedup(reference, candidate), 0.0);
}

TEST(RooflineFloorTest, BelowNinetyPercentIsImpossible) {
  EXPECT_TRUE(BelowRooflineFloor(8.9, 10.0));
  EXPECT_FALSE(BelowRooflineFloor(9.0, 10.0));
  EXPECT_FALSE(BelowRooflineFloor(12.0, 10.0));
  EXPECT_TRUE(BelowRooflineFloor(9.5, 10.0, 1.0));
  EXPECT_FALSE(BelowRooflineFloor(0.001, 0.0));  // floor unknown
}

TEST(ThrottleTest, SeventyFivePercentOfTheReference) {
  EXPECT_TRUE(IsThrottled(1400, 1980));   // 70.7 %
  EXPECT_FALSE(IsThrottled(1500, 1980));  // 75.8 %
  EXPECT_FALSE(IsThrottled(100, 0));      // no reference
}

TEST(ThrottleTest, TheReferenceIsTheHighestReadingUpToTheMaximum) {
  // Locked at 1410 MHz on a 1980 MHz device: 1410 is what the run is judged
  // against, not the datasheet's 1980 (which would make every sample look
  // throttled).
  EXPECT_DOUBLE_EQ(ThrottleReferenceMhz({{1410, 1400}, {1405, 0}}, 1980), 1410);
  // A reading above the maximum (noise, or a forged report) does not raise it.
  EXPECT_DOUBLE_EQ(ThrottleReferenceMhz({{1980, 9000}}, 1980), 1980);
  EXPECT_DOUBLE_EQ(ThrottleReferenceMhz({{0, 0}, {}}, 1980), 1980);  // no readings
  EXPECT_DOUBLE_EQ(ThrottleReferenceMhz({{1200}}, 0), 1200);         // maximum unknown
}

TEST(ThrottleTest, AThrottledReadingDropsTheSamplesFromItOnOnePerProgram) {
  // Three programs (the reference and two candidates), six rounds. Round 1:
  // the second candidate's reading is throttled (the first candidate, just
  // before it, may have heated the GPU, or wants its own slow sample gone):
  // that sample goes, then the reference's and the first candidate's of
  // round 2; the first candidate's sample of round 1, taken before the
  // reading, stays. Round 4: the reference's reading, the round's first:
  // the whole round goes. Round 5's first candidate has no reading.
  const std::vector<std::vector<double>> clocks = {{1980, 1980, 1980, 1980, 900, 1980},
                                                   {1980, 1980, 1980, 1980, 1980, 0},
                                                   {1980, 1000, 1980, 1980, 1980, 1980}};
  const ThrottledSamples found = FindThrottledSamples(clocks, 1980);
  EXPECT_EQ(found.throttled, 2);
  EXPECT_FALSE(found.kept_all);
  EXPECT_EQ(found.rounds, 6u);
  EXPECT_DOUBLE_EQ(found.reference_mhz, 1980);
  EXPECT_EQ(found.dropped[0], (std::vector<bool>{false, false, true, false, true, false}));
  EXPECT_EQ(found.dropped[1], (std::vector<bool>{false, false, true, false, true, false}));
  EXPECT_EQ(found.dropped[2], (std::vector<bool>{false, true, false, false, true, false}));
  const std::vector<double> first = {10, 11, 12, 13, 14, 15};
  const KeptSamples a = KeepSamples(first, found.dropped[1], {});
  EXPECT_EQ(a.samples_us, (std::vector<double>{10, 11, 13, 15}));
  EXPECT_EQ(a.throttled, 2);
  // The last program's reading in the last round: its own sample only (the
  // next round never ran).
  const ThrottledSamples last = FindThrottledSamples({{1980, 1980}, {1980, 900}}, 1980);
  EXPECT_EQ(last.dropped[0], (std::vector<bool>{false, false}));
  EXPECT_EQ(last.dropped[1], (std::vector<bool>{false, true}));
}

TEST(ThrottleTest, MostSamplesThrottledKeepsEverySample) {
  const std::vector<std::vector<double>> clocks = {{1980, 900, 900}, {1980, 1980, 1980}};
  const ThrottledSamples found = FindThrottledSamples(clocks, 1980);
  EXPECT_EQ(found.throttled, 2);
  EXPECT_TRUE(found.kept_all);
  for (const std::vector<bool>& row : found.dropped) {
    EXPECT_EQ(row, (std::vector<bool>{false, false, false}));
  }
}

TEST(ThrottleTest, LateSamplesGoTooUnlessMostWould) {
  const std::vector<double> samples = {10, 11, 12, 13, 14, 15};
  const std::vector<bool> throttled = {false, true, false, false, false, false};
  // Sample 1's round throttled (and late: counted once, as throttled),
  // sample 4 late.
  const KeptSamples some = KeepSamples(samples, throttled, {false, true, false, false, true});
  EXPECT_EQ(some.samples_us, (std::vector<double>{10, 12, 13, 15}));
  EXPECT_EQ(some.throttled, 1);
  EXPECT_EQ(some.late, 1);
  EXPECT_FALSE(some.kept_all);
  // Three of the five left would go: the readings are suspect, every sample
  // the throttled round left stays.
  const KeptSamples most = KeepSamples(samples, throttled, {true, false, true, true, false, false});
  EXPECT_EQ(most.samples_us, (std::vector<double>{10, 12, 13, 14, 15}));
  EXPECT_EQ(most.throttled, 1);
  EXPECT_EQ(most.late, 3);
  EXPECT_TRUE(most.kept_all);
}

TEST(TimedRunBoundTest, TwentyTimesTheLongestRunAtLeastTwoSeconds) {
  EXPECT_DOUBLE_EQ(TimedRunBoundSeconds(0), 2);
  EXPECT_DOUBLE_EQ(TimedRunBoundSeconds(0.001), 2);  // 1 ms runs: the floor
  EXPECT_DOUBLE_EQ(TimedRunBoundSeconds(0.1), 2);
  EXPECT_DOUBLE_EQ(TimedRunBoundSeconds(0.5), 10);
}

}  // namespace
}  // namespace kerneleval::timing
