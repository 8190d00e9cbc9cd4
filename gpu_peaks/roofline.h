// Roofline bounds from a GPU's peaks: the least time a kernel can take given the work it
// must do. Pure arithmetic; the evaluator decides the FLOP and byte counts.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "kerneleval/v1/common.pb.h"
#include "kerneleval/v1/gpu_peaks.pb.h"

namespace kerneleval::gpu_peaks {

// The dense peak [FLOP/s] of `gpu` for `compute_type`, or nullopt when the table has none
// (e.g. FP8 tensor cores on an A100, or COMPUTE_TYPE_UNSPECIFIED).
[[nodiscard]] std::optional<double> PeakFlopsPerSecond(const v1::GpuPeaks& gpu,
                                                       v1::ComputeType compute_type);

// t_min [s] = max(flops / peak[compute_type], bytes / memory bandwidth), with flops [FLOP]
// and bytes [bytes] the work the kernel cannot avoid.
// Errors:
//   INVALID_ARGUMENT   flops or bytes negative, NaN or infinite;
//   NOT_FOUND          flops > 0 and the GPU has no peak for compute_type: no roofline
//                      (with flops == 0, e.g. a copy, no peak is needed);
//   FAILED_PRECONDITION the GPU has no positive bandwidth (a table that was not validated).
// flops == bytes == 0 gives 0.
[[nodiscard]] absl::StatusOr<double> RooflineMinSeconds(const v1::GpuPeaks& gpu,
                                                        v1::ComputeType compute_type, double flops,
                                                        double bytes);

// The fastest arithmetic [FLOP/s] on `gpu` that keeps `compute_type`'s accuracy: its own
// peak, or tensor cores that match it: FP64 tensor cores for FP64; three TF32 passes for
// FP32 (the 3xTF32 split of CUTLASS, fp32-accurate); FP16 tensor cores (fp32
// accumulation) for FP16. nullopt where PeakFlopsPerSecond has none. For the floor below
// which a time is impossible, not for the roofline fraction: a kernel may legally beat
// the datasheet peak of its problem's compute type this way (a 3xTF32 GEMM runs ~2.5x
// past the FP32 CUDA-core peak on an H100).
[[nodiscard]] std::optional<double> FastestAccuratePeakFlopsPerSecond(const v1::GpuPeaks& gpu,
                                                                      v1::ComputeType compute_type);

// t_floor [s] = max(flops / FastestAccuratePeakFlopsPerSecond, bytes / memory bandwidth):
// the least time any kernel doing this work can take, the bytes being the traffic it
// cannot avoid (the caller leaves out what can stay in L2). Errors as RooflineMinSeconds.
[[nodiscard]] absl::StatusOr<double> RooflineFloorSeconds(const v1::GpuPeaks& gpu,
                                                          v1::ComputeType compute_type,
                                                          double flops, double bytes);

// The fraction of the roofline a measurement reached: t_min / t_measured, both [s].
// 1 means at the roofline; above 1 means faster than the peaks allow (the caller treats
// that as a failed sanity check, not a record). INVALID_ARGUMENT if t_measured is not
// finite and > 0, or t_min is negative or not finite.
[[nodiscard]] absl::StatusOr<double> RooflineFraction(double t_min_seconds,
                                                      double t_measured_seconds);

}  // namespace kerneleval::gpu_peaks
