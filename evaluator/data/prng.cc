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
#include "evaluator/data/portable_math.h"

namespace kerneleval::data {
namespace {

constexpr uint32_t kPhiloxMultiplier0 = 0xD2511F53u;
constexpr uint32_t kPhiloxMultiplier1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kPhiloxWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1
constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;

struct Words {
  uint64_t first;   // w0:w1
  uint64_t second;  // w2:w3
};

Words DrawWords(uint64_t case_seed, uint64_t name_hash, uint64_t index) {
  const PhiloxCounter counter = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32),
                                 static_cast<uint32_t>(name_hash),
                                 static_cast<uint32_t>(name_hash >> 32)};
  const PhiloxKey key = {static_cast<uint32_t>(case_seed), static_cast<uint32_t>(case_seed >> 32)};
  const PhiloxCounter w = Philox4x32_10(counter, key);
  return {(static_cast<uint64_t>(w[0]) << 32) | w[1], (static_cast<uint64_t>(w[2]) << 32) | w[3]};
}

// DrawWords for kLanes consecutive indices, the lanes' rounds interleaved:
// one Philox call is a chain of 10 dependent multiplies (~50 cycles), and
// running independent chains side by side fills the pipeline (~3x faster).
constexpr int kLanes = 8;

void DrawWordsBatch(uint64_t case_seed, uint64_t name_hash, uint64_t first_index,
                    Words (&words)[kLanes]) {
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
    for (int l = 0; l < kLanes; ++l) {
      const uint64_t product0 = static_cast<uint64_t>(kPhiloxMultiplier0) * c0[l];
      const uint64_t product1 = static_cast<uint64_t>(kPhiloxMultiplier1) * c2[l];
      const uint32_t n0 = static_cast<uint32_t>(product1 >> 32) ^ c1[l] ^ k0;
      const uint32_t n2 = static_cast<uint32_t>(product0 >> 32) ^ c3[l] ^ k1;
      c1[l] = static_cast<uint32_t>(product1);
      c3[l] = static_cast<uint32_t>(product0);
      c0[l] = n0;
      c2[l] = n2;
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    words[l] = {(static_cast<uint64_t>(c0[l]) << 32) | c1[l],
                (static_cast<uint64_t>(c2[l]) << 32) | c3[l]};
  }
}

double UnitInterval(uint64_t bits) {  // [0, 1)
  return static_cast<double>(bits >> 11) * kTwoToMinus53;
}

// A distribution flattened once per buffer, so that the per-element loop
// touches no protobuf accessors and constructs nothing.
struct Sampler {
  v1::Distribution::KindCase kind = v1::Distribution::KIND_NOT_SET;
  double a = 0.0;     // uniform low, normal mean, Pareto scale
  double b = 0.0;     // uniform high - low, normal stddev, Pareto -1/alpha
  double high = 0.0;  // uniform high (low + (high - low) may differ from it by an ulp)
  bool symmetric = false;
  int64_t int_low = 0;
  int64_t int_high = 0;

  Sampler(const v1::Distribution& distribution, v1::DType dtype) {
    const v1::Distribution d = distribution.kind_case() == v1::Distribution::KIND_NOT_SET
                                   ? DefaultDistribution(dtype)
                                   : distribution;
    kind = d.kind_case();
    switch (kind) {
      case v1::Distribution::kUniform:
        a = d.uniform().low();
        b = d.uniform().high() - d.uniform().low();
        high = d.uniform().high();
        break;
      case v1::Distribution::kNormal:
        a = d.normal().mean();
        b = d.normal().stddev();
        break;
      case v1::Distribution::kPareto:
        a = d.pareto().scale();
        b = -1.0 / d.pareto().alpha();
        symmetric = d.pareto().symmetric();
        break;
      case v1::Distribution::kIntRange:
        int_low = d.int_range().low();
        int_high = d.int_range().high();
        break;
      case v1::Distribution::KIND_NOT_SET:
        break;
    }
  }
};

int64_t DrawIntRange(int64_t low, int64_t high, uint64_t bits) {
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) + 1;
  // span == 0 means the whole 64-bit range. Multiply-shift (Lemire) keeps it
  // exact and branch-free; its bias is below span / 2^64.
  const uint64_t offset =
      span == 0 ? bits : static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * span) >> 64);
  return static_cast<int64_t>(static_cast<uint64_t>(low) + offset);
}

template <typename Int>
Int SaturateInt(int64_t value) {
  return static_cast<Int>(
      std::clamp<int64_t>(value, std::numeric_limits<Int>::min(), std::numeric_limits<Int>::max()));
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

void StoreInteger(void* out, v1::DType dtype, uint64_t index, int64_t value) {
  char* bytes = static_cast<char*>(out);
  switch (dtype) {
    case v1::DTYPE_I64: {
      std::memcpy(bytes + index * 8, &value, 8);
      break;
    }
    case v1::DTYPE_I32: {
      const int32_t v = SaturateInt<int32_t>(value);
      std::memcpy(bytes + index * 4, &v, 4);
      break;
    }
    case v1::DTYPE_I8: {
      const int8_t v = SaturateInt<int8_t>(value);
      std::memcpy(bytes + index, &v, 1);
      break;
    }
    case v1::DTYPE_U8: {
      const uint8_t v = SaturateInt<uint8_t>(value);
      std::memcpy(bytes + index, &v, 1);
      break;
    }
    case v1::DTYPE_BOOL:
      bytes[index] = value != 0 ? 1 : 0;
      break;
    default: {  // a floating dtype: saturate, never Inf
      const double max_finite = DTypeMaxFinite(dtype);
      WriteElement(out, dtype, index,
                   std::clamp(static_cast<double>(value), -max_finite, max_finite));
      break;
    }
  }
}

}  // namespace

PhiloxCounter Philox4x32_10(PhiloxCounter counter, PhiloxKey key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kPhiloxWeyl0;
      key[1] += kPhiloxWeyl1;
    }
    const uint64_t product0 = static_cast<uint64_t>(kPhiloxMultiplier0) * counter[0];
    const uint64_t product1 = static_cast<uint64_t>(kPhiloxMultiplier1) * counter[2];
    counter = {static_cast<uint32_t>(product1 >> 32) ^ counter[1] ^ key[0],
               static_cast<uint32_t>(product1),
               static_cast<uint32_t>(product0 >> 32) ^ counter[3] ^ key[1],
               static_cast<uint32_t>(product0)};
  }
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

namespace {

double Sample(const Sampler& sampler, const Words& words) {
  switch (sampler.kind) {
    case v1::Distribution::kUniform:
      return sampler.a + sampler.b * UnitInterval(words.first);
    case v1::Distribution::kNormal: {
      const double u1 = 1.0 - UnitInterval(words.first);  // (0, 1]: log is finite
      const double u2 = UnitInterval(words.second);
      const double radius = std::sqrt(-2.0 * PortableLog(u1));  // sqrt is correctly rounded
      return sampler.a + sampler.b * (radius * PortableCosTwoPi(u2));
    }
    case v1::Distribution::kPareto: {
      const double u = 1.0 - UnitInterval(words.first);  // (0, 1]
      const double magnitude = sampler.a * PortableExp(PortableLog(u) * sampler.b);
      const bool negative = sampler.symmetric && ((words.second >> 32) & 1u);
      return negative ? -magnitude : magnitude;
    }
    case v1::Distribution::kIntRange:
      return static_cast<double>(DrawIntRange(sampler.int_low, sampler.int_high, words.first));
    case v1::Distribution::KIND_NOT_SET:
      break;
  }
  return 0.0;
}

}  // namespace

double SampleValue(const v1::Distribution& distribution, v1::DType dtype, uint64_t case_seed,
                   uint64_t name_hash, uint64_t index) {
  return Sample(Sampler(distribution, dtype), DrawWords(case_seed, name_hash, index));
}

void GenerateInputRange(const internal::BufferSpec& spec, uint64_t case_seed, uint64_t begin,
                        uint64_t end, void* out) {
  const v1::DType dtype = spec.dtype();
  if (DTypeSize(dtype) == 0) return;
  const Sampler sampler(spec.distribution(), dtype);
  const uint64_t name_hash = HashBufferName(spec.name());

  if (sampler.kind == v1::Distribution::kIntRange) {
    for (uint64_t i = begin; i < end; ++i) {
      const Words words = DrawWords(case_seed, name_hash, i);
      StoreInteger(out, dtype, i, DrawIntRange(sampler.int_low, sampler.int_high, words.first));
    }
    return;
  }
  if (!IsFloatingDType(dtype)) {
    for (uint64_t i = begin; i < end; ++i) {
      const double value = Sample(sampler, DrawWords(case_seed, name_hash, i));
      // floor, saturated to the int64 range (2^63 - 1024 is the largest double
      // below 2^63); StoreInteger then saturates to the dtype.
      const double floored = std::isnan(value) ? 0.0 : std::floor(value);
      const double saturated = std::clamp(floored, -9223372036854775808.0, 9223372036854774784.0);
      StoreInteger(out, dtype, i, static_cast<int64_t>(saturated));
    }
    return;
  }
  const bool uniform = sampler.kind == v1::Distribution::kUniform;
  const double high = sampler.high;
  // The largest value of the dtype below `high`, for draws that round up to
  // it: the rounded `high` itself when it rounds down, else one ulp below.
  double below_high = 0.0;
  if (uniform) {
    const double rounded_high = RoundToDType(high, dtype);
    below_high = rounded_high < high ? rounded_high : NextBelow(rounded_high, dtype);
  }
  const double max_finite = DTypeMaxFinite(dtype);
  Words batch[kLanes];
  for (uint64_t first = begin; first < end; first += kLanes) {
    DrawWordsBatch(case_seed, name_hash, first, batch);
    const uint64_t count = std::min<uint64_t>(kLanes, end - first);
    for (uint64_t j = 0; j < count; ++j) {
      double value = Sample(sampler, batch[j]);
      value = std::clamp(value, -max_finite, max_finite);  // heavy tails saturate, never Inf
      if (uniform && RoundToDType(value, dtype) >= high) value = below_high;
      WriteElement(out, dtype, first + j, value);
    }
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
  std::shared_ptr<const std::string>& input =
      by_key_[absl::StrCat(seed, ":", spec.SerializeAsString())];
  if (!input) input = std::make_shared<const std::string>(GenerateInput(spec, seed, threads_));
  return input;
}

uint64_t TimedInputRotation(uint64_t set_seed, uint64_t round, uint64_t program,
                            std::string_view buffer_name, uint64_t elements) {
  if (elements <= 1) return 0;
  const uint64_t name = HashBufferName(buffer_name);
  // The name words carry a tag: a stream apart from this buffer's values.
  constexpr uint32_t kRotationTag = 0x726f7461;  // "rota"
  // Rounds stay far below 2^32 (a timing run lasts seconds), so the round's
  // high word has room for the program; program 0 adds nothing.
  const uint32_t round_high_and_program =
      static_cast<uint32_t>(round >> 32) ^ (static_cast<uint32_t>(program) * 0x9E3779B9u);
  const PhiloxCounter counter = {static_cast<uint32_t>(round), round_high_and_program,
                                 static_cast<uint32_t>(name) ^ kRotationTag,
                                 static_cast<uint32_t>(name >> 32) ^ kRotationTag};
  const PhiloxKey key = {static_cast<uint32_t>(set_seed), static_cast<uint32_t>(set_seed >> 32)};
  const PhiloxCounter words = Philox4x32_10(counter, key);
  const uint64_t draw = (uint64_t{words[0]} << 32) | words[1];
  // Multiply-shift: uniform in [0, elements) without a modulo bias worth naming.
  return static_cast<uint64_t>((static_cast<unsigned __int128>(draw) * elements) >> 64);
}

void RotateElements(const void* src, void* dst, uint64_t elements, size_t element_bytes,
                    uint64_t offset) {
  if (elements == 0) return;
  offset %= elements;
  const auto* from = static_cast<const char*>(src);
  auto* to = static_cast<char*>(dst);
  const size_t head = (elements - offset) * element_bytes;  // src[offset, elements)
  std::memcpy(to, from + offset * element_bytes, head);
  std::memcpy(to + head, from, offset * element_bytes);
}

}  // namespace kerneleval::data
