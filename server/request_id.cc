#include "server/request_id.h"

#include <cstdint>
#include <random>

namespace kerneleval::server {

std::string NewRequestId() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  const uint64_t value = generator();
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(16, '0');
  for (int i = 0; i < 16; ++i) id[i] = kHex[(value >> (60 - 4 * i)) & 0xf];
  return id;
}

std::string RequestIdFromClient(std::string_view client_value) {
  constexpr size_t kMaxLength = 128;
  if (client_value.empty() || client_value.size() > kMaxLength) return NewRequestId();
  for (const char c : client_value) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' || c == '/' ||
                         c == '-';
    if (!allowed) return NewRequestId();
  }
  return std::string(client_value);
}

}  // namespace kerneleval::server
