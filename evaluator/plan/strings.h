// String helpers for evaluator/plan. Debian's Abseil is built with its own
// absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0), which does not
// convert from std::string_view; these wrappers take std::string_view.
// Internal to evaluator/plan.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace kerneleval::plan::detail {

inline absl::string_view ToAbsl(std::string_view text) { return {text.data(), text.size()}; }
inline std::string_view ToStd(absl::string_view text) { return {text.data(), text.size()}; }

template <typename T>
decltype(auto) AlphaNumArg(const T& value) {
  if constexpr (std::is_same_v<T, absl::string_view>) {
    return value;
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    const std::string_view text = value;
    return absl::string_view(text.data(), text.size());
  } else {
    return (value);
  }
}

// absl::StrCat that also takes std::string_view.
template <typename... Args>
std::string Cat(const Args&... args) {
  return absl::StrCat(AlphaNumArg(args)...);
}

inline bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

inline std::string_view StripLeadingSpace(std::string_view text) {
  while (!text.empty() && IsAsciiSpace(text.front())) text.remove_prefix(1);
  return text;
}

inline std::string_view StripSpace(std::string_view text) {
  text = StripLeadingSpace(text);
  while (!text.empty() && IsAsciiSpace(text.back())) text.remove_suffix(1);
  return text;
}

// C-escaped (non-printable bytes as \xNN), at most `max_chars` of the input,
// "..." when cut.
inline std::string EscapeForMessage(std::string_view text, size_t max_chars = 60) {
  std::string shown = absl::CEscape(ToAbsl(text.substr(0, max_chars)));
  if (text.size() > max_chars) shown += "...";
  return shown;
}

template <typename Strings>
std::string Join(const Strings& items, std::string_view separator) {
  std::string joined;
  bool first = true;
  for (const auto& item : items) {
    if (!first) joined += separator;
    first = false;
    joined += std::string_view(item);
  }
  return joined;
}

}  // namespace kerneleval::plan::detail
