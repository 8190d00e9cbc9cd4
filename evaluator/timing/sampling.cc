#include "evaluator/timing/sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace kerneleval::timing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Two-sided 95 % normal quantile used by the order-statistics estimate.
constexpr double kZ95 = 1.959963984540054;

double MedianOfSorted(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

// McKean & Schrader (1984), "A comparison of methods for studentizing the
// sample median", Commun. Statist. B 13(6): the order statistics x_(c) and
// x_(n-c+1), with c = round((n+1)/2 - z * sqrt(n/4)), bound a distribution-free
// ~95 % confidence interval of the median (the binomial(n, 1/2) count of
// samples below it); its half-width over z estimates the standard error.
//
// Why not the asymptotic 1.2533 * sigma / sqrt(n): that formula assumes a
// normal distribution, and GPU timing samples are not normal. They are
// right-skewed with rare large outliers (an interrupt, a clock ramp, a
// neighbour's copy), and one 10x outlier in a hundred samples inflates sigma
// several-fold although the median does not move at all, so a perfectly
// stable kernel would sample until the hard cap. The order-statistics
// estimate only looks at samples near the median, so it is as robust as the
// median itself, and it is deterministic (no bootstrap resampling, no seed):
// the same samples always give the same verdict. Its granularity for small n
// is coarse (it is a difference of two observed samples), which errs on the
// side of sampling more, never less.
double MedianStandardErrorOfSorted(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  if (n < kMinSamplesForStderr) return kInf;
  const double c_real = (static_cast<double>(n) + 1) / 2 - kZ95 * std::sqrt(n / 4.0);
  // 1-based rank, clamped: for small n the interval is the whole sample.
  const size_t c = static_cast<size_t>(std::clamp(std::round(c_real), 1.0, static_cast<double>(n)));
  const double lower = sorted[c - 1];  // x_(c)
  const double upper = sorted[n - c];  // x_(n-c+1)
  return (upper - lower) / (2 * kZ95);
}

}  // namespace

double MedianStandardError(std::span<const double> samples_us) {
  std::vector<double> sorted(samples_us.begin(), samples_us.end());
  std::sort(sorted.begin(), sorted.end());
  return MedianStandardErrorOfSorted(sorted);
}

SampleStats Summarize(std::span<const double> samples_us) {
  SampleStats stats;
  stats.samples = static_cast<uint32_t>(samples_us.size());
  if (samples_us.empty()) {
    stats.rel_stderr_median = kInf;
    return stats;
  }
  std::vector<double> sorted(samples_us.begin(), samples_us.end());
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  stats.min = sorted.front();
  stats.max = sorted.back();
  stats.median = MedianOfSorted(sorted);
  stats.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
  if (sorted.size() >= 2) {
    double sum_sq = 0;  // two-pass: numerically stable for samples far from 0
    for (double x : sorted) sum_sq += (x - stats.mean) * (x - stats.mean);
    stats.stdev = std::sqrt(sum_sq / (n - 1));
  }
  const double stderr_median = MedianStandardErrorOfSorted(sorted);
  stats.rel_stderr_median =
      (stats.median > 0 && std::isfinite(stderr_median)) ? stderr_median / stats.median : kInf;
  return stats;
}

SampleStats Summarize(const google::protobuf::RepeatedField<double>& samples_us) {
  return Summarize(std::span<const double>(samples_us.data(), samples_us.size()));
}

internal::TimingConfig DefaultTimingConfig() {
  internal::TimingConfig config;
  // Warm-up: the first launches pay for module load, instruction cache and
  // TLB misses, and the clock ramping up from idle.
  config.set_warmup_runs(3);
  config.set_min_samples(10);
  config.set_min_seconds(0.2);          // [s] wall clock
  config.set_max_seconds(5.0);          // [s] wall clock, per timing request
  config.set_target_rel_stderr(0.005);  // 0.5 % of the median
  config.set_input_sets(4);
  config.set_flush_l2(true);
  return config;
}

internal::TimingConfig WithDefaults(const internal::TimingConfig& requested) {
  internal::TimingConfig defaults = DefaultTimingConfig();
  // No config at all: every default, the L2 flush included.
  if (requested.ByteSizeLong() == 0) return defaults;
  internal::TimingConfig config = requested;
  if (config.warmup_runs() == 0) config.set_warmup_runs(defaults.warmup_runs());
  if (config.min_samples() == 0) config.set_min_samples(defaults.min_samples());
  if (config.min_seconds() <= 0) config.set_min_seconds(defaults.min_seconds());
  if (config.max_seconds() <= 0) config.set_max_seconds(defaults.max_seconds());
  if (config.target_rel_stderr() <= 0) config.set_target_rel_stderr(defaults.target_rel_stderr());
  if (config.input_sets() == 0) config.set_input_sets(defaults.input_sets());
  return config;
}

StoppingRule::StoppingRule(const internal::TimingConfig& config) : config_(config) {}

bool StoppingRule::TimedOut(double elapsed_seconds) const {
  return elapsed_seconds >= config_.max_seconds();
}

bool StoppingRule::Converged(std::span<const double> samples_us) const {
  if (samples_us.size() < config_.min_samples()) return false;
  if (samples_us.size() < kMinSamplesForStderr) return false;
  return Summarize(samples_us).rel_stderr_median < config_.target_rel_stderr();
}

bool StoppingRule::ShouldStop(std::span<const double> samples_us, double elapsed_seconds) const {
  if (TimedOut(elapsed_seconds)) return true;
  if (elapsed_seconds < config_.min_seconds()) return false;
  return Converged(samples_us);
}

double Speedup(const SampleStats& reference, const SampleStats& candidate) {
  if (!(reference.median > 0) || !(candidate.median > 0)) return 0;
  return reference.median / candidate.median;
}

bool BelowRooflineFloor(double t_us, double t_min_us, double factor) {
  if (!(t_min_us > 0)) return false;
  return t_us < factor * t_min_us;
}

bool IsThrottled(double clock_mhz, double reference_clock_mhz, double fraction) {
  if (!(reference_clock_mhz > 0)) return false;
  return clock_mhz < fraction * reference_clock_mhz;
}

double ThrottleReferenceMhz(const std::vector<std::vector<double>>& clock_mhz, double nominal_mhz) {
  double highest = 0;
  for (const std::vector<double>& readings : clock_mhz) {
    for (const double reading : readings) highest = std::max(highest, reading);
  }
  if (!(highest > 0)) return nominal_mhz;
  return nominal_mhz > 0 ? std::min(highest, nominal_mhz) : highest;
}

ThrottledSamples FindThrottledSamples(const std::vector<std::vector<double>>& clock_mhz,
                                      double nominal_mhz, double fraction) {
  ThrottledSamples found;
  found.reference_mhz = ThrottleReferenceMhz(clock_mhz, nominal_mhz);
  const size_t programs = clock_mhz.size();
  for (const std::vector<double>& readings : clock_mhz) {
    found.rounds = std::max(found.rounds, readings.size());
  }
  found.dropped.assign(programs, std::vector<bool>(found.rounds, false));
  // Samples in the order they ran: round r, program q is the (r n + q)-th;
  // a throttled reading drops that one and the n - 1 after it.
  for (size_t r = 0; r < found.rounds; ++r) {
    for (size_t q = 0; q < programs; ++q) {
      const std::vector<double>& readings = clock_mhz[q];
      if (r >= readings.size() || !(readings[r] > 0) ||
          !IsThrottled(readings[r], found.reference_mhz, fraction)) {
        continue;
      }
      ++found.throttled;
      for (size_t k = 0; k < programs; ++k) {
        const size_t round = r + (q + k) / programs;
        if (round < found.rounds) found.dropped[(q + k) % programs][round] = true;
      }
    }
  }
  for (const std::vector<bool>& row : found.dropped) {
    if (static_cast<size_t>(std::count(row.begin(), row.end(), true)) * 2 > found.rounds) {
      found.kept_all = true;
    }
  }
  if (found.kept_all) found.dropped.assign(programs, std::vector<bool>(found.rounds, false));
  return found;
}

KeptSamples KeepSamples(std::span<const double> samples_us, const std::vector<bool>& throttled,
                        const std::vector<bool>& late) {
  KeptSamples kept;
  std::vector<double> unthrottled;
  unthrottled.reserve(samples_us.size());
  kept.samples_us.reserve(samples_us.size());
  for (size_t i = 0; i < samples_us.size(); ++i) {
    if (i < throttled.size() && throttled[i]) {
      ++kept.throttled;
      continue;
    }
    unthrottled.push_back(samples_us[i]);
    if (i < late.size() && late[i]) {
      ++kept.late;
      continue;
    }
    kept.samples_us.push_back(samples_us[i]);
  }
  if (kept.samples_us.size() * 2 < unthrottled.size()) {
    kept.samples_us = std::move(unthrottled);
    kept.kept_all = true;
  }
  return kept;
}

double TimedRunBoundSeconds(double longest_run_seconds) {
  return std::max(kTimedRunFloorSeconds, kTimedRunFactor * longest_run_seconds);
}

absl::Time TimedRunBound::Start(absl::Time deadline) {
  started_ = absl::Now();
  bound_ = absl::Seconds(TimedRunBoundSeconds(absl::ToDoubleSeconds(longest_)));
  bounded_ = longest_ > absl::ZeroDuration() && started_ + bound_ < deadline;
  return bounded_ ? started_ + bound_ : deadline;
}

void TimedRunBound::Finish() { longest_ = std::max(longest_, absl::Now() - started_); }

std::optional<std::string> TimedRunBound::CutMessage() const {
  if (!bounded_) return std::nullopt;
  return absl::StrCat("a timed run took more than ", absl::FormatDuration(bound_), " (",
                      kTimedRunFactor, " x the longest run so far, ",
                      absl::FormatDuration(longest_), "): the kernel hangs on the timed shape?");
}

}  // namespace kerneleval::timing
