#include "evaluator/plan/lexer.h"

#include <utility>

namespace kerneleval::plan::detail {
namespace {

bool IsIdentStart(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80;
}
bool IsIdentChar(unsigned char c) { return IsIdentStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsHorizontalSpace(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(source) {}

  LexedSource Run() {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
        at_line_start_ = true;
        continue;
      }
      if (IsHorizontalSpace(c)) {
        ++pos_;
        continue;
      }
      if (c == '\\' && pos_ + 1 < src_.size() && src_[pos_ + 1] == '\n') {
        pos_ += 2;  // line splice outside a preprocessor line
        ++line_;
        continue;
      }
      if (c == '/' && Next(1) == '/') {
        LexLineComment();
        continue;
      }
      if (c == '/' && Next(1) == '*') {
        SkipBlockComment();
        continue;
      }
      if (c == '#' && at_line_start_) {
        LexPreprocessorLine();
        continue;
      }
      at_line_start_ = false;
      if (c == '"') {
        LexQuoted(pos_, '"', TokenKind::kString);
      } else if (c == '\'') {
        LexQuoted(pos_, '\'', TokenKind::kChar);
      } else if (IsDigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && IsDigit(static_cast<unsigned char>(Next(1))))) {
        LexNumber();
      } else if (IsIdentStart(static_cast<unsigned char>(c))) {
        LexIdentifierOrPrefixedLiteral();
      } else if (c == ':' && Next(1) == ':') {
        Emit(TokenKind::kPunct, pos_, 2);
        pos_ += 2;
      } else {
        Emit(TokenKind::kPunct, pos_, 1);
        ++pos_;
      }
    }
    return std::move(out_);
  }

 private:
  char Next(size_t ahead) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }

  void Emit(TokenKind kind, size_t start, size_t length) {
    out_.tokens.push_back(Token{kind, src_.substr(start, length), line_});
  }

  void LexLineComment() {
    const size_t start = pos_ + 2;
    size_t end = start;
    while (end < src_.size() && src_[end] != '\n') {
      ++end;
    }
    std::string_view text = src_.substr(start, end - start);
    if (!text.empty() && text.back() == '\r') {
      text.remove_suffix(1);
    }
    out_.line_comments.push_back(LineComment{text, line_});
    pos_ = end;  // the '\n' is handled by the main loop
  }

  void SkipBlockComment() {
    pos_ += 2;
    while (pos_ < src_.size()) {
      if (src_[pos_] == '*' && Next(1) == '/') {
        pos_ += 2;
        return;
      }
      if (src_[pos_] == '\n') {
        ++line_;
      }
      ++pos_;
    }
  }

  // From '#' to the end of the line, following backslash continuations and
  // stepping over block comments (which may span lines).
  void LexPreprocessorLine() {
    const uint32_t first_line = line_;
    const size_t start = ++pos_;
    while (pos_ < src_.size() && src_[pos_] != '\n') {
      if (src_[pos_] == '\\' && Next(1) == '\n') {
        pos_ += 2;
        ++line_;
      } else if (src_[pos_] == '\\' && Next(1) == '\r' && Next(2) == '\n') {
        pos_ += 3;
        ++line_;
      } else if (src_[pos_] == '/' && Next(1) == '*') {
        SkipBlockComment();
      } else if (src_[pos_] == '/' && Next(1) == '/') {
        while (pos_ < src_.size() && src_[pos_] != '\n') {
          ++pos_;
        }
      } else {
        ++pos_;
      }
    }
    out_.preprocessor_lines.push_back(
        PreprocessorLine{src_.substr(start, pos_ - start), first_line});
  }

  // A "..." or '...' literal starting at `start` (which may be a prefix such
  // as u8); the closing quote is searched from pos_. Stops at an unescaped
  // newline (an unterminated literal).
  void LexQuoted(size_t start, char quote, TokenKind kind) {
    ++pos_;  // opening quote
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == '\\' && pos_ + 1 < src_.size()) {
        if (src_[pos_ + 1] == '\n') {
          ++line_;
        }
        pos_ += 2;
        continue;
      }
      if (c == '\n') {
        break;
      }
      ++pos_;
      if (c == quote) {
        break;
      }
    }
    Emit(kind, start, pos_ - start);
  }

  // R"delim( ... )delim" with pos_ on the opening quote.
  void LexRawString(size_t start) {
    const uint32_t first_line = line_;
    size_t p = pos_ + 1;
    const size_t delim_start = p;
    while (p < src_.size() && p - delim_start <= 16 && src_[p] != '(' && src_[p] != '"' &&
           src_[p] != '\n' && src_[p] != ' ' && src_[p] != ')' && src_[p] != '\\') {
      ++p;
    }
    if (p >= src_.size() || src_[p] != '(') {
      LexQuoted(start, '"', TokenKind::kString);  // not a valid raw string: lex as a plain one
      return;
    }
    const std::string_view delim = src_.substr(delim_start, p - delim_start);
    ++p;  // '('
    while (p < src_.size()) {
      if (src_[p] == ')' && src_.substr(p + 1, delim.size()) == delim &&
          p + 1 + delim.size() < src_.size() && src_[p + 1 + delim.size()] == '"') {
        p += delim.size() + 2;
        break;
      }
      if (src_[p] == '\n') {
        ++line_;
      }
      ++p;
    }
    if (p > src_.size()) {
      p = src_.size();
    }
    pos_ = p;
    out_.tokens.push_back(Token{TokenKind::kString, src_.substr(start, pos_ - start), first_line});
  }

  void LexIdentifierOrPrefixedLiteral() {
    const size_t start = pos_;
    while (pos_ < src_.size() && IsIdentChar(static_cast<unsigned char>(src_[pos_]))) {
      ++pos_;
    }
    const std::string_view word = src_.substr(start, pos_ - start);
    if (pos_ < src_.size() && (src_[pos_] == '"' || src_[pos_] == '\'')) {
      const bool string_prefix = word == "u8" || word == "u" || word == "U" || word == "L";
      const bool raw_prefix =
          word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR";
      if (src_[pos_] == '"' && raw_prefix) {
        LexRawString(start);
        return;
      }
      if (string_prefix) {
        LexQuoted(start, src_[pos_], src_[pos_] == '"' ? TokenKind::kString : TokenKind::kChar);
        return;
      }
    }
    Emit(TokenKind::kIdentifier, start, pos_ - start);
  }

  void LexNumber() {
    const size_t start = pos_;
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      const char previous = pos_ > start ? src_[pos_ - 1] : '\0';
      const bool exponent_sign = (c == '+' || c == '-') && (previous == 'e' || previous == 'E' ||
                                                            previous == 'p' || previous == 'P');
      const bool digit_separator = c == '\'' && pos_ + 1 < src_.size() &&
                                   IsIdentChar(static_cast<unsigned char>(src_[pos_ + 1]));
      if (!IsIdentChar(static_cast<unsigned char>(c)) && c != '.' && !exponent_sign &&
          !digit_separator) {
        break;
      }
      ++pos_;
    }
    Emit(TokenKind::kNumber, start, pos_ - start);
  }

  std::string_view src_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  bool at_line_start_ = true;
  LexedSource out_;
};

}  // namespace

LexedSource Lex(std::string_view source) { return Lexer(source).Run(); }

}  // namespace kerneleval::plan::detail
