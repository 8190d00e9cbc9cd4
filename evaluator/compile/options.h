// Compile options a submission may ask for (an allow-list), and the target
// architecture. Everything else is refused with a message naming the option:
// include paths, pre-includes and precompiled headers are the server's, debug
// builds change timing, separate compilation would let device code call
// outside the submitted translation unit.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kerneleval::compile {

inline constexpr size_t kMaxUserOptions = 64;

// Checks the user's options against the allow-list and returns them in the
// canonical spelling NVRTC receives (e.g. "-use_fast_math" ->
// "--use_fast_math", "-lineinfo" -> "--generate-line-info"), sorted: an option
// may appear once (a second "-DN=..." or "-ftz=" is refused), so the order
// carries no meaning and the sorted list is the cache key's. InvalidArgument
// names the first refused option and says why.
//
// Allowed: --use_fast_math, -maxrregcount=N (1..255), -lineinfo,
// -DNAME[=VALUE] (NAME an identifier not starting with "__", VALUE of
// [A-Za-z0-9_.+-*/%()<>,:&|^~!] up to 256 chars), --std=c++17|c++20,
// --extra-device-vectorization, -ftz=/-prec-div=/-prec-sqrt=/-fmad=true|false,
// --restrict. Each in its -x / --x spellings.
absl::StatusOr<std::vector<std::string>> CheckUserOptions(const std::vector<std::string>& options);

inline constexpr size_t kMaxNameExpressions = 64;
inline constexpr size_t kMaxNameExpressionBytes = 512;

// Checks template-kernel name expressions (v1::CompileOptions.
// name_expressions): at most 64, each a (qualified) name with template
// arguments of identifiers, numbers, spaces and `: < > , ( ) * + - & / %` (no
// line breaks, comments, strings, braces or semicolons: the expression is
// compiled as code). Returns them sorted without duplicates, the cache key's
// order. InvalidArgument names the first refused one.
absl::StatusOr<std::vector<std::string>> CheckNameExpressions(
    const std::vector<std::string>& expressions);

// "sm_90", "sm_90a", "sm_100f", "compute_90", ...: compute_XX compiles to PTX
// only. InvalidArgument otherwise.
absl::Status CheckArch(const std::string& arch);
bool IsVirtualArch(const std::string& arch);  // compute_XX

// The allow-list in words, for messages and --help.
std::string AllowedOptionsSummary();

}  // namespace kerneleval::compile
