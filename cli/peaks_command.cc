// `kerneleval peaks [NAME] [--json] [--table FILE]`: the GPU peak table the roofline uses.
//
// Without NAME: one row per GPU (name, compute capability, SMs, memory, bandwidth, FP32 and
// dense FP16/BF16/FP8 tensor-core peaks, L2). With NAME (a canonical or driver name, any
// case, or words of one GPU's name such as "5090"): that GPU's every figure with its
// source; a NAME several GPUs share ("H100") lists them. --json prints the proto's JSON with the
// proto field names instead. --table reads an override table file instead of the embedded
// one. An unknown or ambiguous NAME or a bad table file: a message on stderr and exit 2.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "google/protobuf/util/json_util.h"
#include "gpu_peaks/peak_table.h"
#include "gpu_peaks/roofline.h"

namespace kerneleval::cli {
namespace {

struct PeaksOptions {
  std::string name;   // empty: the whole table
  std::string table;  // empty: the embedded table
  bool json = false;
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

// "989.4" for a peak of 989.4e12 FLOP/s, "-" when the GPU has none.
std::string Tflops(const v1::GpuPeaks& gpu, v1::ComputeType type) {
  const std::optional<double> peak = gpu_peaks::PeakFlopsPerSecond(gpu, type);
  return peak.has_value() ? absl::StrFormat("%.1f", *peak / 1e12) : "-";
}

std::string ComputeCapability(const v1::GpuPeaks& gpu) {
  return absl::StrCat(gpu.compute_capability_major(), ".", gpu.compute_capability_minor());
}

void PrintTable(const v1::GpuPeakTable& table) {
  const std::string header =
      absl::StrFormat("%-16s %5s %4s %8s %9s %8s %9s %9s %9s %7s", "GPU", "CC", "SMs", "memory",
                      "bandwidth", "fp32", "fp16-tc", "bf16-tc", "fp8-tc", "L2");
  std::cout << header << '\n'
            << absl::StrFormat("%-16s %5s %4s %8s %9s %8s %9s %9s %9s %7s", "", "", "", "GiB",
                               "TB/s", "TFLOP/s", "TFLOP/s", "TFLOP/s", "TFLOP/s", "MiB")
            << '\n';
  for (const v1::GpuPeaks& gpu : table.gpus()) {
    std::cout << absl::StrFormat("%-16s %5s %4d %8.0f %9.3f %8s %9s %9s %9s %7.0f", gpu.name(),
                                 ComputeCapability(gpu), gpu.sm_count(), gpu.memory_bytes() / kGiB,
                                 gpu.memory_bandwidth_bytes_per_second() / 1e12,
                                 Tflops(gpu, v1::COMPUTE_TYPE_FP32),
                                 Tflops(gpu, v1::COMPUTE_TYPE_FP16_TC),
                                 Tflops(gpu, v1::COMPUTE_TYPE_BF16_TC),
                                 Tflops(gpu, v1::COMPUTE_TYPE_FP8_TC), gpu.l2_bytes() / kMiB)
              << '\n';
  }
  std::cout << "Dense peaks (no sparsity); tensor-core fp16/bf16/fp8 with fp32 accumulate. "
               "`kerneleval peaks NAME` shows one GPU with sources.\n";
}

void PrintGpu(const v1::GpuPeaks& gpu) {
  std::cout << gpu.name() << '\n';
  for (const std::string& driver_name : gpu.driver_names()) {
    std::cout << "  driver name        " << driver_name << '\n';
  }
  std::cout << "  compute capability " << ComputeCapability(gpu) << '\n'
            << absl::StrFormat("  memory             %.0f GiB (%d bytes)\n",
                               gpu.memory_bytes() / kGiB, gpu.memory_bytes())
            << absl::StrFormat("  bandwidth          %.3f TB/s  [%s]\n",
                               gpu.memory_bandwidth_bytes_per_second() / 1e12,
                               gpu.memory_bandwidth_source())
            << absl::StrFormat("  SMs                %d\n", gpu.sm_count())
            << absl::StrFormat("  L2                 %.0f MiB (%d bytes)  [%s]\n",
                               gpu.l2_bytes() / kMiB, gpu.l2_bytes(), gpu.sm_and_l2_source())
            << "  dense peaks:\n";
  for (const v1::PeakFlops& peak : gpu.peaks()) {
    std::cout << absl::StrFormat("    %-21s %10.3f TFLOP/s  [%s]\n",
                                 v1::ComputeType_Name(peak.compute_type()),
                                 peak.flops_per_second() / 1e12, peak.source());
  }
}

// Proto JSON with the .proto's field names (memory_bandwidth_bytes_per_second, not
// memoryBandwidthBytesPerSecond), as scripts expect.
bool PrintJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options).ok()) return false;
  std::cout << json;
  if (json.empty() || json.back() != '\n') std::cout << '\n';
  return true;
}

int Peaks(const PeaksOptions& options) {
  const absl::StatusOr<v1::GpuPeakTable> table = options.table.empty()
                                                     ? gpu_peaks::LoadEmbeddedPeakTable()
                                                     : gpu_peaks::LoadPeakTable(options.table);
  auto fail = [&](absl::string_view message) {
    return FailCommand("peaks", options.json, kExitUsage, "INVALID_ARGUMENT", message);
  };
  if (!table.ok()) return fail(table.status().message());
  if (options.name.empty()) {
    if (options.json) return PrintJson(*table) ? kExitOk : kExitUsage;
    PrintTable(*table);
    return kExitOk;
  }
  const gpu_peaks::GpuNameMatch match = gpu_peaks::MatchGpuName(*table, options.name);
  if (!match.candidates.empty()) {
    return fail(absl::StrCat("\"", options.name, "\" could be any of: ",
                             absl::StrJoin(match.candidates, ", "), "; name one"));
  }
  if (!match.gpu.has_value()) {
    return fail(absl::StrCat("no GPU named \"", options.name,
                             "\" in the peak table; `kerneleval peaks` lists them"));
  }
  const v1::GpuPeaks* gpu = &*match.gpu;
  if (options.json) return PrintJson(*gpu) ? kExitOk : kExitUsage;
  PrintGpu(*gpu);
  return kExitOk;
}

void AddPeaksCommand(CLI::App& root) {
  auto options = std::make_shared<PeaksOptions>();
  CLI::App* command = root.add_subcommand(
      "peaks",
      "Print the GPU peak table used for the roofline (dense peaks, bandwidth, SMs, L2), or "
      "one GPU's figures with their sources. Exit 2 for an unknown or ambiguous NAME.");
  command->add_option("NAME", options->name,
                      "a GPU's canonical name (\"H100 SXM\") or driver name "
                      "(\"NVIDIA H100 80GB HBM3\"), any case, or words of one GPU's name "
                      "(\"5090\"); words several GPUs share (\"h100\") are refused, naming them");
  command->add_flag("--json", options->json,
                    "print proto JSON (kerneleval.v1.GpuPeakTable, or GpuPeaks with NAME)");
  command->add_option("--table", options->table,
                      "read this GpuPeakTable text file instead of the built-in table");
  command->callback([options] { SetExitCode(Peaks(*options)); });
}

}  // namespace

KERNELEVAL_CLI_COMMAND("peaks", AddPeaksCommand);

}  // namespace kerneleval::cli
