// The timing probe's check of the timed path itself: a copy kernel's timed
// outputs must be, byte for byte, the inputs the host generator makes for
// the round that ran (the GPU generates them: this also checks that its
// generator writes the host's bytes).
#ifndef KERNELEVAL_BENCH_CUDA_COPY_CHECK_H_
#define KERNELEVAL_BENCH_CUDA_COPY_CHECK_H_

#include <cstdint>
#include <span>
#include <string>

#include "kerneleval/internal/worker.pb.h"

namespace kerneleval::bench {

struct CopyCheck {
  enum Verdict {
    kSame,         // every returned set's output is one round's input
    kDiffers,      // a set's output is no round's input (detail says which)
    kNotReturned,  // no outputs came back (TimingRequest.return_outputs unset)
  };
  Verdict verdict = kNotReturned;
  std::string detail;
};

const char* VerdictName(CopyCheck::Verdict verdict);

// `timing`: the copy's ProgramTiming, whose last_outputs (one per input set
// that ran, filled only when the request set return_outputs) hold the
// copy's output as their first output. `input`: the copy's input buffer;
// `input_seeds`: the request's, one per set. Each set's output is compared
// with the host-generated input of the rounds TimedInputSeed(seed, round, 0)
// for round < max_rounds (found by the first element, then compared whole).
CopyCheck CheckCopyOutputs(const internal::ProgramTiming& timing, const internal::BufferSpec& input,
                           std::span<const uint64_t> input_seeds, uint64_t max_rounds = 10'000'000);

}  // namespace kerneleval::bench

#endif  // KERNELEVAL_BENCH_CUDA_COPY_CHECK_H_
