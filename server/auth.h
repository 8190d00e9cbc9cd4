// Optional bearer-token authentication: with a token configured, every
// KernelEval call must carry `authorization: Bearer <token>`; the gRPC health
// service (and reflection, which only describes the public schema; turn it
// off with --no-reflection) stay open. Besides one shared token, named
// clients may each have their own (--tokens-file): the name, not the
// request, is then the caller's fairness key.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace grpc {
class ServerContextBase;
}  // namespace grpc

namespace kerneleval::server {

// Equal contents; the time taken depends only on the longer length (or
// `at_least` bytes when more), never on where the first difference is.
[[nodiscard]] bool ConstantTimeEquals(std::string_view a, std::string_view b, size_t at_least = 0);

// A token of one named client (--tokens-file). The name is that client's
// fairness key: a holder cannot claim another's turn, or several turns, by
// what it writes in EvaluateRequest.client_id.
struct ClientToken {
  std::string client;
  std::string token;
};

// The text of a tokens file: one "CLIENT TOKEN" per line, separated by
// blanks; blank lines and lines whose first field starts with '#' are
// skipped (whole-line comments only: a '#' may be part of a token). A client is
// 1-64 of [A-Za-z0-9._-]; a token is 16-1024 printable characters without
// blanks. Names and tokens are each unique. INVALID_ARGUMENT names the line
// (never the token).
[[nodiscard]] absl::StatusOr<std::vector<ClientToken>> ParseClientTokens(std::string_view text);
// Reads and parses `path`; the error names the path.
[[nodiscard]] absl::StatusOr<std::vector<ClientToken>> ReadClientTokens(const std::string& path);

class TokenAuthenticator {
 public:
  // No token and no client tokens: authentication off, every call allowed.
  // `token` (may be empty) is shared: its callers name their fairness key
  // themselves. `client_tokens` must be unique and differ from `token`.
  explicit TokenAuthenticator(std::string token, std::vector<ClientToken> client_tokens = {});

  [[nodiscard]] bool enabled() const { return !token_.empty() || !client_tokens_.empty(); }
  // Who presents the value of an `authorization` header: nullopt when it is
  // refused; "" for the shared token (or any caller with authentication
  // off); else the client's name. Every token is compared over the length
  // of the longest, whatever matches, so the time taken says neither which
  // one came close nor how long any is.
  [[nodiscard]] std::optional<std::string> Identify(std::string_view authorization_header) const;
  // Looks the header up in the call's client metadata.
  [[nodiscard]] std::optional<std::string> Identify(const grpc::ServerContextBase& context) const;
  [[nodiscard]] bool Allows(std::string_view authorization_header) const {
    return Identify(authorization_header).has_value();
  }

 private:
  std::string token_;
  std::vector<ClientToken> client_tokens_;
  size_t longest_token_ = 0;  // [bytes] over every token
};

}  // namespace kerneleval::server
