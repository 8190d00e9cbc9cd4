// Optional bearer-token authentication: with a token configured, every
// KernelEval call must carry `authorization: Bearer <token>`; the gRPC health
// service (and reflection, which only describes the public schema; turn it
// off with --no-reflection) stay open.
#pragma once

#include <string>
#include <string_view>

namespace grpc {
class ServerContextBase;
}  // namespace grpc

namespace kerneleval::server {

// Equal contents; the time taken depends only on the lengths, never on where
// the first difference is.
[[nodiscard]] bool ConstantTimeEquals(std::string_view a, std::string_view b);

class TokenAuthenticator {
 public:
  // Empty token: authentication off, every call allowed.
  explicit TokenAuthenticator(std::string token) : token_(std::move(token)) {}

  [[nodiscard]] bool enabled() const { return !token_.empty(); }
  // Whether the value of an `authorization` header is this token.
  [[nodiscard]] bool Allows(std::string_view authorization_header) const;
  // Looks the header up in the call's client metadata.
  [[nodiscard]] bool Allows(const grpc::ServerContextBase& context) const;

 private:
  std::string token_;
};

}  // namespace kerneleval::server
