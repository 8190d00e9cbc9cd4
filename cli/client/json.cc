#include "cli/client/json.h"

#include <google/protobuf/util/json_util.h>

#include <string>

namespace kerneleval::client {
namespace {

// Minimal JSON string escaping for the error fallback.
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x80) {
          out += '?';
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return "{\"json_error\": " + Quote(std::string(status.message())) + "}";
  }
  // The printer ends pretty output with a newline and compact output without;
  // callers add their own.
  while (!json.empty() && json.back() == '\n') json.pop_back();
  return json;
}

}  // namespace kerneleval::client
