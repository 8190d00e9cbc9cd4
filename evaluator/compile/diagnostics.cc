#include "evaluator/compile/diagnostics.h"

#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kerneleval::compile {
namespace {

absl::string_view StripTrailingCr(absl::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

std::string NormalizeSeverity(absl::string_view severity) {
  if (severity == "catastrophic error" || severity == "fatal" || severity == "error") {
    return "error";
  }
  if (severity == "warning") return "warning";
  return "note";
}

std::string Basename(absl::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

std::vector<v1::Diagnostic> ParseDiagnostics(std::string_view log_in, std::string_view source_in,
                                             std::string_view program_name_in) {
  const absl::string_view log(log_in.data(), log_in.size());
  const absl::string_view source(source_in.data(), source_in.size());
  const absl::string_view program_name(program_name_in.data(), program_name_in.size());
  // file(line): severity[ #code[-D]]: message
  static const std::regex kLocated(
      R"(^(\S.*?)\((\d+)\): (catastrophic error|error|warning|note|remark)(?: #\d+(?:-D)?)?: (.*)$)");
  // ptxas warning : message / nvrtc: error: message / Note #3322-D: message
  static const std::regex kUnlocated(
      R"(^(?:ptxas (error|warning|fatal) *: |nvrtc: (error|warning): |(Note|Remark|Warning|Error) #\d+(?:-D)?: )(.*)$)");
  static const std::regex kInstantiatedAt(R"(at line (\d+)(?: of (.+))?$)");

  std::vector<absl::string_view> source_lines = absl::StrSplit(source, '\n');
  std::vector<absl::string_view> lines = absl::StrSplit(log, '\n');
  std::vector<v1::Diagnostic> diagnostics;
  v1::Diagnostic* open = nullptr;  // the diagnostic continuation lines belong to
  bool open_in_user_file = false;
  std::string open_file;

  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string line(StripTrailingCr(lines[i]));
    std::smatch m;
    if (std::regex_match(line, m, kLocated)) {
      v1::Diagnostic& d = diagnostics.emplace_back();
      d.set_severity(NormalizeSeverity(m[3].str()));
      uint32_t line_number = 0;
      (void)absl::SimpleAtoi(m[2].str(), &line_number);
      open_file = m[1].str();
      open_in_user_file = open_file == program_name;
      if (open_in_user_file) {
        d.set_line(line_number);
        d.set_message(m[4].str());
        // Column: NVRTC echoes the source line indented by two characters,
        // then a caret line; trust it only when the echo is the user's line.
        if (i + 2 < lines.size() && line_number >= 1 && line_number <= source_lines.size()) {
          const absl::string_view echo = StripTrailingCr(lines[i + 1]);
          const absl::string_view caret = StripTrailingCr(lines[i + 2]);
          const absl::string_view expected = StripTrailingCr(source_lines[line_number - 1]);
          const size_t at = caret.find('^');
          if (echo.size() >= 2 && echo.substr(2) == expected && at != absl::string_view::npos &&
              at >= 2 && caret.find_first_not_of(" \t^") == absl::string_view::npos) {
            d.set_column(static_cast<uint32_t>(at - 2 + 1));
          }
        }
      } else {
        d.set_line(0);
        d.set_message(absl::StrCat(Basename(open_file), "(", line_number, "): ", m[4].str()));
      }
      open = &d;
      continue;
    }
    if (std::regex_match(line, m, kUnlocated)) {
      v1::Diagnostic& d = diagnostics.emplace_back();
      std::string severity = m[1].matched ? m[1].str() : m[2].matched ? m[2].str() : m[3].str();
      for (char& c : severity) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      d.set_severity(NormalizeSeverity(severity));
      d.set_line(0);
      d.set_message(m[4].str());
      open = nullptr;
      continue;
    }
    if (line.empty()) {
      open = nullptr;
      continue;
    }
    if (open == nullptr) continue;
    // Continuation of the open diagnostic: "detected during instantiation of
    // ... at line N of kernel.cu" points a header's error at the user's line;
    // other indented lines ("argument types are: ...") add detail.
    const absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(trimmed, "detected during") ||
        absl::StartsWith(trimmed, "instantiation")) {
      std::smatch at;
      if (std::regex_search(line, at, kInstantiatedAt)) {
        const bool in_user_file = at[2].matched ? at[2].str() == program_name : open_in_user_file;
        uint32_t user_line = 0;
        if (in_user_file && absl::SimpleAtoi(at[1].str(), &user_line)) {
          if (!open_in_user_file || open->line() == 0) {
            open->set_line(user_line);
          } else if (open->line() != user_line) {
            // An error inside a template of the user's file, instantiated at
            // another line of it: keep the template's line, name the other.
            open->set_message(
                absl::StrCat(open->message(), " (instantiated at line ", user_line, ")"));
          }
        }
      }
      continue;
    }
    // Detail lines are indented deeper than the two-space source echo.
    if (absl::StartsWith(line, "            ") && trimmed.find('^') == absl::string_view::npos) {
      open->set_message(absl::StrCat(open->message(), "; ", trimmed));
    }
  }
  return diagnostics;
}

std::string UserFacingLog(std::string_view raw_log_in, std::string_view hidden_path_in) {
  const absl::string_view raw_log(raw_log_in.data(), raw_log_in.size());
  const absl::string_view hidden_path(hidden_path_in.data(), hidden_path_in.size());
  std::string out;
  // NVRTC, once any compile of the process issued a warning it can
  // suppress, ends every later log with this remark: without a warning of
  // its own, another request's compile said what an earlier one had done.
  static constexpr absl::string_view kSuppressRemark = "Remark: The warnings can be suppressed";
  bool has_warning = false;  // (the remark itself names "<warning-number>")
  for (absl::string_view line : absl::StrSplit(raw_log, '\n')) {
    has_warning |= !absl::StartsWith(line, kSuppressRemark) && absl::StrContains(line, "warning");
  }
  for (absl::string_view line : absl::StrSplit(raw_log, '\n')) {
    const absl::string_view content = StripTrailingCr(line);
    if (absl::StartsWith(content, "ptxas info")) continue;
    if (!has_warning && absl::StartsWith(content, kSuppressRemark)) continue;
    // "ptxas         .     0 bytes stack frame, ..." (continuation of ptxas info)
    if (absl::StartsWith(content, "ptxas ") &&
        absl::StartsWith(absl::StripLeadingAsciiWhitespace(content.substr(6)), ".")) {
      continue;
    }
    if (!hidden_path.empty() && absl::StrContains(content, hidden_path)) continue;
    // 'cannot open source file "X": Permission denied' would tell that X
    // exists (a missing file has no reason appended): drop the reason.
    static constexpr absl::string_view kCannotOpen = "cannot open source file \"";
    if (const size_t at = content.find(kCannotOpen); at != absl::string_view::npos) {
      const size_t close = content.find('"', at + kCannotOpen.size());
      if (close != absl::string_view::npos) {
        absl::StrAppend(&out, content.substr(0, close + 1), "\n");
        continue;
      }
    }
    // NVRTC compiles the name expressions of template kernels to instantiate
    // (the plan's `scale<float, 4>`) as a file of its own, "__nv_name_map(2):
    // error: ...": an unlocated error (ParseDiagnostics) that says where.
    static constexpr absl::string_view kNameMap = "__nv_name_map(";
    if (absl::StartsWith(content, kNameMap)) {
      const size_t close = content.find("): ");
      const size_t colon = close == absl::string_view::npos ? close : content.find(": ", close + 3);
      if (colon != absl::string_view::npos) {
        absl::StrAppend(
            &out, "nvrtc: ", content.substr(close + 3, colon - close - 3),
            ": in the template arguments of a launched kernel: ", content.substr(colon + 2), "\n");
        continue;
      }
    }
    absl::StrAppend(&out, content, "\n");
  }
  // No leading blank lines, one trailing newline at most.
  const size_t first = out.find_first_not_of('\n');
  if (first == std::string::npos) return "";
  out.erase(0, first);
  while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n')
    out.pop_back();
  return out;
}

}  // namespace kerneleval::compile
