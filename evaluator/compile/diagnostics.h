// NVRTC's program log -> structured diagnostics and the log users see.
//
// NVRTC writes "<file>(<line>): <severity>[ #<code>-D]: <message>", then the
// source line (indented by two spaces) and a caret under the column. The
// program is named "kernel.cu", so lines read naturally and point into the
// submitted source (the prelude is a separate, pre-included file).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::compile {

inline constexpr std::string_view kProgramName = "kernel.cu";

// Diagnostics in log order. Those located in the user's file get its line and
// (when the caret line can be matched to `source`) the 1-based column; those
// in a header get line 0, with "<header>(<line>): " before the message, unless
// NVRTC names the user's line that instantiated them ("at line N [of
// kernel.cu]"). ptxas warnings and errors and NVRTC's own errors ("nvrtc:
// error: ...") have line 0. Severity: "error" (also "catastrophic error",
// "fatal"), "warning", "note" (also "remark").
std::vector<v1::Diagnostic> ParseDiagnostics(std::string_view log, std::string_view source,
                                             std::string_view program_name = kProgramName);

// The log shown to users: compiler errors and warnings as NVRTC wrote them,
// without the "ptxas info" lines that kerneleval's own --ptxas-options=-v
// adds (their figures are in CompileResult.kernels), without any line
// naming `hidden_path` (the worker's precompiled-header directory), and with
// the errno reason cut from "cannot open source file" errors (EACCES for an
// existing file vs. nothing for a missing one would reveal what exists).
std::string UserFacingLog(std::string_view raw_log, std::string_view hidden_path = {});

}  // namespace kerneleval::compile
