// Deterministic input generation. The same (BufferSpec, case_seed) gives the
// same bytes on every machine, compiler and thread count:
//  - a counter-based generator, Philox4x32-10 (Salmon et al., SC'11): element i
//    of buffer `name` is a pure function of (case_seed, name, i), so any slice
//    can be generated alone and in any order;
//  - transcendental functions from portable_math.h, never the C library's;
//  - values rounded to the buffer's dtype with dtype.h.
//
// Per element, one Philox call on counter {i_lo, i_hi, name_lo, name_hi} with
// key {seed_lo, seed_hi} gives four 32-bit words w0..w3:
//   u  = (w0:w1 >> 11) * 2^-53 in [0, 1)   (uniform, int_range: w0:w1)
//   u' = (w2:w3 >> 11) * 2^-53 in [0, 1)   (normal's angle)
//   sign bit = w2 & 1                       (symmetric Pareto)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "evaluator/data/element_generator.h"
#include "kerneleval/internal/worker.pb.h"
#include "kerneleval/v1/problem.pb.h"

namespace kerneleval::data {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// The Philox4x32 block function with 10 rounds (Random123's philox4x32_10).
// NOLINTNEXTLINE(readability-identifier-naming): keeps Random123's name, 4x32_10
PhiloxCounter Philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// 64-bit FNV-1a of a buffer name: the stream of that buffer.
uint64_t HashBufferName(std::string_view name);

// The distribution used when a spec sets none: uniform [-1, 1) for floats,
// int_range [0, 100] for integers, int_range [0, 1] for bool.
v1::Distribution DefaultDistribution(v1::DType dtype);

// Checks parameters (finite, low < high, stddev >= 0, scale and alpha > 0,
// int_range low <= high and inside the dtype's range for integer dtypes).
absl::Status ValidateDistribution(const v1::Distribution& distribution, v1::DType dtype);

// The value of element `index` before rounding to the dtype:
//   uniform   low + (high - low) * u
//   normal    mean + stddev * sqrt(-2 ln(1 - u)) * cos(2 pi u')   (Box-Muller),
//             plus spike where (w0:w1 & 2047) < spikes_per_2048
//   pareto    +-scale * (1 - u)^(-1 / alpha), sign from w2 if symmetric
//   int_range low + floor(w0:w1 * (high - low + 1) / 2^64)       (inclusive)
// An unset distribution means DefaultDistribution(dtype).
double SampleValue(const v1::Distribution& distribution, v1::DType dtype, uint64_t case_seed,
                   uint64_t name_hash, uint64_t index);

// The distribution (its default if unset) and dtype of a buffer, flattened
// for element_generator.h's GenerateElement, which writes the same bytes as
// GenerateInputRange (on the host or the GPU).
ElementSampler MakeElementSampler(const v1::Distribution& distribution, v1::DType dtype);

// Writes elements [begin, end) of the buffer into `out` (which points at
// element 0 of a buffer of spec.elements() elements). Values are rounded to
// spec.dtype(): floats to nearest even, saturated to the largest finite value
// (a heavy tail never produces Inf), and a uniform draw that rounds up to
// `high` is moved down one ulp so the range stays [low, high); integer dtypes
// take floor() of uniform/normal/Pareto draws and saturate; int_range values
// are stored exactly (saturated to the dtype).
void GenerateInputRange(const internal::BufferSpec& spec, uint64_t case_seed, uint64_t begin,
                        uint64_t end, void* out);

// The whole buffer, spec.elements() * DTypeSize(spec.dtype()) bytes,
// little-endian. `threads` > 1 splits the work (the bytes do not change).
// An unspecified dtype gives an empty string.
std::string GenerateInput(const internal::BufferSpec& spec, uint64_t case_seed,
                          unsigned threads = 1);

// Generated inputs kept by (seed, spec), each generated once: the reference
// and every candidate of a request run on the same correctness inputs, one
// after another. At most `max_bytes` are kept: past it, what is kept is
// dropped before the next is generated (bytes already handed out stay valid).
// Not thread-safe.
class GeneratedInputs {
 public:
  explicit GeneratedInputs(unsigned threads = 1,
                           uint64_t max_bytes = std::numeric_limits<uint64_t>::max())
      : threads_(threads), max_bytes_(max_bytes) {}
  // GenerateInput(spec, seed), generated on the first request for it.
  std::shared_ptr<const std::string> Get(const internal::BufferSpec& spec, uint64_t seed);
  // How many buffers it generated so far.
  uint64_t generated() const { return generated_; }

 private:
  unsigned threads_;
  uint64_t max_bytes_;
  uint64_t kept_bytes_ = 0;
  uint64_t generated_ = 0;
  std::map<std::string, std::shared_ptr<const std::string>> by_key_;
};

// Timed runs see inputs that no earlier run saw: timed round `round`
// (warm-up rounds included) of an input set runs on inputs generated afresh
// from the seed TimedInputSeed(set_seed, round, program), every value new
// (GenerateInput's distribution, a new draw). A result cached across
// launches, even one keyed on the values themselves (an earlier rotation of
// the same values let a kernel find where it had seen them and answer from a
// table), is stale, and the checks of timed outputs catch it. `program` is
// the program's index in its timing request where programs share memory
// (the CUDA backend: one context): each then sees inputs of its own in every
// round, so a result one program leaves where another can find it is for
// other inputs (the reference is run again on each candidate's inputs for
// the check). The CPU backend, whose programs run in processes of their own,
// passes 0 for all. The CUDA worker generates these inputs on the GPU
// (element_generator.h), the CPU backend on the host: the same bytes.
uint64_t TimedInputSeed(uint64_t set_seed, uint64_t round, uint64_t program);

}  // namespace kerneleval::data
