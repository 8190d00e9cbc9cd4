#include "server/auth.h"

#include <grpcpp/server_context.h>

namespace kerneleval::server {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Compare over the longer length so a short guess costs as long as a long
  // one; `volatile` keeps the compiler from ending the loop early.
  const size_t length = a.size() > b.size() ? a.size() : b.size();
  volatile unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < length; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference = difference | (x ^ y);
  }
  return difference == 0;
}

bool TokenAuthenticator::Allows(std::string_view authorization_header) const {
  if (!enabled()) return true;
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization_header.substr(0, kScheme.size()) != kScheme) return false;
  return ConstantTimeEquals(authorization_header.substr(kScheme.size()), token_);
}

bool TokenAuthenticator::Allows(const grpc::ServerContextBase& context) const {
  if (!enabled()) return true;
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) return false;
  return Allows(std::string_view(it->second.data(), it->second.size()));
}

}  // namespace kerneleval::server
