// Modes of the `kerneleval-worker` executable. Each part of the evaluator that
// runs work in a child process adds one file evaluator/<part>/*_worker_mode.cc
// registering its mode here; the executable compiles them all in.
#pragma once

#include <functional>
#include <string>

namespace kerneleval::worker {

// Serves requests on `channel_fd` (framing.h) until EOF; returns the exit code.
using WorkerMain = std::function<int(int channel_fd, int argc, char** argv)>;

bool RegisterWorkerMode(const std::string& mode, WorkerMain main);

}  // namespace kerneleval::worker

#define KERNELEVAL_WORKER_CONCAT_INNER(a, b) a##b
#define KERNELEVAL_WORKER_CONCAT(a, b) KERNELEVAL_WORKER_CONCAT_INNER(a, b)
#define KERNELEVAL_WORKER_MODE(mode, main)                                                         \
  [[maybe_unused]] static const bool KERNELEVAL_WORKER_CONCAT(kerneleval_worker_mode_, __LINE__) = \
      ::kerneleval::worker::RegisterWorkerMode(mode, main)
