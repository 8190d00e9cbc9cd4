// The GPU peak table: loading (embedded or from a file), validation and lookup of the GPU a
// kernel runs on. Pure: no CUDA, no gRPC. Units are those of kerneleval/v1/gpu_peaks.proto:
// bytes, bytes/s and FLOP/s (dense figures only, see gpu_peaks/README.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kerneleval/v1/gpu_peaks.pb.h"

namespace kerneleval::gpu_peaks {

// The text of gpu_peaks/gpu_peaks.textproto as it was when the library was built (CMake
// embeds it), so binaries need no data file at run time.
[[nodiscard]] std::string_view EmbeddedPeakTableText();

// Parses and validates the embedded table. Fails only if the checked-in file is broken,
// which the tests catch.
[[nodiscard]] absl::StatusOr<v1::GpuPeakTable> LoadEmbeddedPeakTable();

// Parses `text` (protobuf text format of kerneleval.v1.GpuPeakTable) and validates it.
// INVALID_ARGUMENT with line:column for a syntax error or an unknown field, or with the
// offending GPU for a validation error.
[[nodiscard]] absl::StatusOr<v1::GpuPeakTable> ParsePeakTable(std::string_view text);

// Reads, parses and validates an override table file. NOT_FOUND if the file cannot be
// opened; otherwise as ParsePeakTable, with the path in the message.
[[nodiscard]] absl::StatusOr<v1::GpuPeakTable> LoadPeakTable(const std::string& path);

// Checks the invariants the lookup and the roofline rely on. For every GPU: a name, at least
// one driver name, compute capability major > 0, memory_bytes > 0, a finite bandwidth > 0
// with a source, an FP32 peak, every peak finite and > 0 with a known compute type and a
// source, no compute type twice, and a source for sm_count / l2_bytes when either is set.
// Across the table: no canonical or driver name twice, also after NormalizeGpuName (so
// that a lookup can never be ambiguous between two names).
[[nodiscard]] absl::Status ValidatePeakTable(const v1::GpuPeakTable& table);

// Lower case, '-' and '_' read as spaces, runs of spaces collapsed, and leading vendor or
// brand words ("nvidia", "tesla", "geforce") dropped:
// "NVIDIA GeForce RTX 4090" -> "rtx 4090", "Tesla V100-SXM2-16GB" -> "v100 sxm2 16gb".
[[nodiscard]] std::string NormalizeGpuName(std::string_view name);

// The GPU that the CUDA driver describes, or nullopt when the table has no figures for it
// (then there is no roofline). Inputs: cuDeviceGetName's string, the compute capability
// (0.0 = unknown: not used) and cuDeviceTotalMem's bytes (0 = unknown: not used).
//   1. a driver name equal to `driver_name`;
//   2. else a canonical or driver name equal to it after NormalizeGpuName;
//   3. else the GPUs whose normalised names start with the normalised `driver_name` as
//      whole words ("NVIDIA A100-SXM4" -> both A100 SXM4 entries), keeping those whose
//      nominal memory could be the reported one (reported / nominal in [0.85, 1.02]).
// At each step GPUs of another compute capability are dropped; if several remain, the one
// whose nominal memory is nearest the reported memory wins (A100 40 GB vs 80 GB). A tie
// (same nominal memory, e.g. A100 80GB SXM vs PCIe) or several candidates without a memory
// size give nullopt rather than a guess.
[[nodiscard]] std::optional<v1::GpuPeaks> FindGpu(const v1::GpuPeakTable& table,
                                                  std::string_view driver_name, int cc_major,
                                                  int cc_minor, std::uint64_t memory_bytes);

// The GPU named `name` for people (the CLI): a canonical or driver name, case-insensitive,
// else equal after NormalizeGpuName. nullopt when none matches.
[[nodiscard]] std::optional<v1::GpuPeaks> FindGpuByName(const v1::GpuPeakTable& table,
                                                        std::string_view name);

// What a person's GPU name means (the CLI's `peaks NAME`): FindGpuByName's match, else the
// GPUs each of whose normalised name's words include every word of the normalised `name`
// ("h100" -> H100 SXM, H100 PCIe and H100 NVL; "5090" -> RTX 5090).
struct GpuNameMatch {
  std::optional<v1::GpuPeaks> gpu;      // the one GPU meant; nullopt: none, or ambiguous
  std::vector<std::string> candidates;  // canonical names, when several GPUs match
};
[[nodiscard]] GpuNameMatch MatchGpuName(const v1::GpuPeakTable& table, std::string_view name);

}  // namespace kerneleval::gpu_peaks
