// Protobuf messages as JSON for the CLI's --json output.
#pragma once

#include <google/protobuf/message.h>

#include <string>

namespace kerneleval::client {

// Proto field names (snake_case, as in the .proto: `wall_seconds`, not
// `wallSeconds`) and every primitive field printed even at its default, so a
// script reading `.correct` never finds it missing. `pretty`: indented,
// multi-line; else one line. Never fails: a message the printer refuses
// (e.g. invalid UTF-8 in a string field) becomes {"json_error": "..."}.
[[nodiscard]] std::string ToJson(const google::protobuf::Message& message, bool pretty);

}  // namespace kerneleval::client
