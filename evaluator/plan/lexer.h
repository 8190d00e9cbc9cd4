// A light C++ tokenizer for reading kernel declarations and directive
// comments out of CUDA source. Not a preprocessor: it skips block comments,
// string/character literals (raw strings too) and preprocessor lines, and
// keeps `//` comments separately. Total: any byte sequence lexes.
// Internal to evaluator/plan.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kerneleval::plan::detail {

enum class TokenKind {
  kIdentifier,  // also keywords; bytes >= 0x80 count as identifier characters
  kNumber,      // a pp-number: 42, 0x1F, 1.5e-3f, 1'000
  kString,      // "...", R"(...)", u8"..." (prefix included)
  kChar,        // 'a'
  kPunct,       // one character, except "::" which is one token
};

struct Token {
  TokenKind kind;
  std::string_view text;  // a view into the lexed source
  uint32_t line;          // 1-based
};

// A `//` comment: the text after the two slashes up to the end of the line.
struct LineComment {
  std::string_view text;
  uint32_t line;  // 1-based
};

// A preprocessor line, continuation lines joined by the caller if needed:
// text from after '#' to the end of the (last continued) line.
struct PreprocessorLine {
  std::string_view text;
  uint32_t line;  // 1-based, the line of the '#'
};

struct LexedSource {
  std::vector<Token> tokens;
  std::vector<LineComment> line_comments;
  std::vector<PreprocessorLine> preprocessor_lines;
};

// Views in the result point into `source`, which must outlive it.
LexedSource Lex(std::string_view source);

}  // namespace kerneleval::plan::detail
