// A worker for the process tests: echoes StringValue messages; "crash"
// segfaults, "hang" never answers, "exit" exits with status 7.
#include <google/protobuf/wrappers.pb.h>

#include <csignal>
#include <cstdlib>

#include "evaluator/process/framing.h"
#include "evaluator/process/worker_process.h"

int main() {
  using kerneleval::process::kWorkerChannelFd;
  google::protobuf::StringValue message;
  while (
      kerneleval::process::ReadMessage(kWorkerChannelFd, &message, absl::InfiniteFuture()).ok()) {
    if (message.value() == "crash") std::raise(SIGSEGV);
    if (message.value() == "hang") {
      for (;;) {
        asm volatile("" ::: "memory");
      }
    }
    if (message.value() == "exit") std::exit(7);
    if (!kerneleval::process::WriteMessage(kWorkerChannelFd, message).ok()) break;
  }
  return 0;
}
