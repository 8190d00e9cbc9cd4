// How a client reaches a kerneleval server.
#pragma once

#include <string>

#include "absl/time/time.h"

namespace kerneleval::client {

struct ClientOptions {
  std::string target;                             // "HOST:PORT" or a gRPC URI ("dns:///name:50051")
  std::string token;                              // bearer token; empty: none sent
  std::string tls_ca;                             // PEM CA file path; empty: insecure channel
  absl::Duration timeout = absl::ZeroDuration();  // per RPC; zero: no deadline
  // "round_robin" | "pick_first" | empty (round_robin for dns: targets).
  std::string lb_policy;
  // Largest message accepted from the server [bytes] (a verdict with a CUBIN
  // can be several MiB).
  int max_receive_message_bytes = 64 << 20;
};

}  // namespace kerneleval::client
