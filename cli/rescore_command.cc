// `kerneleval rescore FILE.jsonl [--mode speedup|roofline] [--partial|--no-partial]`:
// recomputes the reward of logged verdicts offline, one JSON object a line, with
// the rubric the server uses (rubric::SanitizedScore: the seed's reward, with a
// non-finite reward reported as 0.0).
//
// Input lines need "correct" (bool) and "stage" (string); "speedup" and
// "roofline_frac" may be numbers, null or missing, or the strings "nan", "inf",
// "-inf" (as in tests/rubric/golden_rewards.jsonl) and proto3 JSON's "NaN",
// "Infinity", "-Infinity" (what `kerneleval evaluate --json` writes); a number
// past a double's range (1e400) is +-inf, as Python's json reads it. Each line
// is printed back with "reward" set, "reward_settings" (when the line has it,
// as a verdict does) set to the settings used, and every other field kept in
// order (an integer past 64 bits, or 1e400, as written); a group's response
// ({"verdicts": [...]}, as `kerneleval evaluate -s a -s b --json` prints it)
// gets each of its verdicts rescored. Blank lines are printed back blank. The
// first malformed line stops the run: the lines before it have been printed,
// the error names FILE:LINE on stderr, and the exit code is 2.

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/command.h"
#include "rubric/rubric.h"

namespace kerneleval::cli {
namespace {

using Json = nlohmann::ordered_json;  // keeps the caller's field order

// Numbers a double cannot hold as written: integers past 64 bits (nlohmann
// reads them as doubles: a logged id 123456789012345678901234567890 came back
// 1.2345678901234568e+29) and values past a double's range (1e400, which
// Python's json reads as inf and nlohmann refuses). Before parsing, each
// becomes a placeholder string (U+E000, a private-use character, then its
// index); the rubric reads a placeholder as the number's value (inf for
// 1e400), and the output gets the number back as written.
constexpr absl::string_view kPlaceholderMark = "\xee\x80\x80";  // U+E000 in UTF-8

struct ProtectedLine {
  std::string text;                  // the line with placeholders
  std::vector<std::string> numbers;  // the numbers as written, by index
};

// Whether `token` (a JSON number) is one of those numbers.
bool NeedsProtection(const std::string& token) {
  const bool integer = token.find_first_of(".eE") == std::string::npos;
  if (integer) {
    errno = 0;
    char* end = nullptr;
    if (token[0] == '-') {
      (void)std::strtoll(token.c_str(), &end, 10);
    } else {
      (void)std::strtoull(token.c_str(), &end, 10);
    }
    return errno == ERANGE;
  }
  errno = 0;
  const double value = std::strtod(token.c_str(), nullptr);
  return errno == ERANGE && std::isinf(value);
}

ProtectedLine ProtectNumbers(const std::string& line) {
  ProtectedLine out;
  // A line that has the mark already is left as it is (a placeholder could
  // not be told from the caller's string).
  if (absl::StrContains(line, kPlaceholderMark)) {
    out.text = line;
    return out;
  }
  out.text.reserve(line.size());
  bool in_string = false;
  for (size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (in_string) {
      out.text += c;
      if (c == '\\' && i + 1 < line.size()) {
        out.text += line[i + 1];
        i += 2;
        continue;
      }
      if (c == '"') in_string = false;
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out.text += c;
      ++i;
      continue;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      size_t end = i + 1;
      while (end < line.size() &&
             (std::isdigit(static_cast<unsigned char>(line[end])) || line[end] == '.' ||
              line[end] == 'e' || line[end] == 'E' || line[end] == '+' || line[end] == '-')) {
        ++end;
      }
      const std::string token = line.substr(i, end - i);
      if (NeedsProtection(token)) {
        absl::StrAppend(&out.text, "\"", kPlaceholderMark, out.numbers.size(), "\"");
        out.numbers.push_back(token);
      } else {
        out.text += token;
      }
      i = end;
      continue;
    }
    out.text += c;
    ++i;
  }
  return out;
}

// The index of a placeholder string, if `text` is one.
std::optional<size_t> PlaceholderIndex(absl::string_view text, size_t count) {
  if (!absl::ConsumePrefix(&text, kPlaceholderMark)) return std::nullopt;
  size_t index = 0;
  if (!absl::SimpleAtoi(text, &index) || index >= count) return std::nullopt;
  return index;
}

// The output line with each placeholder replaced by its number as written.
std::string RestoreNumbers(std::string text, const std::vector<std::string>& numbers) {
  for (size_t i = 0; i < numbers.size(); ++i) {  // the closing quote ends each: "#1" != "#10"
    const std::string placeholder = absl::StrCat("\"", kPlaceholderMark, i, "\"");
    if (const size_t at = text.find(placeholder); at != std::string::npos) {
      text.replace(at, placeholder.size(), numbers[i]);
    }
  }
  return text;
}

struct RescoreOptions {
  std::string file;
  std::string mode;  // empty: $KERNEL_ENV_REWARD, else "speedup"
  bool partial = false;
  bool no_partial = false;
};

// A number, null/missing, or a non-finite value spelled as Python's repr
// ("nan", "inf", "-inf") or as proto3 JSON ("NaN", "Infinity", "-Infinity").
// `numbers`: the protected numbers of the line (ProtectNumbers).
absl::StatusOr<std::optional<double>> OptionalNumber(const Json& row, const char* key,
                                                     const std::vector<std::string>& numbers) {
  const auto it = row.find(key);
  if (it == row.end() || it->is_null()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const std::string& text = it->get_ref<const std::string&>();
    if (const std::optional<size_t> index = PlaceholderIndex(text, numbers.size())) {
      return std::strtod(numbers[*index].c_str(), nullptr);  // +-inf past a double's range
    }
    if (text == "nan" || text == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (text == "inf" || text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-inf" || text == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "\"", key,
      "\" must be a number, null, \"nan\", \"inf\", \"-inf\", \"NaN\", \"Infinity\" or "
      "\"-Infinity\", not ",
      it->dump()));
}

// The settings as a verdict's "reward_settings" (proto3 JSON of RewardSettings).
Json RewardSettingsJson(const rubric::RewardConfig& config) {
  return Json{{"mode", config.mode == rubric::RewardMode::kRoofline ? "REWARD_MODE_ROOFLINE"
                                                                    : "REWARD_MODE_SPEEDUP"},
              {"partial_credit", config.partial_credit}};
}

absl::StatusOr<rubric::Observation> ParseObservation(const Json& row,
                                                     const std::vector<std::string>& numbers) {
  if (!row.is_object()) return absl::InvalidArgumentError("not a JSON object");
  rubric::Observation observation;
  const auto correct = row.find("correct");
  if (correct == row.end() || !correct->is_boolean()) {
    return absl::InvalidArgumentError("\"correct\" must be present and true or false");
  }
  observation.correct = correct->get<bool>();
  const auto stage = row.find("stage");
  if (stage == row.end() || !stage->is_string()) {
    return absl::InvalidArgumentError("\"stage\" must be present and a string");
  }
  observation.stage = stage->get<std::string>();
  absl::StatusOr<std::optional<double>> speedup = OptionalNumber(row, "speedup", numbers);
  if (!speedup.ok()) return speedup.status();
  observation.speedup = *speedup;
  absl::StatusOr<std::optional<double>> roofline_frac =
      OptionalNumber(row, "roofline_frac", numbers);
  if (!roofline_frac.ok()) return roofline_frac.status();
  observation.roofline_frac = *roofline_frac;
  return observation;
}

int Rescore(const RescoreOptions& options) {
  std::optional<bool> partial;
  if (options.partial) partial = true;
  if (options.no_partial) partial = false;
  const absl::StatusOr<rubric::RewardConfig> config =
      rubric::RewardConfigFromEnv(options.mode, partial);
  if (!config.ok()) {
    std::fprintf(stderr, "kerneleval rescore: %s\n",
                 std::string(config.status().message()).c_str());
    return kExitUsage;
  }

  std::ifstream file;
  std::istream* in = &std::cin;
  if (options.file != "-") {
    file.open(options.file);
    if (!file) {
      std::fprintf(stderr, "kerneleval rescore: cannot open %s\n", options.file.c_str());
      return kExitUsage;
    }
    in = &file;
  }
  const std::string source = options.file == "-" ? "<stdin>" : options.file;

  std::string line;
  ProtectedLine input;
  // Sets one verdict's reward (and reward_settings, when it has them).
  const auto rescore = [&](Json& verdict) -> absl::Status {
    absl::StatusOr<rubric::Observation> observation = ParseObservation(verdict, input.numbers);
    if (!observation.ok()) return observation.status();
    verdict["reward"] = rubric::SanitizedScore(*config, *observation);
    // A verdict says which settings gave its reward: now these.
    if (verdict.contains("reward_settings")) {
      verdict["reward_settings"] = RewardSettingsJson(*config);
    }
    return absl::OkStatus();
  };
  for (size_t line_number = 1; std::getline(*in, line); ++line_number) {
    // Blank lines stay, so that output line N is input line N.
    if (absl::StripAsciiWhitespace(line).empty()) {
      std::cout << '\n';
      continue;
    }
    input = ProtectNumbers(line);
    Json row = Json::parse(input.text, /*cb=*/nullptr, /*allow_exceptions=*/false);
    absl::Status status = absl::OkStatus();
    if (row.is_discarded()) {
      status = absl::InvalidArgumentError("not valid JSON");
    } else if (row.is_object() && !row.contains("correct") && row.contains("verdicts") &&
               row["verdicts"].is_array()) {
      // A group's response (`kerneleval evaluate -s a -s b --json`): each
      // of its verdicts.
      for (Json& verdict : row["verdicts"]) {
        if (status = rescore(verdict); !status.ok()) {
          status = absl::InvalidArgumentError(
              absl::StrCat("a verdict of the group: ", status.message()));
          break;
        }
      }
    } else {
      status = rescore(row);
    }
    if (!status.ok()) {
      std::cout.flush();
      std::fprintf(stderr, "kerneleval rescore: %s:%zu: %s\n", source.c_str(), line_number,
                   std::string(status.message()).c_str());
      return kExitUsage;
    }
    std::cout << RestoreNumbers(row.dump(-1, ' ', false, Json::error_handler_t::replace),
                                input.numbers)
              << '\n';
  }
  if (in->bad()) {
    std::fprintf(stderr, "kerneleval rescore: error reading %s\n", source.c_str());
    return kExitUsage;
  }
  std::cout.flush();
  return kExitOk;
}

void AddRescoreCommand(CLI::App& root) {
  auto options = std::make_shared<RescoreOptions>();
  CLI::App* command = root.add_subcommand(
      "rescore",
      "Recompute \"reward\" for logged verdicts (JSON lines with correct, stage, speedup, "
      "roofline_frac); prints each line back with the reward (and reward_settings, when "
      "present) set. A non-finite reward is "
      "reported as 0. Stops at the first malformed line (exit 2, FILE:LINE on stderr).");
  command->add_option("FILE", options->file, "JSON-lines file, or - for stdin")->required();
  command->add_option("--mode", options->mode,
                      "speedup | roofline (default: $KERNEL_ENV_REWARD, else speedup)");
  CLI::Option* partial = command->add_flag(
      "--partial", options->partial,
      "partial credit for incorrect kernels (default: $KERNEL_ENV_PARTIAL_CREDIT == 1)");
  CLI::Option* no_partial =
      command->add_flag("--no-partial", options->no_partial, "no partial credit");
  partial->excludes(no_partial);
  command->callback([options] { SetExitCode(Rescore(*options)); });
}

}  // namespace

KERNELEVAL_CLI_COMMAND("rescore", AddRescoreCommand);

}  // namespace kerneleval::cli
