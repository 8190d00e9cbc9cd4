// Statistics of timing samples and the rule that says when to stop sampling.
// Pure C++ (no CUDA): the CUDA worker, the CPU backend and the engine share it.
//
// Units: samples are microseconds [µs] of one whole plan (every launch of a
// program on one input set); elapsed times are seconds [s] of wall clock.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "kerneleval/internal/worker.pb.h"

namespace kerneleval::timing {

struct SampleStats {
  uint32_t samples = 0;
  double median = 0;  // [µs]
  double mean = 0;    // [µs]
  double stdev = 0;   // [µs] sample standard deviation (n - 1); 0 for n < 2
  double min = 0;     // [µs]
  double max = 0;     // [µs]
  // Standard error of the median over the median (dimensionless); +Inf when it
  // cannot be estimated (fewer than kMinSamplesForStderr samples, or a median
  // that is not positive).
  double rel_stderr_median = 0;
};

// Below this many samples the standard error of the median is not estimated.
inline constexpr uint32_t kMinSamplesForStderr = 3;

// Median, mean, stdev, extremes and the relative standard error of the median
// of `samples_us`. Empty input: all zero, rel_stderr_median = +Inf.
// NaN samples must not be passed (the caller drops failed samples).
SampleStats Summarize(std::span<const double> samples_us);
// The same for a ProgramTiming's samples_us field.
SampleStats Summarize(const google::protobuf::RepeatedField<double>& samples_us);

// Distribution-free standard error of the median [same unit as the samples]
// (McKean-Schrader order-statistics estimate; see sampling.cc for why).
// +Inf for fewer than kMinSamplesForStderr samples.
double MedianStandardError(std::span<const double> samples_us);

// Defaults used where a TimingConfig field is zero: 3 warm-up runs per
// program, at least 10 samples and 0.2 s, at most 5 s, stop at a relative
// standard error of the median below 0.5 %, 4 input sets, L2 flushed.
internal::TimingConfig DefaultTimingConfig();

// `requested` with every zero field (proto3's "unset") replaced by the
// default. A config with no field set at all is DefaultTimingConfig() (L2
// flush on); otherwise flush_l2, which cannot be told apart from unset, is
// taken as given.
internal::TimingConfig WithDefaults(const internal::TimingConfig& requested);

// When to stop sampling one program. The config's values are used as given
// (apply WithDefaults first for a request's config).
//   - never before min_samples samples and min_seconds of wall clock;
//   - then as soon as the relative standard error of the median is below
//     target_rel_stderr (Converged);
//   - always at max_seconds of wall clock, converged or not.
// Wall clock, not summed kernel time, for min_seconds: its purpose is to spread
// samples over enough time to see slow drifts (clock ramps, a neighbour's
// load), which is a property of the span of time sampled.
class StoppingRule {
 public:
  explicit StoppingRule(const internal::TimingConfig& config);

  // `elapsed_seconds`: wall clock since the first timed sample [s].
  [[nodiscard]] bool ShouldStop(std::span<const double> samples_us, double elapsed_seconds) const;
  // Enough samples, and a relative standard error of the median below target.
  [[nodiscard]] bool Converged(std::span<const double> samples_us) const;
  // The hard cap alone.
  [[nodiscard]] bool TimedOut(double elapsed_seconds) const;

  [[nodiscard]] const internal::TimingConfig& config() const { return config_; }

 private:
  internal::TimingConfig config_;
};

// Reference median over candidate median: > 1 means the candidate is faster.
// 0 when either median is not positive (no valid measurement).
double Speedup(const SampleStats& reference, const SampleStats& candidate);

// True when `t_us` is below `factor` times `t_min_us`, the least time the
// work can take (the engine passes gpu_peaks::RooflineFloorSeconds: bytes that
// must move / bandwidth, flops / fastest accurate peak): physically impossible, so a failed check
// rather than a record. The factor leaves room for peak tables that are a
// little pessimistic. False when t_min_us is not positive (floor unknown).
bool BelowRooflineFloor(double t_us, double t_min_us, double factor = 0.9);

// How long one run of a timing may take [s of wall clock], given the longest
// run of that timing so far (any program's, warm-ups included): 20 x that, at
// least 2 s. A kernel that hangs only on the timed shape (correct on the
// small correctness shapes) is cut there rather than at the deadline of the
// whole timing.
inline constexpr double kTimedRunFactor = 20;
inline constexpr double kTimedRunFloorSeconds = 2;
double TimedRunBoundSeconds(double longest_run_seconds);

// TimedRunBoundSeconds applied to the runs of one timing, one after another
// (the CPU backend's and the CUDA worker's). The first run has no bound but
// the timing's deadline.
class TimedRunBound {
 public:
  // A run starts now: where it must end, within its bound or at `deadline`,
  // whichever comes first.
  absl::Time Start(absl::Time deadline);
  // The run that started last ended in time: its wall time counts.
  void Finish();
  // After the run that started last timed out: the failure's message when
  // its bound (not the timing's deadline) cut it; nullopt otherwise.
  [[nodiscard]] std::optional<std::string> CutMessage() const;

 private:
  absl::Duration longest_ = absl::ZeroDuration();
  absl::Time started_;
  absl::Duration bound_ = absl::ZeroDuration();
  bool bounded_ = false;  // the last run's end was its bound, not the deadline
};

// A sample taken while the SM clock ran below this fraction of the reference
// clock is taken as throttled (nvbench's rule).
inline constexpr double kThrottleFraction = 0.75;

// clock_mhz < fraction * reference_clock_mhz. False when the reference is
// unknown (not positive).
bool IsThrottled(double clock_mhz, double reference_clock_mhz, double fraction = kThrottleFraction);

// The clock a timing run's readings are judged against [MHz]: the highest
// reading of the run, but no higher than the device's maximum clock
// (`nominal_mhz`; a reading above it is noise or forged, and must not make
// the others look throttled). On a device whose clocks are locked or capped
// below that maximum (application clocks, a power cap), the highest reading
// is the locked clock, so its samples are not all throttled. Readings <= 0
// (none taken) do not count; with none at all, `nominal_mhz`.
double ThrottleReferenceMhz(const std::vector<std::vector<double>>& clock_mhz, double nominal_mhz);

// Which samples of an interleaved timing run (programs 0..n-1 in turn, round
// after round) a throttled clock reading drops.
struct ThrottledSamples {
  std::vector<std::vector<bool>> dropped;  // [program][round]
  int throttled = 0;                       // throttled readings
  bool kept_all = false;     // most samples of a program would go: readings suspect, none dropped
  double reference_mhz = 0;  // what the readings were judged against (ThrottleReferenceMhz)
  size_t rounds = 0;         // rounds run
};

// clock_mhz[p][r]: program p's clock reading in round r, taken just before
// its sample (<= 0 or missing: no reading, not throttled). A throttled
// reading drops the n samples that start at it, one of every program: its
// own program's sample and those after it in the round, and those before it
// in the next round. The slow clock hits the programs that run after the
// reading (a heavy kernel that heats the GPU shows in the next program's
// reading), every program loses one sample, and none a sample that ran
// before the reading: dropping the whole round let a candidate that saw its
// own sample was slow drive the clock down for the next program's reading
// and have that sample dropped (red team rt13 #1); dropping the throttled
// program's sample alone compared it against the others' samples of the
// slow stretch. Nothing is dropped when more than half of any program's
// samples would be.
ThrottledSamples FindThrottledSamples(const std::vector<std::vector<double>>& clock_mhz,
                                      double nominal_mhz, double fraction = kThrottleFraction);

// The samples that count, and what was dropped.
struct KeptSamples {
  std::vector<double> samples_us;
  int throttled = 0;      // samples dropped for a throttled reading
  int late = 0;           // samples flagged late and not dropped for a throttled reading
  bool kept_all = false;  // dropping the late ones would have left fewer than half: none dropped
};

// One program's samples (one per round) less those `throttled` drops (its
// row of ThrottledSamples::dropped) and those flagged in `late` (e.g. a
// stream hold that timed out, so the sample may hold launch latency: the
// program's own), unless dropping the late ones would leave fewer than half
// of what `throttled` left: then every sample `throttled` left is kept.
// Either vector may be shorter than the samples (missing: not dropped).
KeptSamples KeepSamples(std::span<const double> samples_us, const std::vector<bool>& throttled,
                        const std::vector<bool>& late);

}  // namespace kerneleval::timing
