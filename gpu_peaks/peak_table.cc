#include "gpu_peaks/peak_table.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace kerneleval::gpu_peaks {
namespace {

// Keeps the first error protobuf's text parser reports, with its position.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!error_.empty()) return;
    // The parser counts lines and columns from 0; editors count from 1.
    error_ = absl::StrCat(line + 1, ":", column + 1, ": ", message);
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

std::string Describe(const v1::GpuPeaks& gpu, int index) {
  return gpu.name().empty() ? absl::StrCat("gpus[", index, "]")
                            : absl::StrCat("gpus[", index, "] \"", gpu.name(), "\"");
}

// Debian's absl::string_view is its own type, not std::string_view.
absl::string_view AsAbsl(std::string_view text) {
  return absl::string_view(text.data(), text.size());
}

bool IsPositiveFinite(double value) { return std::isfinite(value) && value > 0.0; }

// Every name a GPU answers to, canonical first.
std::vector<std::string_view> NamesOf(const v1::GpuPeaks& gpu) {
  std::vector<std::string_view> names{gpu.name()};
  for (const std::string& driver_name : gpu.driver_names()) names.push_back(driver_name);
  return names;
}

absl::Status ValidateGpu(const v1::GpuPeaks& gpu, int index) {
  const std::string where = Describe(gpu, index);
  if (gpu.name().empty()) return absl::InvalidArgumentError(absl::StrCat(where, ": empty name"));
  if (gpu.driver_names().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": no driver_names"));
  }
  for (const std::string& driver_name : gpu.driver_names()) {
    if (NormalizeGpuName(driver_name).empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": empty driver name"));
    }
  }
  if (gpu.compute_capability_major() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": compute_capability_major is 0"));
  }
  if (gpu.memory_bytes() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": memory_bytes is 0"));
  }
  if (!IsPositiveFinite(gpu.memory_bandwidth_bytes_per_second())) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": memory_bandwidth_bytes_per_second must be finite and > 0, got ",
                     gpu.memory_bandwidth_bytes_per_second()));
  }
  if (gpu.memory_bandwidth_source().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": empty memory_bandwidth_source"));
  }
  if ((gpu.sm_count() != 0 || gpu.l2_bytes() != 0) && gpu.sm_and_l2_source().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": empty sm_and_l2_source"));
  }
  std::set<int> seen_types;
  for (const v1::PeakFlops& peak : gpu.peaks()) {
    const std::string type_name = v1::ComputeType_Name(peak.compute_type());
    if (peak.compute_type() == v1::COMPUTE_TYPE_UNSPECIFIED ||
        !v1::ComputeType_IsValid(peak.compute_type())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": a peak has no valid compute_type (", peak.compute_type(), ")"));
    }
    if (!seen_types.insert(peak.compute_type()).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", type_name, " given twice"));
    }
    if (!IsPositiveFinite(peak.flops_per_second())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", type_name, " flops_per_second must be finite and > 0, got ",
                       peak.flops_per_second()));
    }
    if (peak.source().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": ", type_name, " has no source"));
    }
  }
  if (!seen_types.contains(v1::COMPUTE_TYPE_FP32)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": no COMPUTE_TYPE_FP32 peak"));
  }
  return absl::OkStatus();
}

// Distance between two memory sizes on a log scale, so that 39.6 GiB is nearer 40 than 80.
double MemoryDistance(std::uint64_t reported_bytes, std::uint64_t nominal_bytes) {
  return std::abs(
      std::log(static_cast<double>(reported_bytes) / static_cast<double>(nominal_bytes)));
}

// Whether `reported_bytes` (cuDeviceTotalMem) can belong to a board of `nominal_bytes`:
// drivers report 92-100 % of the nominal size (ECC, reserved memory).
bool MemoryPlausible(std::uint64_t reported_bytes, std::uint64_t nominal_bytes) {
  const double ratio = static_cast<double>(reported_bytes) / static_cast<double>(nominal_bytes);
  return ratio >= 0.85 && ratio <= 1.02;
}

// Narrows `candidates` (indices into table.gpus()) by compute capability and then memory.
std::optional<v1::GpuPeaks> Choose(const v1::GpuPeakTable& table, std::vector<int> candidates,
                                   int cc_major, int cc_minor, std::uint64_t memory_bytes) {
  if (cc_major > 0) {
    std::erase_if(candidates, [&](int index) {
      const v1::GpuPeaks& gpu = table.gpus(index);
      return static_cast<int>(gpu.compute_capability_major()) != cc_major ||
             static_cast<int>(gpu.compute_capability_minor()) != cc_minor;
    });
  }
  if (candidates.empty()) return std::nullopt;
  if (candidates.size() == 1) return table.gpus(candidates.front());
  if (memory_bytes == 0) return std::nullopt;  // several, nothing to choose by
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    return MemoryDistance(memory_bytes, table.gpus(a).memory_bytes()) <
           MemoryDistance(memory_bytes, table.gpus(b).memory_bytes());
  });
  const std::uint64_t best = table.gpus(candidates[0]).memory_bytes();
  const std::uint64_t second = table.gpus(candidates[1]).memory_bytes();
  if (best == second) return std::nullopt;  // e.g. A100 80GB SXM vs PCIe: do not guess
  return table.gpus(candidates.front());
}

// The indices of GPUs any of whose names satisfies `matches`, each once.
template <typename Predicate>
std::vector<int> GpusWithName(const v1::GpuPeakTable& table, Predicate matches) {
  std::vector<int> found;
  for (int i = 0; i < table.gpus_size(); ++i) {
    for (std::string_view name : NamesOf(table.gpus(i))) {
      if (matches(name)) {
        found.push_back(i);
        break;
      }
    }
  }
  return found;
}

// Whether the words of `prefix` are the first words of `name` (both normalised).
bool StartsWithWords(std::string_view name, std::string_view prefix) {
  if (prefix.empty() || !name.starts_with(prefix)) return false;
  return name.size() == prefix.size() || name[prefix.size()] == ' ';
}

}  // namespace

absl::StatusOr<v1::GpuPeakTable> LoadEmbeddedPeakTable() {
  absl::StatusOr<v1::GpuPeakTable> table = ParsePeakTable(EmbeddedPeakTableText());
  if (!table.ok()) {
    return absl::Status(table.status().code(),
                        absl::StrCat("embedded gpu_peaks.textproto: ", table.status().message()));
  }
  return table;
}

absl::StatusOr<v1::GpuPeakTable> ParsePeakTable(std::string_view text) {
  if (text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError("peak table text is too large");
  }
  v1::GpuPeakTable table;
  FirstErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &table)) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a kerneleval.v1.GpuPeakTable in text format: ", errors.error()));
  }
  if (absl::Status valid = ValidatePeakTable(table); !valid.ok()) return valid;
  return table;
}

absl::StatusOr<v1::GpuPeakTable> LoadPeakTable(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open peak table ", path));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return absl::DataLossError(absl::StrCat("cannot read peak table ", path));
  absl::StatusOr<v1::GpuPeakTable> table = ParsePeakTable(text.str());
  if (!table.ok()) {
    return absl::Status(table.status().code(), absl::StrCat(path, ": ", table.status().message()));
  }
  return table;
}

absl::Status ValidatePeakTable(const v1::GpuPeakTable& table) {
  if (table.gpus().empty()) return absl::InvalidArgumentError("the peak table has no gpus");
  // Normalised name -> index of the GPU that has it.
  absl::flat_hash_map<std::string, int> owner_of_name;
  for (int i = 0; i < table.gpus_size(); ++i) {
    const v1::GpuPeaks& gpu = table.gpus(i);
    if (absl::Status valid = ValidateGpu(gpu, i); !valid.ok()) return valid;
    for (std::string_view name : NamesOf(gpu)) {
      const auto [it, inserted] = owner_of_name.emplace(NormalizeGpuName(name), i);
      if (!inserted && it->second != i) {
        return absl::InvalidArgumentError(
            absl::StrCat(Describe(gpu, i), ": name \"", AsAbsl(name), "\" is already a name of ",
                         Describe(table.gpus(it->second), it->second),
                         " (names must differ also after case and spacing are ignored)"));
      }
    }
    // The same driver name twice within one GPU is harmless for lookup but is a typo.
    std::set<std::string> own_driver_names;
    for (const std::string& driver_name : gpu.driver_names()) {
      if (!own_driver_names.insert(NormalizeGpuName(driver_name)).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(Describe(gpu, i), ": driver name \"", driver_name, "\" given twice"));
      }
    }
  }
  return absl::OkStatus();
}

std::string NormalizeGpuName(std::string_view name) {
  std::string spaced(name);
  std::replace_if(
      spaced.begin(), spaced.end(), [](char c) { return c == '-' || c == '_'; }, ' ');
  std::vector<std::string> words =
      absl::StrSplit(absl::AsciiStrToLower(spaced), ' ', absl::SkipEmpty());
  // Words that name the vendor or the product line, not the GPU: drivers add or drop them
  // across generations ("Tesla T4", "NVIDIA GeForce RTX 4090").
  const auto is_brand = [](const std::string& word) {
    return word == "nvidia" || word == "tesla" || word == "geforce";
  };
  const auto first_kept = std::find_if_not(words.begin(), words.end(), is_brand);
  std::string normalized;
  for (auto it = first_kept; it != words.end(); ++it) {
    if (!normalized.empty()) normalized += ' ';
    normalized += *it;
  }
  return normalized;
}

std::optional<v1::GpuPeaks> FindGpu(const v1::GpuPeakTable& table, std::string_view driver_name,
                                    int cc_major, int cc_minor, std::uint64_t memory_bytes) {
  const std::vector<int> exact =
      GpusWithName(table, [&](std::string_view name) { return name == driver_name; });
  if (!exact.empty()) return Choose(table, exact, cc_major, cc_minor, memory_bytes);

  const std::string wanted = NormalizeGpuName(driver_name);
  if (wanted.empty()) return std::nullopt;
  const std::vector<int> normalized =
      GpusWithName(table, [&](std::string_view name) { return NormalizeGpuName(name) == wanted; });
  if (!normalized.empty()) return Choose(table, normalized, cc_major, cc_minor, memory_bytes);

  std::vector<int> family = GpusWithName(table, [&](std::string_view name) {
    return StartsWithWords(NormalizeGpuName(name), wanted);
  });
  if (memory_bytes > 0) {
    std::erase_if(family, [&](int index) {
      return !MemoryPlausible(memory_bytes, table.gpus(index).memory_bytes());
    });
  }
  return Choose(table, std::move(family), cc_major, cc_minor, memory_bytes);
}

std::optional<v1::GpuPeaks> FindGpuByName(const v1::GpuPeakTable& table, std::string_view name) {
  const std::vector<int> same_letters = GpusWithName(table, [&](std::string_view candidate) {
    return absl::EqualsIgnoreCase(AsAbsl(candidate), AsAbsl(name));
  });
  if (same_letters.size() == 1) return table.gpus(same_letters.front());
  const std::string wanted = NormalizeGpuName(name);
  if (wanted.empty()) return std::nullopt;
  const std::vector<int> normalized = GpusWithName(
      table, [&](std::string_view candidate) { return NormalizeGpuName(candidate) == wanted; });
  if (normalized.size() == 1) return table.gpus(normalized.front());
  return std::nullopt;
}

GpuNameMatch MatchGpuName(const v1::GpuPeakTable& table, std::string_view name) {
  GpuNameMatch match;
  match.gpu = FindGpuByName(table, name);
  if (match.gpu.has_value()) return match;
  const std::string wanted = NormalizeGpuName(name);
  if (wanted.empty()) return match;
  const std::vector<std::string> wanted_words = absl::StrSplit(wanted, ' ');
  const std::vector<int> partial = GpusWithName(table, [&](std::string_view candidate) {
    const std::string normalized = NormalizeGpuName(candidate);
    const std::vector<std::string> words = absl::StrSplit(normalized, ' ');
    return std::all_of(wanted_words.begin(), wanted_words.end(), [&](const std::string& word) {
      return std::find(words.begin(), words.end(), word) != words.end();
    });
  });
  if (partial.size() == 1) {
    match.gpu = table.gpus(partial.front());
  } else {
    for (const int i : partial) match.candidates.push_back(table.gpus(i).name());
  }
  return match;
}

}  // namespace kerneleval::gpu_peaks
