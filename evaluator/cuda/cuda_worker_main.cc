// `kerneleval-worker cuda --device N [--calibrate] [--printf-fifo-bytes B]
// [--malloc-heap-bytes B]`: serves wire::WorkerRequest frames on fd 3.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "evaluator/cuda/cuda_worker.h"
#include "evaluator/cuda/cuda_worker.pb.h"
#include "evaluator/cuda/driver.h"
#include "evaluator/cuda/resources.h"
#include "evaluator/process/framing.h"

namespace kerneleval::cuda {
namespace {

// Whether the worker must leave after a request that failed: a sticky error
// or a hang marked the context lost, or a sticky error came back on a path
// that does not mark it (an allocation or a fill between a candidate's
// launches, an ECC fault between requests): every later request would fail
// the same way on this context, and the backend starts a fresh worker.
bool ExitingAfter(const absl::Status& failed) {
  if (IsStickyError(failed)) MarkContextLost();
  return ContextLost();
}

absl::Status ParseOptions(int argc, char** argv, CudaWorkerOptions* options) {
  // argv[0] is the executable, argv[1] the mode ("cuda").
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> absl::StatusOr<std::string> {
      if (i + 1 >= argc) return absl::InvalidArgumentError(arg + " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "--calibrate") {
      options->calibrate = true;
      continue;
    }
    absl::StatusOr<std::string> text = value();
    if (!text.ok()) return text.status();
    bool ok = false;
    if (arg == "--device") {
      ok = absl::SimpleAtoi(*text, &options->device);
    } else if (arg == "--printf-fifo-bytes") {
      ok = absl::SimpleAtoi(*text, &options->printf_fifo_bytes);
    } else if (arg == "--malloc-heap-bytes") {
      ok = absl::SimpleAtoi(*text, &options->malloc_heap_bytes);
    } else {
      return absl::InvalidArgumentError("unknown option " + arg);
    }
    if (!ok) return absl::InvalidArgumentError("bad value for " + arg + ": " + *text);
  }
  return absl::OkStatus();
}

void SetError(const absl::Status& status, wire::WorkerReply* reply) {
  reply->mutable_error()->set_code(static_cast<int>(status.code()));
  reply->mutable_error()->set_message(std::string(status.message()));
}

// Device malloc() allocates from the context's heap, which outlives the
// module: whatever a kernel leaves there (a result, a cache) would still be
// there for the next request's programs to find. A request with a program
// that calls it is this worker's last: the next one starts on a fresh context.
// Also after an error: the program's kernels may have run.
void RecycleAfterDeviceMalloc(const wire::WorkerRequest& request, wire::WorkerReply* reply) {
  auto check = [&](const internal::Program& program) {
    if (!program.compiled().uses_device_malloc()) return;
    reply->add_notes(absl::StrCat(program.label(),
                                  ": calls device malloc(); its heap outlives the module, so the "
                                  "worker is replaced after this request"));
    reply->set_worker_exiting(true);
  };
  if (request.has_run()) check(request.run().program());
  for (const internal::TimedProgram& timed : request.time().programs()) check(timed.program());
}

}  // namespace

int CudaWorkerMain(int fd, int argc, char** argv) {
  // Device printf() output goes to the process's stdout: discard it, so that
  // a kernel cannot flood the engine's logs (the FIFO limit bounds the work).
  if (int null_fd = ::open("/dev/null", O_WRONLY); null_fd >= 0) {
    ::dup2(null_fd, STDOUT_FILENO);
    ::close(null_fd);
  }
  CudaWorkerOptions options;
  absl::Status parsed = ParseOptions(argc, argv, &options);
  absl::StatusOr<std::unique_ptr<CudaWorker>> worker =
      parsed.ok() ? CudaWorker::Create(options)
                  : absl::StatusOr<std::unique_ptr<CudaWorker>>(parsed);

  for (;;) {
    wire::WorkerRequest request;
    absl::Status read = process::ReadMessage(fd, &request, absl::InfiniteFuture());
    if (absl::IsUnavailable(read)) return 0;  // the engine closed the channel
    if (!read.ok()) {
      std::fprintf(stderr, "kerneleval-worker cuda: %s\n", std::string(read.message()).c_str());
      return 1;
    }
    wire::WorkerReply reply;
    if (!worker.ok()) {
      // Nothing can be served: say why once, then leave.
      SetError(worker.status(), &reply);
      reply.set_worker_exiting(true);
      (void)process::WriteMessage(fd, reply);
      return 3;
    }
    switch (request.request_case()) {
      case wire::WorkerRequest::kDescribe:
        *reply.mutable_device() = (*worker)->device_info();
        break;
      case wire::WorkerRequest::kRun: {
        auto outcome = (*worker)->Run(request.run());
        if (!outcome.ok()) {
          SetError(outcome.status(), &reply);
          reply.set_worker_exiting(ExitingAfter(outcome.status()));
        } else {
          *reply.mutable_run() = std::move(outcome->result);
          reply.set_worker_exiting(outcome->worker_exiting);
          for (auto& note : outcome->notes) reply.add_notes(std::move(note));
        }
        break;
      }
      case wire::WorkerRequest::kTime: {
        auto outcome = (*worker)->Time(request.time());
        if (!outcome.ok()) {
          SetError(outcome.status(), &reply);
          reply.set_worker_exiting(ExitingAfter(outcome.status()));
        } else {
          *reply.mutable_time() = std::move(outcome->result);
          reply.set_worker_exiting(outcome->worker_exiting);
          for (auto& note : outcome->notes) reply.add_notes(std::move(note));
        }
        break;
      }
      case wire::WorkerRequest::REQUEST_NOT_SET:
        SetError(absl::InvalidArgumentError("empty WorkerRequest"), &reply);
        break;
    }
    // A stack reservation one request's kernel grew stays with the context
    // (CudaWorker::GiveBackStack): given back before the next request.
    if ((request.has_run() || request.has_time()) && !reply.worker_exiting()) {
      if (absl::Status given_back = (*worker)->GiveBackStack(); !given_back.ok()) {
        (void)ExitingAfter(given_back);
        reply.set_worker_exiting(true);
      }
    }
    RecycleAfterDeviceMalloc(request, &reply);
    // A reply too large for the wire is sent as an error the engine reads,
    // rather than none at all from a worker that exits (a timing reply with
    // every timed output in it once did: red team rt10 #1).
    if (absl::Status fits = process::CheckMessageSize(reply); !fits.ok()) {
      const bool exiting = reply.worker_exiting();
      reply.Clear();
      SetError(absl::ResourceExhaustedError(
                   absl::StrCat("the CUDA worker's reply cannot be sent: ", fits.message())),
               &reply);
      reply.set_worker_exiting(exiting);
    }
    if (absl::Status written = process::WriteMessage(fd, reply); !written.ok()) return 1;
    if (reply.worker_exiting()) {
      // The context is unusable or a kernel still runs: leave without
      // running destructors (they would call into a broken context, or wait
      // for the kernel). Process exit makes the driver tear everything down.
      std::fflush(stderr);
      std::_Exit(4);
    }
  }
}

}  // namespace kerneleval::cuda
