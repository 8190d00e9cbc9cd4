// What a launched kernel may be called: a (qualified) name, optionally with
// template arguments ("ops::scale<float, 4>"). The same text is an NVRTC name
// expression (compiled as code) and is spliced into the CPU backend's
// generated launchers, so it is confined to identifiers, numbers, spaces and
// `: < > , ( ) * + - & / %`, without a comment's start (`//`, `/*`).
// Header-only: the plan reader, the compile service and the CPU backend all
// check names with it.
#pragma once

#include <cctype>
#include <cstddef>
#include <string_view>

namespace kerneleval::plan {

inline constexpr size_t kMaxKernelNameBytes = 512;

// A character a kernel name with template arguments may hold.
inline bool IsKernelNameChar(char c) {
  switch (c) {
    case '_':
    case ':':
    case '<':
    case '>':
    case ',':
    case ' ':
    case '(':
    case ')':
    case '*':
    case '+':
    case '-':
    case '&':
    case '/':
    case '%':
      return true;
    default:
      return std::isalnum(static_cast<unsigned char>(c)) != 0;
  }
}

// Whether `text` from `offset` continues a kernel name (no `//` or `/*`).
inline bool IsKernelNameCharAt(std::string_view text, size_t offset) {
  if (!IsKernelNameChar(text[offset])) return false;
  return !(text[offset] == '/' && offset + 1 < text.size() &&
           (text[offset + 1] == '/' || text[offset + 1] == '*'));
}

// A whole name: starts like an identifier (or `::`), at most 512 characters.
inline bool IsKernelName(std::string_view name) {
  if (name.empty() || name.size() > kMaxKernelNameBytes) return false;
  const char first = name.front();
  if (!(std::isalpha(static_cast<unsigned char>(first)) || first == '_' || first == ':')) {
    return false;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsKernelNameCharAt(name, i)) return false;
  }
  // Nor the first half of one: whatever is spliced after the name.
  return name.back() != '/';
}

}  // namespace kerneleval::plan
