// Finding the GPU the CUDA driver describes (cuDeviceGetName, compute capability,
// cuDeviceTotalMem) in the embedded table, and finding one by a name a person types.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu_peaks/peak_table.h"
#include "gtest/gtest.h"

namespace kerneleval::gpu_peaks {
namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024ull;

class LookupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<v1::GpuPeakTable> table = LoadEmbeddedPeakTable();
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *std::move(table);
  }

  // The canonical name FindGpu returns, or "" for nullopt.
  std::string Find(std::string_view driver_name, int cc_major, int cc_minor,
                   std::uint64_t memory_bytes) const {
    const std::optional<v1::GpuPeaks> gpu =
        FindGpu(table_, driver_name, cc_major, cc_minor, memory_bytes);
    return gpu.has_value() ? gpu->name() : "";
  }

  v1::GpuPeakTable table_;
};

// Total memory as drivers report it (nvidia-smi memory.total, MiB): below the nominal size.
TEST_F(LookupTest, RealDriverNamesAndMemory) {
  EXPECT_EQ(Find("NVIDIA H100 80GB HBM3", 9, 0, 81559 * kMiB), "H100 SXM");
  EXPECT_EQ(Find("NVIDIA H100 PCIe", 9, 0, 81559 * kMiB), "H100 PCIe");
  EXPECT_EQ(Find("NVIDIA H100 NVL", 9, 0, 95830 * kMiB), "H100 NVL");
  EXPECT_EQ(Find("NVIDIA H200", 9, 0, 143771 * kMiB), "H200");
  EXPECT_EQ(Find("NVIDIA A100-SXM4-40GB", 8, 0, 40960 * kMiB), "A100 SXM4 40GB");
  EXPECT_EQ(Find("NVIDIA A100-SXM4-80GB", 8, 0, 81920 * kMiB), "A100 SXM4 80GB");
  EXPECT_EQ(Find("NVIDIA A100 80GB PCIe", 8, 0, 81920 * kMiB), "A100 PCIe 80GB");
  EXPECT_EQ(Find("Tesla T4", 7, 5, 15360 * kMiB), "T4");
  EXPECT_EQ(Find("Tesla V100-SXM2-16GB", 7, 0, 16384 * kMiB), "V100 SXM2 16GB");
  EXPECT_EQ(Find("NVIDIA A10G", 8, 6, 23028 * kMiB), "A10G");
  EXPECT_EQ(Find("NVIDIA L4", 8, 9, 23034 * kMiB), "L4");
  EXPECT_EQ(Find("NVIDIA L40S", 8, 9, 46068 * kMiB), "L40S");
  EXPECT_EQ(Find("NVIDIA GeForce RTX 4090", 8, 9, 24564 * kMiB), "RTX 4090");
  EXPECT_EQ(Find("NVIDIA GeForce RTX 5090", 12, 0, 32607 * kMiB), "RTX 5090");
  EXPECT_EQ(Find("NVIDIA B200", 10, 0, 183359 * kMiB), "B200");
  EXPECT_EQ(Find("NVIDIA GB200", 10, 0, 189471 * kMiB), "GB200");
}

TEST_F(LookupTest, EveryDriverNameInTheTableFindsItsGpu) {
  for (const v1::GpuPeaks& gpu : table_.gpus()) {
    for (const std::string& driver_name : gpu.driver_names()) {
      EXPECT_EQ(Find(driver_name, gpu.compute_capability_major(), gpu.compute_capability_minor(),
                     gpu.memory_bytes()),
                gpu.name())
          << driver_name;
      // Without compute capability or memory the exact name still decides.
      EXPECT_EQ(Find(driver_name, 0, 0, 0), gpu.name()) << driver_name;
    }
  }
}

TEST_F(LookupTest, NormalisedNamesMatch) {
  EXPECT_EQ(Find("nvidia geforce rtx 4090", 8, 9, 0), "RTX 4090");
  EXPECT_EQ(Find("  NVIDIA   H200 ", 9, 0, 0), "H200");
  EXPECT_EQ(Find("NVIDIA T4", 7, 5, 0), "T4");  // "Tesla" dropped by newer drivers
  EXPECT_EQ(Find("tesla_v100_sxm2_32gb", 7, 0, 0), "V100 SXM2 32GB");
  EXPECT_EQ(Find("H100 SXM", 9, 0, 0), "H100 SXM");  // the canonical name
}

// A name shared by two boards (no size in it) is settled by the reported memory.
TEST_F(LookupTest, MemoryDisambiguatesA100AndV100) {
  EXPECT_EQ(Find("NVIDIA A100-SXM4", 8, 0, 40536 * kMiB), "A100 SXM4 40GB");
  EXPECT_EQ(Find("NVIDIA A100-SXM4", 8, 0, 81050 * kMiB), "A100 SXM4 80GB");
  EXPECT_EQ(Find("Tesla V100-SXM2", 7, 0, 16160 * kMiB), "V100 SXM2 16GB");
  EXPECT_EQ(Find("Tesla V100-SXM2", 7, 0, 32510 * kMiB), "V100 SXM2 32GB");
  // Only one A100 has 40 GB.
  EXPECT_EQ(Find("NVIDIA A100", 8, 0, 40536 * kMiB), "A100 SXM4 40GB");
  // H100 NVL is the only 94 GB H100.
  EXPECT_EQ(Find("NVIDIA H100", 9, 0, 95830 * kMiB), "H100 NVL");
}

TEST_F(LookupTest, AmbiguityGivesNoRooflineRatherThanAGuess) {
  // A100 80GB SXM (2039 GB/s) and PCIe (1935 GB/s) have the same memory size.
  EXPECT_EQ(Find("NVIDIA A100", 8, 0, 81050 * kMiB), "");
  // Several candidates and no memory size to choose by.
  EXPECT_EQ(Find("NVIDIA A100-SXM4", 8, 0, 0), "");
  // No A100 has 20 GB: the memory rules every candidate out.
  EXPECT_EQ(Find("NVIDIA A100", 8, 0, 20480 * kMiB), "");
}

TEST_F(LookupTest, ComputeCapabilityMustAgree) {
  EXPECT_EQ(Find("NVIDIA H100 80GB HBM3", 8, 0, 81559 * kMiB), "");
  EXPECT_EQ(Find("NVIDIA GeForce RTX 4090", 8, 6, 0), "");
}

TEST_F(LookupTest, UnknownGpusGiveNullopt) {
  EXPECT_FALSE(FindGpu(table_, "NVIDIA GeForce GTX 1080", 6, 1, 8192 * kMiB).has_value());
  EXPECT_FALSE(FindGpu(table_, "", 0, 0, 0).has_value());
  EXPECT_FALSE(FindGpu(table_, "NVIDIA", 0, 0, 0).has_value());
  // Near relatives with other figures must not match by prefix.
  EXPECT_FALSE(FindGpu(table_, "NVIDIA L40", 8, 9, 46068 * kMiB).has_value());
  EXPECT_FALSE(FindGpu(table_, "NVIDIA A10", 8, 6, 23028 * kMiB).has_value());
  EXPECT_FALSE(FindGpu(table_, "NVIDIA GeForce RTX 4090 D", 8, 9, 24564 * kMiB).has_value());
  EXPECT_FALSE(FindGpu(table_, "NVIDIA H100 80GB HBM3 MIG 1g.10gb", 9, 0, 9984 * kMiB).has_value());
}

TEST(NormalizeGpuName, DropsBrandWordsCaseAndSeparators) {
  EXPECT_EQ(NormalizeGpuName("NVIDIA GeForce RTX 4090"), "rtx 4090");
  EXPECT_EQ(NormalizeGpuName("Tesla V100-SXM2-16GB"), "v100 sxm2 16gb");
  EXPECT_EQ(NormalizeGpuName("  NVIDIA   A100_80GB  PCIe "), "a100 80gb pcie");
  EXPECT_EQ(NormalizeGpuName("NVIDIA"), "");
  // Brand words count only at the front.
  EXPECT_EQ(NormalizeGpuName("Quadro Tesla NVIDIA"), "quadro tesla nvidia");
}

TEST_F(LookupTest, FindGpuByNameAcceptsCanonicalAndDriverNames) {
  const auto name_of = [&](std::string_view query) {
    const std::optional<v1::GpuPeaks> gpu = FindGpuByName(table_, query);
    return gpu.has_value() ? gpu->name() : "";
  };
  EXPECT_EQ(name_of("H100 SXM"), "H100 SXM");
  EXPECT_EQ(name_of("h100 sxm"), "H100 SXM");
  EXPECT_EQ(name_of("NVIDIA H100 80GB HBM3"), "H100 SXM");
  EXPECT_EQ(name_of("nvidia geforce rtx 5090"), "RTX 5090");
  EXPECT_EQ(name_of("rtx-3090"), "RTX 3090");
  EXPECT_EQ(name_of("H100"), "");  // three H100s: not a name of any one
  EXPECT_EQ(name_of("Voodoo2"), "");
}

TEST_F(LookupTest, MatchGpuNameTakesWordsOfOneNameAndListsSeveral) {
  const GpuNameMatch exact = MatchGpuName(table_, "h100 sxm");
  ASSERT_TRUE(exact.gpu.has_value());
  EXPECT_EQ(exact.gpu->name(), "H100 SXM");
  const GpuNameMatch partial = MatchGpuName(table_, "5090");
  ASSERT_TRUE(partial.gpu.has_value());
  EXPECT_EQ(partial.gpu->name(), "RTX 5090");
  EXPECT_EQ(MatchGpuName(table_, "PCIE 80gb").gpu.value_or(v1::GpuPeaks()).name(),
            "A100 PCIe 80GB");
  const GpuNameMatch several = MatchGpuName(table_, "H100");
  EXPECT_FALSE(several.gpu.has_value());
  EXPECT_EQ(several.candidates, (std::vector<std::string>{"H100 SXM", "H100 PCIe", "H100 NVL"}));
  const GpuNameMatch none = MatchGpuName(table_, "Voodoo2");
  EXPECT_FALSE(none.gpu.has_value());
  EXPECT_TRUE(none.candidates.empty());
  // Whole words only: "H10" is no GPU's word.
  EXPECT_FALSE(MatchGpuName(table_, "H10").gpu.has_value());
  EXPECT_TRUE(MatchGpuName(table_, "H10").candidates.empty());
}

}  // namespace
}  // namespace kerneleval::gpu_peaks
