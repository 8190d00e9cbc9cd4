// Reading a submission's source for `evaluate` and `compile`.
#pragma once

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace kerneleval::cli {

// The bytes of `path`, or of standard input for "-"; INVALID_ARGUMENT with
// the reason when they cannot be read (the CLI said "cannot read X" alone,
// and a directory reached the server as an empty source).
inline absl::StatusOr<std::string> ReadSourceFile(const std::string& path) {
  std::stringstream source;
  if (path == "-") {
    source << std::cin.rdbuf();
    return source.str();
  }
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": a directory"));
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  source << file.rdbuf();
  return source.str();
}

}  // namespace kerneleval::cli
