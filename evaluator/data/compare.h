// Output checking: candidate vs expected, element by element.
//
// An element passes when |got - expected| <= atol + rtol * |expected|, both
// finite. Non-finite values never get the benefit of a tolerance:
//   expected NaN   passes only if got is NaN (any payload);
//   expected +Inf  passes only if got is +Inf (likewise -Inf);
//   expected finite fails if got is NaN or +-Inf.
// Integer and bool dtypes compare exactly (as int64, no rounding through
// double) unless the problem sets a tolerance; bool compares the stored byte,
// so the poison byte 0xFF never equals true.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "kerneleval/internal/worker.pb.h"
#include "kerneleval/v1/kerneleval.pb.h"
#include "kerneleval/v1/problem.pb.h"

namespace kerneleval::data {

struct ToleranceValues {
  double atol = 0.0;
  double rtol = 0.0;
};

// Defaults per dtype. They are tight enough that an fp32 problem computed in
// fp16 (relative rounding error up to 2^-11 = 4.9e-4) fails, and loose enough
// for honest fp32 reorderings (sums in another order: a few ulp, ~1e-6):
//   f64  atol 1e-10 rtol 1e-9
//   f32  atol 1e-5  rtol 1e-4
//   f16  atol 1e-3  rtol 1e-2   (half ulp at 1.0 is 4.9e-4)
//   bf16 atol 1e-2  rtol 2e-2   (half ulp at 1.0 is 3.9e-3)
//   i64 i32 i8 u8 bool: exact (0, 0)
ToleranceValues DefaultTolerance(v1::DType dtype);

// The problem's tolerance with each unset field taken from DefaultTolerance.
ToleranceValues ResolveTolerance(v1::DType dtype, const v1::Tolerance& tolerance);

// The per-element rule above, for floating-point values.
bool ElementMatches(double expected, double got, double atol, double rtol);

// Row-major multi-dimensional index of a flat index (dims empty: a scalar).
std::vector<int64_t> UnravelIndex(uint64_t flat_index, const std::vector<int64_t>& dims);

// Appends output buffer `spec` to `result`, its bytes copied from `data`
// (spec.elements() * DTypeSize(spec.dtype()) of them): what every backend
// returns of a run.
void AppendOutput(const internal::BufferSpec& spec, const void* data, internal::CaseResult* result);

// Compares `got` with `expected` (same name, dtype and element count, both
// with elements * DTypeSize bytes of data). `dims` is the output's shape: its
// product must equal the element count (empty dims: one element).
//
// Fills output (expected's name), passed, elements, mismatches, atol, rtol,
// max_abs_error and max_rel_error (relative error: |got - expected| /
// max(|expected|, smallest normal of the dtype); both infinite when a pair
// mismatches with a non-finite value on either side, e.g. Inf where a finite
// value was expected), and first_mismatch (flat index, index per dimension, got,
// expected). shape_label, shape and trial are the caller's to fill.
//
// A dtype, element-count, byte-size or dims mismatch is a failed check with
// every element counted as a mismatch and infinite errors; `error`, when not
// null, receives a one-line explanation (empty when the layouts agree).
v1::OutputCheck CompareTensor(const internal::Tensor& expected, const internal::Tensor& got,
                              const std::vector<int64_t>& dims, double atol, double rtol,
                              std::string* error = nullptr);

// Compares each of `outputs` (name, shape, tolerance) of `got` with the
// same of `expected`, by CompareTensor: one check per output, in order.
// The timed outputs' check, in the CUDA worker and (for backends that send
// the outputs back) in the engine. An output missing from either run is an
// internal error.
absl::StatusOr<std::vector<v1::OutputCheck>> CompareOutputs(
    const google::protobuf::RepeatedPtrField<internal::CheckedOutput>& outputs,
    const internal::CaseResult& expected, const internal::CaseResult& got);

}  // namespace kerneleval::data
