#include "bench/cuda/copy_check.h"

#include <absl/strings/str_cat.h>

#include <algorithm>
#include <cstring>

#include "evaluator/data/dtype.h"
#include "evaluator/data/prng.h"

namespace kerneleval::bench {

const char* VerdictName(CopyCheck::Verdict verdict) {
  switch (verdict) {
    case CopyCheck::kSame:
      return "same";
    case CopyCheck::kDiffers:
      return "differs";
    case CopyCheck::kNotReturned:
      return "not returned";
  }
  return "?";
}

CopyCheck CheckCopyOutputs(const internal::ProgramTiming& timing, const internal::BufferSpec& input,
                           std::span<const uint64_t> input_seeds, uint64_t max_rounds) {
  CopyCheck check;
  // The worker fills last_outputs only on TimingRequest.return_outputs
  // (rt10 #1): without them there is nothing to compare (reading them
  // unchecked crashed the probe, rt11 #1).
  const int sets = std::min<int>(timing.last_outputs_size(), static_cast<int>(input_seeds.size()));
  if (sets == 0) {
    check.detail = "no timed outputs came back (TimingRequest.return_outputs unset?)";
    return check;
  }
  const data::ElementSampler sampler =
      data::MakeElementSampler(input.distribution(), input.dtype());
  const uint64_t name_hash = data::HashBufferName(input.name());
  const size_t element_bytes = data::DTypeSize(input.dtype());
  for (int s = 0; s < sets; ++s) {
    const internal::CaseResult& outputs = timing.last_outputs(s);
    if (outputs.outputs_size() == 0) {
      check.verdict = CopyCheck::kDiffers;
      check.detail = absl::StrCat("input set ", s, ": the copy returned no output buffer");
      return check;
    }
    const std::string& got = outputs.outputs(0).data();
    bool same = false;
    for (uint64_t round = 0; round < max_rounds && got.size() >= element_bytes && !same; ++round) {
      const uint64_t seed = data::TimedInputSeed(input_seeds[s], round, 0);
      uint64_t first = 0;  // element 0, of up to 8 bytes
      data::WriteGeneratedElement(sampler, data::DrawElementWords(seed, name_hash, 0), 0, &first);
      if (std::memcmp(&first, got.data(), element_bytes) != 0) continue;
      same = got == data::GenerateInput(input, seed, 8);  // else a chance match: go on
    }
    if (!same) {
      // Either the copy is wrong or the GPU's ke_generate_input wrote other
      // bytes than the host's generator (the worker's own input checks
      // compare the GPU with itself and would not see it).
      check.verdict = CopyCheck::kDiffers;
      check.detail =
          absl::StrCat("input set ", s, ": the copy's output (", got.size(),
                       " bytes) is no round's input as the host generates it (a broken copy, or "
                       "ke_generate_input differs from data::GenerateInput on this GPU)");
      return check;
    }
  }
  check.verdict = CopyCheck::kSame;
  check.detail = absl::StrCat(sets, " input sets: each output is a round's host-generated input");
  return check;
}

}  // namespace kerneleval::bench
