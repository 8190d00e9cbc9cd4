// `kerneleval rescore FILE.jsonl [--mode speedup|roofline] [--partial|--no-partial]`:
// recomputes the reward of logged verdicts offline, one JSON object a line, with
// the rubric the server uses (rubric::SanitizedScore: the seed's reward, with a
// non-finite reward reported as 0.0).
//
// Input lines need "correct" (bool) and "stage" (string); "speedup" and
// "roofline_frac" may be numbers, null or missing, or the strings "nan", "inf",
// "-inf" (as in tests/rubric/golden_rewards.jsonl) and proto3 JSON's "NaN",
// "Infinity", "-Infinity" (what `kerneleval evaluate --json` writes). Each line
// is printed back with "reward" set, "reward_settings" (when the line has it,
// as a verdict does) set to the settings used, and every other field kept in
// order; a group's response ({"verdicts": [...]}, as `kerneleval evaluate -s a
// -s b --json` prints it) gets each of its verdicts rescored. Blank lines are
// printed back blank. The first malformed line stops the run: the lines before it have
// been printed, the error names FILE:LINE on stderr, and the exit code is 2.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "rubric/rubric.h"

namespace kerneleval::cli {
namespace {

using Json = nlohmann::ordered_json;  // keeps the caller's field order

struct RescoreOptions {
  std::string file;
  std::string mode;  // empty: $KERNEL_ENV_REWARD, else "speedup"
  bool partial = false;
  bool no_partial = false;
};

// A number, null/missing, or a non-finite value spelled as Python's repr
// ("nan", "inf", "-inf") or as proto3 JSON ("NaN", "Infinity", "-Infinity").
absl::StatusOr<std::optional<double>> OptionalNumber(const Json& row, const char* key) {
  const auto it = row.find(key);
  if (it == row.end() || it->is_null()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_string()) {
    const std::string& text = it->get_ref<const std::string&>();
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

absl::StatusOr<rubric::Observation> ParseObservation(const Json& row) {
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
  absl::StatusOr<std::optional<double>> speedup = OptionalNumber(row, "speedup");
  if (!speedup.ok()) return speedup.status();
  observation.speedup = *speedup;
  absl::StatusOr<std::optional<double>> roofline_frac = OptionalNumber(row, "roofline_frac");
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
  // Sets one verdict's reward (and reward_settings, when it has them).
  const auto rescore = [&](Json& verdict) -> absl::Status {
    absl::StatusOr<rubric::Observation> observation = ParseObservation(verdict);
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
    Json row = Json::parse(line, /*cb=*/nullptr, /*allow_exceptions=*/false);
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
    std::cout << row.dump(-1, ' ', false, Json::error_handler_t::replace) << '\n';
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
