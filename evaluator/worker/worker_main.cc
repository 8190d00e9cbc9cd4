// kerneleval-worker MODE: a child process of the engine that does one kind of
// untrusted or fragile work (see worker_mode.h). Talks on fd 3.
#include <signal.h>
#include <sys/prctl.h>

#include <cstdio>
#include <map>

#include "evaluator/process/worker_process.h"
#include "evaluator/worker/worker_mode.h"

namespace kerneleval::worker {
namespace {
std::map<std::string, WorkerMain>& Modes() {
  static std::map<std::string, WorkerMain> modes;
  return modes;
}
}  // namespace

bool RegisterWorkerMode(const std::string& mode, WorkerMain main) {
  Modes()[mode] = std::move(main);
  return true;
}

}  // namespace kerneleval::worker

int main(int argc, char** argv) {
  auto& modes = kerneleval::worker::Modes();
  if (argc < 2 || !modes.count(argv[1])) {
    std::fprintf(stderr,
                 "usage: kerneleval-worker MODE (started by the kerneleval engine)\nmodes:");
    for (const auto& [name, main] : modes) std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the engine
  // Started from a descriptor (fexecve) or /proc/self/exe, the process would
  // be named "4" or "exe" in ps and top: the name it had when started by
  // path (15 bytes at most).
  ::prctl(PR_SET_NAME, "kerneleval-work");
  ::signal(SIGPIPE, SIG_IGN);
  return modes.at(argv[1])(kerneleval::process::kWorkerChannelFd, argc, argv);
}
