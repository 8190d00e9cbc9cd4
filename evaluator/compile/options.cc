#include "evaluator/compile/options.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "evaluator/plan/name_expression.h"

namespace kerneleval::compile {
namespace {

constexpr size_t kMaxMacroValueChars = 256;

bool IsIdentifier(absl::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool IsSaneMacroValue(absl::string_view value) {
  static constexpr absl::string_view kPunctuation = "_.+-*/%()<>,:&|^~!";
  return value.size() <= kMaxMacroValueChars && std::all_of(value.begin(), value.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) ||
                  kPunctuation.find(c) != absl::string_view::npos;
         });
}

// "-x" and "--x" are the same option to NVRTC; returns the name without
// dashes and the "=value" part (if any) separately.
struct SplitOption {
  std::string name;
  std::string value;
  bool has_value = false;
};

SplitOption Split(absl::string_view option) {
  absl::string_view body = option;
  if (absl::StartsWith(body, "--")) {
    body.remove_prefix(2);
  } else if (absl::StartsWith(body, "-")) {
    body.remove_prefix(1);
  }
  SplitOption split;
  const size_t eq = body.find('=');
  split.name = std::string(body.substr(0, eq));
  if (eq != absl::string_view::npos) {
    split.value = std::string(body.substr(eq + 1));
    split.has_value = true;
  }
  return split;
}

absl::Status Refuse(absl::string_view option, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("compile option \"", option, "\" is not allowed: ", why));
}

// Options refused with a specific reason (by name without dashes).
absl::Status RefusalFor(absl::string_view option, const SplitOption& split) {
  const std::string& n = split.name;
  if (n == "G" || n == "device-debug" || n == "dopt" || n == "device-optimize") {
    return Refuse(option, "debug builds change the code being timed");
  }
  if (absl::StartsWith(n, "I") || n == "include-path" || n == "isystem" || n == "system-include") {
    return Refuse(option,
                  "include paths are fixed by the server (the CUDA toolkit's headers and CCCL)");
  }
  if (n == "include" || n == "pre-include") {
    return Refuse(option, "pre-included headers are fixed by the server");
  }
  if (n == "rdc" || n == "relocatable-device-code" || n == "dc" || n == "dlink" ||
      n == "device-link" || n == "dlto" || n == "dlink-time-opt" ||
      n == "extensible-whole-program" || n == "ewp") {
    return Refuse(option,
                  "relocatable device code, device linking and dynamic parallelism are not "
                  "supported: a submission is one translation unit whose kernels the harness "
                  "launches");
  }
  if (absl::StartsWith(n, "pch") || n == "create-pch" || n == "use-pch" ||
      n == "instantiate-templates-in-pch") {
    return Refuse(option, "precompiled headers are managed by the server");
  }
  if (n == "arch" || n == "gpu-architecture") {
    return Refuse(option, "the target architecture is CompileOptions.arch");
  }
  if (n == "Xptxas" || n == "ptxas-options" || n == "Xnvvm") {
    return Refuse(option, "back-end options are fixed by the server");
  }
  if (n == "U" || n == "undefine-macro" || absl::StartsWith(n, "U")) {
    return Refuse(option, "macros cannot be undefined from the command line");
  }
  return Refuse(option, absl::StrCat("not on the allow-list (", AllowedOptionsSummary(), ")"));
}

}  // namespace

std::string AllowedOptionsSummary() {
  return "--use_fast_math, -maxrregcount=N, -lineinfo, -DNAME[=VALUE], --std=c++17|c++20, "
         "--extra-device-vectorization, -ftz=, -prec-div=, -prec-sqrt=, -fmad= (true|false), "
         "--restrict";
}

absl::StatusOr<std::vector<std::string>> CheckUserOptions(const std::vector<std::string>& options) {
  if (options.size() > kMaxUserOptions) {
    return absl::InvalidArgumentError(absl::StrCat("too many compile options (", options.size(),
                                                   "; at most ", kMaxUserOptions, ")"));
  }
  std::vector<std::string> canonical;
  std::set<std::string> seen;  // option identity: name, or "D" + macro name
  for (const std::string& option : options) {
    if (option.empty() || option[0] != '-') {
      return Refuse(option, "options start with '-' (one option per string)");
    }
    if (option.find_first_of(" \t\r\n\\\"'#") != std::string::npos) {
      return Refuse(option, "whitespace, quotes, '\\' and '#' are not allowed in options");
    }
    std::string identity;
    std::string spelled;
    if (absl::StartsWith(option, "-D") || absl::StartsWith(option, "--define-macro=")) {
      const absl::string_view definition = absl::StartsWith(option, "-D")
                                               ? absl::string_view(option).substr(2)
                                               : absl::string_view(option).substr(15);
      const size_t eq = definition.find('=');
      const absl::string_view name = definition.substr(0, eq);
      if (!IsIdentifier(name)) {
        return Refuse(option, "a macro name is an identifier ([A-Za-z_][A-Za-z0-9_]*)");
      }
      if (absl::StartsWith(name, "__")) {
        return Refuse(option, "macro names starting with \"__\" are reserved");
      }
      if (eq != absl::string_view::npos && !IsSaneMacroValue(definition.substr(eq + 1))) {
        return Refuse(option, absl::StrCat("a macro value is at most ", kMaxMacroValueChars,
                                           " characters of [A-Za-z0-9_.+-*/%()<>,:&|^~!]"));
      }
      identity = absl::StrCat("D", name);
      spelled = absl::StrCat("-D", definition);
    } else {
      const SplitOption split = Split(option);
      const std::string& n = split.name;
      const std::string& v = split.value;
      auto boolean = [&](absl::string_view canonical_name) -> absl::Status {
        if (!split.has_value || (v != "true" && v != "false")) {
          return Refuse(option, absl::StrCat("write --", canonical_name, "=true or =false"));
        }
        identity = std::string(canonical_name);
        spelled = absl::StrCat("--", canonical_name, "=", v);
        return absl::OkStatus();
      };
      if ((n == "use_fast_math" || n == "use-fast-math") && !split.has_value) {
        identity = spelled = "--use_fast_math";
      } else if (n == "maxrregcount") {
        int registers = 0;
        if (!split.has_value || !absl::SimpleAtoi(v, &registers) || registers < 1 ||
            registers > 255) {
          return Refuse(option, "write -maxrregcount=N with N in 1..255");
        }
        identity = "maxrregcount";
        spelled = absl::StrCat("--maxrregcount=", registers);
      } else if ((n == "lineinfo" || n == "generate-line-info") && !split.has_value) {
        identity = spelled = "--generate-line-info";
      } else if (n == "std") {
        if (v != "c++17" && v != "c++20") return Refuse(option, "write --std=c++17 or --std=c++20");
        identity = "std";
        spelled = absl::StrCat("--std=", v);
      } else if (n == "extra-device-vectorization" && !split.has_value) {
        identity = spelled = "--extra-device-vectorization";
      } else if (n == "restrict" && !split.has_value) {
        identity = spelled = "--restrict";
      } else if (n == "ftz" || n == "prec-div" || n == "prec-sqrt" || n == "fmad") {
        if (absl::Status s = boolean(n); !s.ok()) return s;
      } else {
        return RefusalFor(option, split);
      }
    }
    if (!seen.insert(identity).second) {
      return Refuse(option, "given twice (each option, and each macro, at most once)");
    }
    canonical.push_back(std::move(spelled));
  }
  std::sort(canonical.begin(), canonical.end());
  return canonical;
}

absl::StatusOr<std::vector<std::string>> CheckNameExpressions(
    const std::vector<std::string>& expressions) {
  if (expressions.size() > kMaxNameExpressions) {
    return absl::InvalidArgumentError(
        absl::StrCat(expressions.size(), " name expressions; the limit is ", kMaxNameExpressions));
  }
  for (const std::string& expression : expressions) {
    auto refused = [&](std::string_view why) {
      std::string shown = expression.substr(0, 80);
      std::replace_if(
          shown.begin(), shown.end(), [](char c) { return c < 0x20 || c == 0x7f; }, '?');
      return absl::InvalidArgumentError(absl::StrCat("name expression \"", shown,
                                                     expression.size() > 80 ? "..." : "",
                                                     "\": ", std::string(why)));
    };
    if (expression.empty()) return refused("empty");
    if (expression.size() > kMaxNameExpressionBytes) {
      return refused(absl::StrCat("longer than ", kMaxNameExpressionBytes, " characters"));
    }
    if (!plan::IsKernelName(expression)) {
      return refused(
          "only a kernel's name with template arguments of identifiers, numbers, spaces and "
          "`: < > , ( ) * + - & / %` (no comments)");
    }
  }
  std::vector<std::string> canonical = expressions;
  std::sort(canonical.begin(), canonical.end());
  canonical.erase(std::unique(canonical.begin(), canonical.end()), canonical.end());
  return canonical;
}

absl::Status CheckArch(const std::string& arch) {
  absl::string_view digits;
  if (absl::StartsWith(arch, "sm_")) {
    digits = absl::string_view(arch).substr(3);
  } else if (absl::StartsWith(arch, "compute_")) {
    digits = absl::string_view(arch).substr(8);
  }
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) digits.remove_suffix(1);
  const bool ok = digits.size() >= 2 && digits.size() <= 3 &&
                  std::all_of(digits.begin(), digits.end(),
                              [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "architecture \"", arch, "\" is not sm_XX or compute_XX (e.g. sm_90, sm_90a, compute_90)"));
  }
  return absl::OkStatus();
}

bool IsVirtualArch(const std::string& arch) { return absl::StartsWith(arch, "compute_"); }

}  // namespace kerneleval::compile
