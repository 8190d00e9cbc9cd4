// Numeric option checks shared by the CLI and the server's flags.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <string>

namespace kerneleval::client {

// Numeric checks with a readable message: CLI11's PositiveNumber and
// NonNegativeNumber print their range up to DBL_MAX in full ("Value -1 not in
// range 0.000000 to 179769313486231570814527...", 309 digits; rt7 #13).
inline CLI::Validator NumberAbove(double low, bool inclusive, const std::string& name) {
  return CLI::Validator(
      [=](std::string& input) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(input.c_str(), &end);
        const bool number = end != input.c_str() && *end == '\0' && std::isfinite(value);
        if (number && (inclusive ? value >= low : value > low)) return {};
        return "must be a number " + std::string(inclusive ? ">= " : "> ") +
               CLI::detail::to_string(low) + ", got " + input;
      },
      name);
}
inline CLI::Validator PositiveNumber() { return NumberAbove(0, false, "POSITIVE"); }
inline CLI::Validator NonNegativeNumber() { return NumberAbove(0, true, "NONNEGATIVE"); }

}  // namespace kerneleval::client
