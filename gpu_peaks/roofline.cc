#include "gpu_peaks/roofline.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace kerneleval::gpu_peaks {

std::optional<double> PeakFlopsPerSecond(const v1::GpuPeaks& gpu, v1::ComputeType compute_type) {
  if (compute_type == v1::COMPUTE_TYPE_UNSPECIFIED) return std::nullopt;
  for (const v1::PeakFlops& peak : gpu.peaks()) {
    if (peak.compute_type() == compute_type) return peak.flops_per_second();
  }
  return std::nullopt;
}

std::optional<double> FastestAccuratePeakFlopsPerSecond(const v1::GpuPeaks& gpu,
                                                        v1::ComputeType compute_type) {
  const std::optional<double> own = PeakFlopsPerSecond(gpu, compute_type);
  if (!own.has_value()) return std::nullopt;
  // [FLOP/s] of the tensor-core path that matches the type's accuracy, 0 if none.
  double matching = 0.0;
  switch (compute_type) {
    case v1::COMPUTE_TYPE_FP64:
      matching = PeakFlopsPerSecond(gpu, v1::COMPUTE_TYPE_FP64_TC).value_or(0.0);
      break;
    case v1::COMPUTE_TYPE_FP32:
      // Each fp32 product as three TF32 products (big x big, big x small, small x big).
      matching = PeakFlopsPerSecond(gpu, v1::COMPUTE_TYPE_TF32_TC).value_or(0.0) / 3.0;
      break;
    case v1::COMPUTE_TYPE_FP16:
      matching = PeakFlopsPerSecond(gpu, v1::COMPUTE_TYPE_FP16_TC).value_or(0.0);
      break;
    default:
      break;
  }
  return std::max(*own, matching);
}

namespace {

// max(flops / peak, bytes / bandwidth) with `peak` the one `peak_of` gives.
template <class PeakOf>
absl::StatusOr<double> BoundSeconds(const v1::GpuPeaks& gpu, v1::ComputeType compute_type,
                                    double flops, double bytes, PeakOf peak_of) {
  if (!std::isfinite(flops) || flops < 0.0) {
    return absl::InvalidArgumentError(absl::StrCat("flops must be finite and >= 0, got ", flops));
  }
  if (!std::isfinite(bytes) || bytes < 0.0) {
    return absl::InvalidArgumentError(absl::StrCat("bytes must be finite and >= 0, got ", bytes));
  }
  const double bandwidth = gpu.memory_bandwidth_bytes_per_second();  // [bytes/s]
  if (!std::isfinite(bandwidth) || bandwidth <= 0.0) {
    return absl::FailedPreconditionError(
        absl::StrCat(gpu.name(), " has no memory bandwidth in the peak table"));
  }
  const double memory_seconds = bytes / bandwidth;
  if (flops == 0.0) return memory_seconds;  // a copy needs no arithmetic peak

  const std::optional<double> peak = peak_of(gpu, compute_type);  // [FLOP/s]
  if (!peak.has_value()) {
    return absl::NotFoundError(absl::StrCat(gpu.name(), " has no ",
                                            v1::ComputeType_Name(compute_type),
                                            " peak in the peak table: no roofline"));
  }
  if (!std::isfinite(*peak) || *peak <= 0.0) {
    return absl::FailedPreconditionError(absl::StrCat(gpu.name(), " has a non-positive ",
                                                      v1::ComputeType_Name(compute_type), " peak"));
  }
  return std::max(flops / *peak, memory_seconds);
}

}  // namespace

absl::StatusOr<double> RooflineMinSeconds(const v1::GpuPeaks& gpu, v1::ComputeType compute_type,
                                          double flops, double bytes) {
  return BoundSeconds(gpu, compute_type, flops, bytes, PeakFlopsPerSecond);
}

absl::StatusOr<double> RooflineFloorSeconds(const v1::GpuPeaks& gpu, v1::ComputeType compute_type,
                                            double flops, double bytes) {
  return BoundSeconds(gpu, compute_type, flops, bytes, FastestAccuratePeakFlopsPerSecond);
}

absl::StatusOr<double> RooflineFraction(double t_min_seconds, double t_measured_seconds) {
  if (!std::isfinite(t_measured_seconds) || t_measured_seconds <= 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("measured time must be finite and > 0 s, got ", t_measured_seconds));
  }
  if (!std::isfinite(t_min_seconds) || t_min_seconds < 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("roofline time must be finite and >= 0 s, got ", t_min_seconds));
  }
  return t_min_seconds / t_measured_seconds;
}

}  // namespace kerneleval::gpu_peaks
