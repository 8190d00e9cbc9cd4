#include "server/auth.h"

#include <grpcpp/server_context.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace kerneleval::server {

bool ConstantTimeEquals(std::string_view a, std::string_view b, size_t at_least) {
  // Compare over the longer length so a short guess costs as long as a long
  // one; `volatile` keeps the compiler from ending the loop early.
  const size_t length = std::max({a.size(), b.size(), at_least});
  volatile unsigned char difference = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < length; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    difference = difference | (x ^ y);
  }
  return difference == 0;
}

namespace {

bool IsClientNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

absl::StatusOr<std::vector<ClientToken>> ParseClientTokens(std::string_view text) {
  constexpr size_t kMaxClientName = 64;
  constexpr size_t kMinToken = 16;  // a guessable token is no token
  constexpr size_t kMaxToken = 1024;
  constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";  // some editors write one
  if (text.substr(0, kUtf8Bom.size()) == kUtf8Bom) text.remove_prefix(kUtf8Bom.size());
  std::vector<ClientToken> tokens;
  int line_number = 0;
  // absl::string_view: this absl's StrSplit does not take std::string_view.
  for (const absl::string_view line :
       absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_number;
    // Separated by blanks ('\r' too: a file written on Windows).
    const std::vector<std::string> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty() || fields[0].front() == '#') continue;
    const std::string where = absl::StrCat("line ", line_number, ": ");
    if (fields.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expected \"CLIENT TOKEN\", found ", fields.size(), " fields"));
    }
    const std::string& client = fields[0];
    const std::string& token = fields[1];
    if (client.size() > kMaxClientName ||
        !std::all_of(client.begin(), client.end(), IsClientNameChar)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "the client name is not 1-", kMaxClientName, " of [A-Za-z0-9._-]"));
    }
    if (token.size() < kMinToken || token.size() > kMaxToken ||
        !std::all_of(token.begin(), token.end(), [](char c) { return c > ' ' && c < 127; })) {
      return absl::InvalidArgumentError(absl::StrCat(where, "the token of ", client, " is not ",
                                                     kMinToken, "-", kMaxToken,
                                                     " printable characters"));
    }
    for (const ClientToken& earlier : tokens) {
      if (earlier.client == client) {
        return absl::InvalidArgumentError(absl::StrCat(where, "client ", client, " again"));
      }
      if (earlier.token == token) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "the token of ", client, " is also ", earlier.client, "'s"));
      }
    }
    tokens.push_back(ClientToken{client, token});
  }
  return tokens;
}

absl::StatusOr<std::vector<ClientToken>> ReadClientTokens(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat(path, ": cannot be read"));
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) return absl::DataLossError(absl::StrCat(path, ": read failed"));
  absl::StatusOr<std::vector<ClientToken>> tokens = ParseClientTokens(text.str());
  if (!tokens.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", tokens.status().message()));
  }
  return tokens;
}

TokenAuthenticator::TokenAuthenticator(std::string token, std::vector<ClientToken> client_tokens)
    : token_(std::move(token)), client_tokens_(std::move(client_tokens)) {
  longest_token_ = token_.size();
  for (const ClientToken& client : client_tokens_) {
    longest_token_ = std::max(longest_token_, client.token.size());
  }
}

std::optional<std::string> TokenAuthenticator::Identify(
    std::string_view authorization_header) const {
  if (!enabled()) return std::string();
  constexpr std::string_view kScheme = "Bearer ";
  if (authorization_header.substr(0, kScheme.size()) != kScheme) return std::nullopt;
  const std::string_view presented = authorization_header.substr(kScheme.size());
  // Every comparison runs (no early return), so the time taken depends on
  // the number and lengths of the tokens only.
  const bool shared = ConstantTimeEquals(presented, token_, longest_token_) && !token_.empty();
  const ClientToken* client = nullptr;
  for (const ClientToken& candidate : client_tokens_) {
    if (ConstantTimeEquals(presented, candidate.token, longest_token_)) client = &candidate;
  }
  if (client != nullptr) return client->client;
  if (shared) return std::string();
  return std::nullopt;
}

std::optional<std::string> TokenAuthenticator::Identify(
    const grpc::ServerContextBase& context) const {
  if (!enabled()) return std::string();
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  if (it == metadata.end()) return std::nullopt;
  return Identify(std::string_view(it->second.data(), it->second.size()));
}

}  // namespace kerneleval::server
