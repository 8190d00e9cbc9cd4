// Reading CUDA C++ source text without a compiler: what is code, and where
// its conditional preprocessor branches start. Shared by the compile stage
// (which asks NVRTC which branches it takes) and the CPU backend (whose host
// build must take the same ones).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kerneleval::source {

// `source` with comments, string and character literals replaced by spaces;
// newlines and every other character stay where they were (same length).
std::string MaskCommentsAndLiterals(std::string_view source);

// One branch of a conditional directive group: the text the preprocessor
// keeps or skips after `#if`, `#ifdef`, `#ifndef`, `#elif`, `#elifdef`,
// `#elifndef` or `#else`.
struct ConditionalBranch {
  int line = 0;      // the directive's first line, 1-based
  int end_line = 0;  // its last line (continuation lines included)
  // Where the branch's text starts: just past the directive's last line
  // break (the source's end if it has none).
  size_t body = 0;
};

// The branches of `source`'s conditional directives in source order (a
// branch's index in the vector is its number). Directives inside comments
// and literals are not directives; a directive ends at the first line break
// no backslash continues.
std::vector<ConditionalBranch> FindConditionalBranches(std::string_view source);

// A preprocessor directive of a source (not in a comment or a literal).
struct Directive {
  std::string_view name;  // "define", "if", ... (no '#')
  size_t begin = 0;       // its logical line: [begin, end), continuations
  size_t end = 0;         // included, up to its final line break
  size_t hash = 0;        // its '#'
  size_t after_name = 0;  // just past the name
  int line = 0;           // its first line, 1-based
};

// Every directive of `source`, in order (`masked`:
// MaskCommentsAndLiterals(source), which the caller usually has already).
std::vector<Directive> FindDirectives(std::string_view source, std::string_view masked);

// A preprocessor directive other than a conditional one.
struct DirectiveLine {
  std::string_view name;  // "include", "define", "line", ... (no '#')
  std::string_view text;  // the logical line, continuations included, no final line break
  int line = 0;           // its first line, 1-based
  int end_line = 0;       // its last line
};

struct Instrumentation {
  // Lines (each ending in a line break) to put at the start of branch
  // `index` (FindConditionalBranches' numbering), e.g. a marker.
  std::function<std::string(size_t index, const ConditionalBranch& branch)> branch_start;
  // What follows the number in the `#line` directives added: "" (the file
  // name stays) or ` "name"`.
  std::string line_file;
  // Each other directive's replacement (no final line break; one that adds
  // lines ends in a `#line`), or nullopt to keep it.
  std::function<std::optional<std::string>(const DirectiveLine& directive)> other;
};

// `source` with `branch_start` at the start of every conditional branch,
// and every line numbered as in `source` wherever the preprocessor looks
// (a source can test __LINE__): a `#line` after each marker and after each
// `#endif`, and each `#elif` (`#elifdef`, `#elifndef`) written as `#else`,
// `#line`, `#if` (`#ifdef`, `#ifndef`), closed by an extra `#endif` at its
// group's end, so that no condition is read after the lines a skipped
// branch's marker added.
std::string InstrumentConditionals(std::string_view source, const Instrumentation& how);

}  // namespace kerneleval::source
