#include "evaluator/data/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "evaluator/data/dtype.h"

namespace kerneleval::data {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

struct Tally {
  uint64_t mismatches = 0;
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  uint64_t first_index = 0;
  double first_got = 0.0;
  double first_expected = 0.0;

  void Mismatch(uint64_t index, double expected, double got) {
    if (mismatches++ == 0) {
      first_index = index;
      first_got = got;
      first_expected = expected;
    }
  }
};

template <typename T>
T LoadRaw(const char* data, uint64_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}

// One tight loop per dtype: `load` is inlined, nothing allocates.
template <typename Load>
void CompareFloating(const char* expected, const char* got, uint64_t elements, double atol,
                     double rtol, double tiny, Load load, Tally& tally) {
  for (uint64_t i = 0; i < elements; ++i) {
    const double e = load(expected, i);
    const double g = load(got, i);
    bool ok;
    if (std::isfinite(e) && std::isfinite(g)) {
      const double diff = std::fabs(g - e);
      const double magnitude = std::fabs(e);
      ok = diff <= atol + rtol * magnitude;
      tally.max_abs_error = std::max(tally.max_abs_error, diff);
      tally.max_rel_error = std::max(tally.max_rel_error, diff / std::max(magnitude, tiny));
    } else {
      // NaN matches only NaN; +-Inf only itself; finite never matches non-finite.
      ok = std::isnan(e) ? std::isnan(g) : e == g;
      // Off by an unbounded amount (an fp16 accumulator that overflowed):
      // reported as an infinite error, not left out of the maximum.
      if (!ok) {
        tally.max_abs_error = std::numeric_limits<double>::infinity();
        tally.max_rel_error = std::numeric_limits<double>::infinity();
      }
    }
    if (!ok) tally.Mismatch(i, e, g);
  }
}

template <typename Int>
void CompareInteger(const char* expected, const char* got, uint64_t elements, double atol,
                    double rtol, Tally& tally) {
  const bool exact = atol == 0.0 && rtol == 0.0;
  for (uint64_t i = 0; i < elements; ++i) {
    const Int e = LoadRaw<Int>(expected, i);
    const Int g = LoadRaw<Int>(got, i);
    if (e == g) continue;
    // |g - e| exactly (it can exceed int64 for i64), then as a double.
    const __int128 wide_diff = static_cast<__int128>(g) - static_cast<__int128>(e);
    const double diff = static_cast<double>(wide_diff < 0 ? -wide_diff : wide_diff);
    const double magnitude = std::fabs(static_cast<double>(e));
    tally.max_abs_error = std::max(tally.max_abs_error, diff);
    tally.max_rel_error = std::max(tally.max_rel_error, diff / std::max(magnitude, 1.0));
    if (exact || !(diff <= atol + rtol * magnitude)) {
      tally.Mismatch(i, static_cast<double>(e), static_cast<double>(g));
    }
  }
}

void FailLayout(v1::OutputCheck& check, uint64_t elements, std::string message,
                std::string* error) {
  check.set_passed(false);
  check.set_elements(elements);
  check.set_mismatches(elements);
  check.set_max_abs_error(kInfinity);
  check.set_max_rel_error(kInfinity);
  if (error != nullptr) *error = std::move(message);
}

}  // namespace

ToleranceValues DefaultTolerance(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_F64:
      return {1e-10, 1e-9};
    case v1::DTYPE_F32:
      return {1e-5, 1e-4};
    case v1::DTYPE_F16:
      return {1e-3, 1e-2};
    case v1::DTYPE_BF16:
      return {1e-2, 2e-2};
    default:
      return {0.0, 0.0};
  }
}

ToleranceValues ResolveTolerance(v1::DType dtype, const v1::Tolerance& tolerance) {
  ToleranceValues values = DefaultTolerance(dtype);
  if (tolerance.has_atol()) values.atol = tolerance.atol();
  if (tolerance.has_rtol()) values.rtol = tolerance.rtol();
  return values;
}

bool ElementMatches(double expected, double got, double atol, double rtol) {
  if (std::isfinite(expected) && std::isfinite(got)) {
    return std::fabs(got - expected) <= atol + rtol * std::fabs(expected);
  }
  return std::isnan(expected) ? std::isnan(got) : expected == got;
}

std::vector<int64_t> UnravelIndex(uint64_t flat_index, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size(), 0);
  for (size_t d = dims.size(); d-- > 0;) {
    const uint64_t extent = static_cast<uint64_t>(std::max<int64_t>(dims[d], 1));
    index[d] = static_cast<int64_t>(flat_index % extent);
    flat_index /= extent;
  }
  return index;
}

v1::OutputCheck CompareTensor(const internal::Tensor& expected, const internal::Tensor& got,
                              const std::vector<int64_t>& dims, double atol, double rtol,
                              std::string* error) {
  v1::OutputCheck check;
  check.set_output(expected.name());
  check.set_atol(atol);
  check.set_rtol(rtol);
  if (error != nullptr) error->clear();

  const v1::DType dtype = expected.dtype();
  const uint64_t elements = expected.elements();
  const size_t element_size = DTypeSize(dtype);
  if (element_size == 0) {
    FailLayout(check, elements,
               absl::StrCat("output ", expected.name(), ": expected tensor has no dtype"), error);
    return check;
  }
  if (got.dtype() != dtype) {
    FailLayout(
        check, elements,
        absl::StrCat("output ", expected.name(), ": dtype ", std::string(DTypeName(got.dtype())),
                     ", expected ", std::string(DTypeName(dtype))),
        error);
    return check;
  }
  if (got.elements() != elements) {
    FailLayout(check, elements,
               absl::StrCat("output ", expected.name(), ": ", got.elements(),
                            " elements, expected ", elements),
               error);
    return check;
  }
  if (expected.data().size() != elements * element_size ||
      got.data().size() != elements * element_size) {
    FailLayout(check, elements,
               absl::StrCat("output ", expected.name(), ": ", got.data().size(),
                            " bytes (expected tensor ", expected.data().size(), "), need ",
                            elements * element_size, " for ", elements, " x ",
                            std::string(DTypeName(dtype))),
               error);
    return check;
  }
  uint64_t dims_product = 1;
  for (const int64_t d : dims) dims_product *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  if (dims_product != elements) {
    FailLayout(check, elements,
               absl::StrCat("output ", expected.name(), ": shape [", absl::StrJoin(dims, ", "),
                            "] has ", dims_product, " elements, the tensors ", elements),
               error);
    return check;
  }

  const char* e = expected.data().data();
  const char* g = got.data().data();
  const double tiny = DTypeSmallestNormal(dtype);
  Tally tally;
  switch (dtype) {
    case v1::DTYPE_F64:
      CompareFloating(e, g, elements, atol, rtol, tiny, LoadRaw<double>, tally);
      break;
    case v1::DTYPE_F32:
      CompareFloating(
          e, g, elements, atol, rtol, tiny,
          [](const char* p, uint64_t i) -> double { return LoadRaw<float>(p, i); }, tally);
      break;
    case v1::DTYPE_F16:
      CompareFloating(
          e, g, elements, atol, rtol, tiny,
          [](const char* p, uint64_t i) -> double {
            return HalfBitsToFloat(LoadRaw<uint16_t>(p, i));
          },
          tally);
      break;
    case v1::DTYPE_BF16:
      CompareFloating(
          e, g, elements, atol, rtol, tiny,
          [](const char* p, uint64_t i) -> double {
            return BFloat16BitsToFloat(LoadRaw<uint16_t>(p, i));
          },
          tally);
      break;
    case v1::DTYPE_I64:
      CompareInteger<int64_t>(e, g, elements, atol, rtol, tally);
      break;
    case v1::DTYPE_I32:
      CompareInteger<int32_t>(e, g, elements, atol, rtol, tally);
      break;
    case v1::DTYPE_I8:
      CompareInteger<int8_t>(e, g, elements, atol, rtol, tally);
      break;
    case v1::DTYPE_U8:
    case v1::DTYPE_BOOL:
      CompareInteger<uint8_t>(e, g, elements, atol, rtol, tally);
      break;
    default:
      break;
  }

  check.set_elements(elements);
  check.set_mismatches(tally.mismatches);
  check.set_passed(tally.mismatches == 0);
  check.set_max_abs_error(tally.max_abs_error);
  check.set_max_rel_error(tally.max_rel_error);
  if (tally.mismatches > 0) {
    v1::Mismatch* first = check.mutable_first_mismatch();
    first->set_flat_index(tally.first_index);
    for (const int64_t i : UnravelIndex(tally.first_index, dims)) first->add_index(i);
    first->set_got(tally.first_got);
    first->set_expected(tally.first_expected);
  }
  return check;
}

absl::StatusOr<std::vector<v1::OutputCheck>> CompareOutputs(
    const google::protobuf::RepeatedPtrField<internal::CheckedOutput>& outputs,
    const internal::CaseResult& expected, const internal::CaseResult& got) {
  auto find = [](const internal::CaseResult& result,
                 const std::string& name) -> const internal::Tensor* {
    for (const internal::Tensor& tensor : result.outputs()) {
      if (tensor.name() == name) return &tensor;
    }
    return nullptr;
  };
  std::vector<v1::OutputCheck> checks;
  checks.reserve(static_cast<size_t>(outputs.size()));
  for (const internal::CheckedOutput& output : outputs) {
    const internal::Tensor* want = find(expected, output.name());
    const internal::Tensor* have = find(got, output.name());
    if (want == nullptr || have == nullptr) {
      return absl::InternalError(absl::StrCat("output ", output.name(), " missing from a run"));
    }
    const std::vector<int64_t> dims(output.dims().begin(), output.dims().end());
    checks.push_back(CompareTensor(*want, *have, dims, output.atol(), output.rtol()));
    checks.back().set_output(output.name());
  }
  return checks;
}

void AppendOutput(const internal::BufferSpec& spec, const void* data,
                  internal::CaseResult* result) {
  internal::Tensor* tensor = result->add_outputs();
  tensor->set_name(spec.name());
  tensor->set_dtype(spec.dtype());
  tensor->set_elements(spec.elements());
  tensor->set_data(static_cast<const char*>(data), spec.elements() * DTypeSize(spec.dtype()));
}

}  // namespace kerneleval::data
