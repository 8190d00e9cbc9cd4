#include "bench/cuda/copy_check.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "evaluator/data/prng.h"

namespace kerneleval::bench {
namespace {

constexpr uint64_t kSeeds[] = {1, 2};

internal::BufferSpec Input() {
  internal::BufferSpec spec;
  spec.set_name("in");
  spec.set_dtype(v1::DTYPE_F32);
  spec.set_elements(1024);
  spec.set_role(internal::BUFFER_ROLE_INPUT);
  return spec;
}

// A copy's timed outputs as the worker returns them on return_outputs: per
// input set, the last round's input.
internal::ProgramTiming Returned(const internal::BufferSpec& input, uint64_t round) {
  internal::ProgramTiming timing;
  for (const uint64_t seed : kSeeds) {
    timing.add_last_outputs()->add_outputs()->set_data(
        data::GenerateInput(input, data::TimedInputSeed(seed, round, 0)));
  }
  return timing;
}

// What the worker sends without return_outputs: the probe read these
// unchecked and crashed (rt11 #1).
TEST(CopyCheck, NoReturnedOutputsIsNotReturnedNotACrash) {
  internal::ProgramTiming timing;
  timing.add_samples_us(1.0);
  const CopyCheck check = CheckCopyOutputs(timing, Input(), kSeeds);
  EXPECT_EQ(check.verdict, CopyCheck::kNotReturned) << check.detail;
  EXPECT_STREQ(VerdictName(check.verdict), "not returned");
}

TEST(CopyCheck, OutputsThatAreARoundsInputAreTheSame) {
  const internal::BufferSpec input = Input();
  const CopyCheck check = CheckCopyOutputs(Returned(input, 37), input, kSeeds);
  EXPECT_EQ(check.verdict, CopyCheck::kSame) << check.detail;
}

TEST(CopyCheck, OneChangedByteDiffers) {
  const internal::BufferSpec input = Input();
  internal::ProgramTiming timing = Returned(input, 5);
  std::string* data = timing.mutable_last_outputs(1)->mutable_outputs(0)->mutable_data();
  (*data)[data->size() - 1] ^= 1;
  const CopyCheck check = CheckCopyOutputs(timing, input, kSeeds, /*max_rounds=*/100);
  EXPECT_EQ(check.verdict, CopyCheck::kDiffers);
  EXPECT_NE(check.detail.find("input set 1"), std::string::npos) << check.detail;
}

TEST(CopyCheck, AnotherSetsInputDiffers) {
  const internal::BufferSpec input = Input();
  internal::ProgramTiming timing = Returned(input, 5);
  timing.mutable_last_outputs()->SwapElements(0, 1);
  EXPECT_EQ(CheckCopyOutputs(timing, input, kSeeds, /*max_rounds=*/100).verdict,
            CopyCheck::kDiffers);
}

TEST(CopyCheck, ASetWithoutAnOutputBufferDiffers) {
  internal::ProgramTiming timing;
  timing.add_last_outputs();
  EXPECT_EQ(CheckCopyOutputs(timing, Input(), kSeeds).verdict, CopyCheck::kDiffers);
}

}  // namespace
}  // namespace kerneleval::bench
