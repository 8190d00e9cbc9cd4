#include "evaluator/data/prng.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "evaluator/data/dtype.h"

namespace kerneleval::data {

// element_generator.h names dtypes and distribution kinds by their wire numbers.
constexpr bool SameNumber(uint32_t ours, int wire) { return static_cast<int>(ours) == wire; }
static_assert(SameNumber(kElementF64, v1::DTYPE_F64) && SameNumber(kElementF32, v1::DTYPE_F32) &&
              SameNumber(kElementF16, v1::DTYPE_F16) && SameNumber(kElementBF16, v1::DTYPE_BF16) &&
              SameNumber(kElementI64, v1::DTYPE_I64) && SameNumber(kElementI32, v1::DTYPE_I32) &&
              SameNumber(kElementI8, v1::DTYPE_I8) && SameNumber(kElementU8, v1::DTYPE_U8) &&
              SameNumber(kElementBool, v1::DTYPE_BOOL));
static_assert(SameNumber(kDrawUniform, v1::Distribution::kUniform) &&
              SameNumber(kDrawNormal, v1::Distribution::kNormal) &&
              SameNumber(kDrawPareto, v1::Distribution::kPareto) &&
              SameNumber(kDrawIntRange, v1::Distribution::kIntRange));

namespace {

// DrawElementWords for kLanes consecutive indices, the lanes' rounds interleaved:
// one Philox call is a chain of 10 dependent multiplies (~50 cycles), and
// running independent chains side by side fills the pipeline (~3x faster).
constexpr int kLanes = 8;

void DrawWordsBatch(uint64_t case_seed, uint64_t name_hash, uint64_t first_index,
                    ElementWords (&words)[kLanes]) {
  uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int l = 0; l < kLanes; ++l) {
    const uint64_t index = first_index + l;
    c0[l] = static_cast<uint32_t>(index);
    c1[l] = static_cast<uint32_t>(index >> 32);
    c2[l] = static_cast<uint32_t>(name_hash);
    c3[l] = static_cast<uint32_t>(name_hash >> 32);
  }
  uint32_t k0 = static_cast<uint32_t>(case_seed);
  uint32_t k1 = static_cast<uint32_t>(case_seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += kPhiloxWeyl0;
      k1 += kPhiloxWeyl1;
    }
    for (int l = 0; l < kLanes; ++l) PhiloxRound(c0[l], c1[l], c2[l], c3[l], k0, k1);
  }
  for (int l = 0; l < kLanes; ++l) {
    words[l] = {(static_cast<uint64_t>(c0[l]) << 32) | c1[l],
                (static_cast<uint64_t>(c2[l]) << 32) | c3[l]};
  }
}

// One ulp below `value` in a floating dtype (value is representable there).
double NextBelow(double value, v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_F64:
      return std::nextafter(value, -std::numeric_limits<double>::infinity());
    case v1::DTYPE_F32:
      return std::nextafter(static_cast<float>(value), -std::numeric_limits<float>::infinity());
    case v1::DTYPE_F16:
    case v1::DTYPE_BF16: {
      const bool half = dtype == v1::DTYPE_F16;
      uint16_t bits = half ? FloatToHalfBits(static_cast<float>(value))
                           : FloatToBFloat16Bits(static_cast<float>(value));
      if ((bits & 0x7FFFu) == 0) {
        bits = 0x8001u;  // below +-0: the smallest negative subnormal
      } else if (bits & 0x8000u) {
        ++bits;  // negative: larger magnitude
      } else {
        --bits;
      }
      return half ? HalfBitsToFloat(bits) : BFloat16BitsToFloat(bits);
    }
    default:
      return value;
  }
}

}  // namespace

PhiloxCounter Philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  Philox4x32_10InPlace(counter[0], counter[1], counter[2], counter[3], key[0], key[1]);
  return counter;
}

uint64_t HashBufferName(std::string_view name) {
  uint64_t hash = 0xCBF29CE484222325ull;  // FNV-1a 64 offset basis
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001B3ull;  // FNV prime
  }
  return hash;
}

v1::Distribution DefaultDistribution(v1::DType dtype) {
  v1::Distribution distribution;
  if (IsFloatingDType(dtype)) {
    distribution.mutable_uniform()->set_low(-1.0);
    distribution.mutable_uniform()->set_high(1.0);
  } else if (dtype == v1::DTYPE_BOOL) {
    distribution.mutable_int_range()->set_low(0);
    distribution.mutable_int_range()->set_high(1);
  } else {
    distribution.mutable_int_range()->set_low(0);
    distribution.mutable_int_range()->set_high(100);
  }
  return distribution;
}

absl::Status ValidateDistribution(const v1::Distribution& distribution, v1::DType dtype) {
  const auto finite = [](double x) { return std::isfinite(x); };
  switch (distribution.kind_case()) {
    case v1::Distribution::KIND_NOT_SET:
      return absl::OkStatus();
    case v1::Distribution::kUniform: {
      const auto& u = distribution.uniform();
      if (!finite(u.low()) || !finite(u.high()) || !(u.low() < u.high())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "uniform distribution needs finite low < high, got [", u.low(), ", ", u.high(), ")"));
      }
      return absl::OkStatus();
    }
    case v1::Distribution::kNormal: {
      const auto& n = distribution.normal();
      if (!finite(n.mean()) || !finite(n.stddev()) || n.stddev() < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("normal distribution needs a finite mean and stddev >= 0, got mean ",
                         n.mean(), " stddev ", n.stddev()));
      }
      if (n.spikes_per_2048() > 2048 || !finite(n.spike())) {
        return absl::InvalidArgumentError(
            absl::StrCat("normal distribution needs spikes_per_2048 <= 2048 and a finite spike, "
                         "got ",
                         n.spikes_per_2048(), " and ", n.spike()));
      }
      return absl::OkStatus();
    }
    case v1::Distribution::kPareto: {
      const auto& p = distribution.pareto();
      if (!finite(p.scale()) || !finite(p.alpha()) || !(p.scale() > 0) || !(p.alpha() > 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("pareto distribution needs finite scale > 0 and alpha > 0, got scale ",
                         p.scale(), " alpha ", p.alpha()));
      }
      return absl::OkStatus();
    }
    case v1::Distribution::kIntRange: {
      const auto& r = distribution.int_range();
      if (r.low() > r.high()) {
        return absl::InvalidArgumentError(
            absl::StrCat("int_range needs low <= high, got [", r.low(), ", ", r.high(), "]"));
      }
      if (IsIntegerDType(dtype) || dtype == v1::DTYPE_BOOL) {
        const double lowest = dtype == v1::DTYPE_BOOL ? 0.0 : -DTypeMaxFinite(dtype) - 1.0;
        const double lowest_allowed = (dtype == v1::DTYPE_U8) ? 0.0 : lowest;
        if (static_cast<double>(r.low()) < lowest_allowed ||
            static_cast<double>(r.high()) > DTypeMaxFinite(dtype)) {
          return absl::InvalidArgumentError(absl::StrCat("int_range [", r.low(), ", ", r.high(),
                                                         "] does not fit ",
                                                         std::string(DTypeName(dtype))));
        }
      }
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError("unknown distribution kind");
}

ElementSampler MakeElementSampler(const v1::Distribution& distribution, v1::DType dtype) {
  const v1::Distribution d = distribution.kind_case() == v1::Distribution::KIND_NOT_SET
                                 ? DefaultDistribution(dtype)
                                 : distribution;
  ElementSampler sampler;
  sampler.dtype = static_cast<uint64_t>(dtype);
  sampler.kind = static_cast<uint64_t>(d.kind_case());
  sampler.max_finite = DTypeMaxFinite(dtype);
  switch (d.kind_case()) {
    case v1::Distribution::kUniform: {
      sampler.a = d.uniform().low();
      sampler.b = d.uniform().high() - d.uniform().low();
      sampler.high = d.uniform().high();
      // The largest value of the dtype below `high`, for draws that round up
      // to it: the rounded `high` itself when it rounds down, else one ulp
      // below.
      if (IsFloatingDType(dtype)) {
        const double rounded_high = RoundToDType(sampler.high, dtype);
        sampler.below_high =
            rounded_high < sampler.high ? rounded_high : NextBelow(rounded_high, dtype);
      }
      break;
    }
    case v1::Distribution::kNormal:
      sampler.a = d.normal().mean();
      sampler.b = d.normal().stddev();
      sampler.spikes_per_2048 = d.normal().spikes_per_2048();
      sampler.spike = d.normal().spike();
      break;
    case v1::Distribution::kPareto:
      sampler.a = d.pareto().scale();
      sampler.b = -1.0 / d.pareto().alpha();
      sampler.symmetric = d.pareto().symmetric() ? 1 : 0;
      break;
    case v1::Distribution::kIntRange:
      sampler.int_low = d.int_range().low();
      sampler.int_high = d.int_range().high();
      break;
    case v1::Distribution::KIND_NOT_SET:
      break;
  }
  return sampler;
}

double SampleValue(const v1::Distribution& distribution, v1::DType dtype, uint64_t case_seed,
                   uint64_t name_hash, uint64_t index) {
  return element_internal::Sample(MakeElementSampler(distribution, dtype),
                                  DrawElementWords(case_seed, name_hash, index));
}

void GenerateInputRange(const internal::BufferSpec& spec, uint64_t case_seed, uint64_t begin,
                        uint64_t end, void* out) {
  if (DTypeSize(spec.dtype()) == 0) return;
  const ElementSampler sampler = MakeElementSampler(spec.distribution(), spec.dtype());
  const uint64_t name_hash = HashBufferName(spec.name());
  ElementWords batch[kLanes];
  for (uint64_t first = begin; first < end; first += kLanes) {
    DrawWordsBatch(case_seed, name_hash, first, batch);
    const uint64_t count = std::min<uint64_t>(kLanes, end - first);
    for (uint64_t j = 0; j < count; ++j) WriteGeneratedElement(sampler, batch[j], first + j, out);
  }
}

std::string GenerateInput(const internal::BufferSpec& spec, uint64_t case_seed, unsigned threads) {
  const size_t element_size = DTypeSize(spec.dtype());
  const uint64_t elements = spec.elements();
  std::string bytes(element_size * elements, '\0');
  if (element_size == 0 || elements == 0) return bytes;
  // Below ~64K elements a thread costs more than it saves.
  const uint64_t max_useful = std::max<uint64_t>(1, elements / 65536);
  const uint64_t workers = std::clamp<uint64_t>(threads, 1, max_useful);
  if (workers == 1) {
    GenerateInputRange(spec, case_seed, 0, elements, bytes.data());
    return bytes;
  }
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (uint64_t w = 0; w < workers; ++w) {
    const uint64_t begin = elements * w / workers;
    const uint64_t end = elements * (w + 1) / workers;
    pool.emplace_back([&spec, case_seed, begin, end, out = bytes.data()] {
      GenerateInputRange(spec, case_seed, begin, end, out);
    });
  }
  for (auto& t : pool) t.join();
  return bytes;
}

std::shared_ptr<const std::string> GeneratedInputs::Get(const internal::BufferSpec& spec,
                                                        uint64_t seed) {
  const std::string key = absl::StrCat(seed, ":", spec.SerializeAsString());
  if (auto found = by_key_.find(key); found != by_key_.end()) return found->second;
  auto input = std::make_shared<const std::string>(GenerateInput(spec, seed, threads_));
  ++generated_;
  if (kept_bytes_ + input->size() > max_bytes_) {
    by_key_.clear();
    kept_bytes_ = 0;
  }
  if (input->size() <= max_bytes_) {
    by_key_.emplace(key, input);
    kept_bytes_ += input->size();
  }
  return input;
}

uint64_t TimedInputSeed(uint64_t set_seed, uint64_t round, uint64_t program) {
  // The counter's high words carry a tag: a stream apart from any buffer's
  // values (whose high words are a name's hash).
  constexpr uint32_t kRoundTag = 0x726f756e;  // "roun"
  // Rounds stay far below 2^32 (a timing run lasts seconds), so the round's
  // high word has room for the program; program 0 adds nothing.
  const uint32_t round_high_and_program =
      static_cast<uint32_t>(round >> 32) ^ (static_cast<uint32_t>(program) * 0x9E3779B9u);
  const PhiloxCounter counter = {static_cast<uint32_t>(round), round_high_and_program, kRoundTag,
                                 kRoundTag ^ static_cast<uint32_t>(program >> 32)};
  const PhiloxKey key = {static_cast<uint32_t>(set_seed), static_cast<uint32_t>(set_seed >> 32)};
  const PhiloxCounter words = Philox4x32_10(counter, key);
  return (uint64_t{words[0]} << 32) | words[1];
}

}  // namespace kerneleval::data
