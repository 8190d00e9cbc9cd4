#include "evaluator/common/source_text.h"

#include <cctype>

#include "absl/strings/str_cat.h"

namespace kerneleval::source {
namespace {

bool IsIdentifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// Where the logical line that starts at `start` ends: at its line break
// (not included) or the source's end. A backslash before a line break
// continues the line; `*breaks` counts the breaks so passed.
size_t LogicalLineEnd(std::string_view source, size_t start, int* breaks) {
  size_t from = start;
  while (true) {
    const size_t newline = source.find('\n', from);
    if (newline == std::string_view::npos) return source.size();
    size_t before = newline;
    if (before > start && source[before - 1] == '\r') --before;
    if (before > start && source[before - 1] == '\\') {
      ++*breaks;
      from = newline + 1;
      continue;
    }
    return newline;
  }
}

// absl::StrCat takes absl::string_view, which Debian's abseil does not
// alias to std::string_view.
absl::string_view Piece(std::string_view text) { return {text.data(), text.size()}; }

bool OpensBranch(std::string_view directive) {
  for (std::string_view name : {"if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else"}) {
    if (directive == name) return true;
  }
  return false;
}

}  // namespace

std::string MaskCommentsAndLiterals(std::string_view source) {
  std::string out(source);
  const size_t n = source.size();
  size_t i = 0;
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < n; ++k) {
      if (out[k] != '\n') out[k] = ' ';
    }
  };
  while (i < n) {
    const char c = source[i];
    if (c == '/' && i + 1 < n && source[i + 1] == '/') {
      size_t end = i;
      while (end < n && source[end] != '\n') {
        // A backslash before the newline continues the comment.
        if (source[end] == '\\' && end + 1 < n && source[end + 1] == '\n') ++end;
        ++end;
      }
      blank(i, end);
      i = end;
    } else if (c == '/' && i + 1 < n && source[i + 1] == '*') {
      const size_t close = source.find("*/", i + 2);
      const size_t end = close == std::string_view::npos ? n : close + 2;
      blank(i, end);
      i = end;
    } else if (c == 'R' && i + 1 < n && source[i + 1] == '"' &&
               (i == 0 || !IsIdentifierChar(source[i - 1]) ||
                (i >= 1 && (source[i - 1] == 'u' || source[i - 1] == 'U' || source[i - 1] == 'L' ||
                            source[i - 1] == '8')))) {
      // Raw string R"delim( ... )delim".
      const size_t open = source.find('(', i + 2);
      if (open == std::string_view::npos) {
        blank(i, n);
        break;
      }
      const std::string closing =
          absl::StrCat(")", std::string(source.substr(i + 2, open - (i + 2))), "\"");
      const size_t close = source.find(closing, open + 1);
      const size_t end = close == std::string_view::npos ? n : close + closing.size();
      blank(i + 1, end);
      i = end;
    } else if (c == '"' || c == '\'') {
      size_t end = i + 1;
      while (end < n && source[end] != c && source[end] != '\n') {
        if (source[end] == '\\' && end + 1 < n) ++end;
        ++end;
      }
      if (end < n && source[end] == c) ++end;
      blank(i, end);
      i = end;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(source[i + 1])))) {
      // A pp-number, with digit separators (1'000) and exponent signs.
      size_t end = i + 1;
      while (end < n) {
        const char d = source[end];
        // NOLINTNEXTLINE(bugprone-branch-clone): one branch per pp-number rule reads clearer
        if (IsIdentifierChar(d) || d == '.') {
          ++end;
        } else if (d == '\'' && end + 1 < n && IsIdentifierChar(source[end + 1])) {
          end += 2;
        } else if ((d == '+' || d == '-') && (source[end - 1] == 'e' || source[end - 1] == 'E' ||
                                              source[end - 1] == 'p' || source[end - 1] == 'P')) {
          ++end;
        } else {
          break;
        }
      }
      i = end;
    } else if (IsIdentifierChar(c)) {
      size_t end = i + 1;
      while (end < n && IsIdentifierChar(source[end])) ++end;
      i = end;
    } else {
      ++i;
    }
  }
  return out;
}

namespace {

// One logical line of a source, with the directive it holds (empty name:
// none); `keyword` is where the directive's name is.
struct LogicalLine {
  size_t begin = 0;
  size_t end = 0;  // its line break (not included) or the source's end
  int line = 0;
  int end_line = 0;
  std::string_view directive;
  size_t hash = 0;  // the directive's '#'
  size_t keyword = 0;
};

// Calls `visit(const LogicalLine&)` for each logical line of `source`
// (`masked`: MaskCommentsAndLiterals(source)).
template <class Visit>
void ForEachLogicalLine(std::string_view source, std::string_view masked, Visit visit) {
  size_t start = 0;
  int line = 1;
  while (start < source.size()) {
    int continued = 0;
    LogicalLine logical;
    logical.begin = start;
    logical.end = LogicalLineEnd(source, start, &continued);
    logical.line = line;
    logical.end_line = line + continued;
    size_t k = masked.find_first_not_of(" \t\f\v\r", start);
    if (k < logical.end && masked[k] == '#') {
      logical.hash = k;
      k = masked.find_first_not_of(" \t\f\v\r", k + 1);
      size_t name_end = k;
      while (name_end < logical.end && IsIdentifierChar(masked[name_end])) ++name_end;
      if (k < logical.end) {
        logical.directive = source.substr(k, name_end - k);
        logical.keyword = k;
      }
    }
    visit(logical);
    line = logical.end_line + 1;
    start = logical.end + 1;
  }
}

}  // namespace

std::vector<ConditionalBranch> FindConditionalBranches(std::string_view source) {
  std::vector<ConditionalBranch> branches;
  ForEachLogicalLine(source, MaskCommentsAndLiterals(source), [&](const LogicalLine& l) {
    if (!OpensBranch(l.directive)) return;
    branches.push_back({.line = l.line,
                        .end_line = l.end_line,
                        .body = l.end < source.size() ? l.end + 1 : source.size()});
  });
  return branches;
}

std::vector<Directive> FindDirectives(std::string_view source, std::string_view masked) {
  std::vector<Directive> directives;
  ForEachLogicalLine(source, masked, [&](const LogicalLine& l) {
    if (l.directive.empty()) return;
    directives.push_back({.name = l.directive,
                          .begin = l.begin,
                          .end = l.end,
                          .hash = l.hash,
                          .after_name = l.keyword + l.directive.size(),
                          .line = l.line});
  });
  return directives;
}

std::string InstrumentConditionals(std::string_view source, const Instrumentation& how) {
  std::string out;
  out.reserve(source.size() * 2);
  size_t branch = 0;
  std::vector<int> elifs;  // per open group, the #elif written as #else #if
  auto line_directive = [&](int number) { return absl::StrCat("#line ", number, how.line_file); };
  ForEachLogicalLine(source, MaskCommentsAndLiterals(source), [&](const LogicalLine& l) {
    const std::string_view text = source.substr(l.begin, l.end - l.begin);
    const ConditionalBranch here{.line = l.line,
                                 .end_line = l.end_line,
                                 .body = l.end < source.size() ? l.end + 1 : source.size()};
    auto with_marker = [&](std::string_view directive) {
      std::string marker = how.branch_start ? how.branch_start(branch, here) : std::string();
      ++branch;
      return absl::StrCat(Piece(directive), "\n", marker, line_directive(l.end_line + 1));
    };
    std::optional<std::string> replacement;
    const std::string_view d = l.directive;
    if (d == "if" || d == "ifdef" || d == "ifndef") {
      elifs.push_back(0);
      replacement = with_marker(text);
    } else if (d == "elif" || d == "elifdef" || d == "elifndef") {
      if (!elifs.empty()) ++elifs.back();
      const std::string as_if =
          absl::StrCat(Piece(text.substr(0, l.keyword - l.begin)), Piece(d.substr(2)),
                       Piece(text.substr(l.keyword + d.size() - l.begin)));
      replacement = absl::StrCat("#else\n", line_directive(l.line), "\n", with_marker(as_if));
    } else if (d == "else") {
      replacement = with_marker(text);
    } else if (d == "endif") {
      std::string closing;
      if (!elifs.empty()) {
        for (int i = 0; i < elifs.back(); ++i) closing += "#endif\n";
        elifs.pop_back();
      }
      replacement = absl::StrCat(closing, Piece(text), "\n", line_directive(l.end_line + 1));
    } else if (!d.empty() && how.other) {
      replacement = how.other({.name = d, .text = text, .line = l.line, .end_line = l.end_line});
    }
    if (replacement.has_value()) {
      out += *replacement;
    } else {
      out.append(text);
    }
    if (l.end < source.size()) out += '\n';
  });
  return out;
}

}  // namespace kerneleval::source
