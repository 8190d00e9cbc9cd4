// kerneleval-server: the gRPC server in front of the evaluation engine.
// SIGTERM/SIGINT: graceful stop (health NOT_SERVING, drain for
// --shutdown-grace-seconds, cancel the rest), exit 0.
#include <malloc.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/config.h"
#include "server/metrics.h"
#include "server/server.h"

namespace {

void LogDevices(kerneleval::Engine& engine, bool reward_emulated_speed) {
  const auto devices = engine.ListDevices();
  if (devices.devices_size() == 0) spdlog::warn("no devices: every evaluation will fail");
  for (const auto& device : devices.devices()) {
    if (device.backend() == "cuda") {
      spdlog::info("device {} [cuda] {} sm_{}{} {} SMs {:.1f} GiB{}{}", device.id(), device.name(),
                   device.compute_capability_major(), device.compute_capability_minor(),
                   device.sm_count(), static_cast<double>(device.memory_bytes()) / (1u << 30),
                   device.roofline_known() ? "" : " (not in the peak table: no roofline)",
                   device.ready() ? "" : " (not ready)");
    } else {
      spdlog::info("device {} [{}] {}{}", device.id(), device.backend(), device.name(),
                   device.ready() ? "" : " (not ready)");
      if (device.backend() == "cpu" && reward_emulated_speed) {
        spdlog::warn(
            "device {}: rewards include the CPU emulation's speedups, which are not a GPU's (a "
            "kernel serialised to one thread per row earns 3.3): not for training",
            device.id());
      }
    }
  }
}

}  // namespace

// CLI11_PARSE catches the user's parse errors and the engine and server report by
// absl::Status; what else throws is a bug (a bad flag definition) or exhaustion
// (bad_alloc, std::thread's system_error), where std::terminate is the right end.
// NOLINTNEXTLINE(bugprone-exception-escape): only a bug or exhaustion throws, see above.
int main(int argc, char** argv) {
  namespace ks = kerneleval::server;
  CLI::App app{
      "kerneleval-server: grade CUDA kernels over gRPC (kerneleval.v1.KernelEval).\n"
      "Every flag also reads the environment variable shown."};
  // glibc raises its mmap threshold (up to 32 MiB) each time a large mmapped
  // block is freed: later replies of a megabyte or more (timing results carry
  // outputs) then came from the heap and stayed resident, and the server's
  // RSS moved between 57 and 101 MB over rounds of the same evaluations
  // (clients/python/tests/test_server_resources.py). Fixed at glibc's default
  // of 128 KiB, such blocks stay mmapped and go back to the system when
  // freed. An operator's MALLOC_MMAP_THRESHOLD_ wins.
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  ks::ServerConfig config;
  ks::AddServerFlags(app, &config);
  CLI11_PARSE(app, argc, argv);
  if (auto status = ks::FinalizeServerConfig(app, &config); !status.ok()) {
    std::fprintf(stderr, "kerneleval-server: %s\n", std::string(status.message()).c_str());
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%L%$ %v");

  // Signals are taken by sigwait on this thread only: block them before any
  // other thread (gRPC, engine) starts so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  // SIGHUP re-reads --tokens-file (a client added or a token rotated without
  // dropping the evaluations in flight).
  sigset_t awaited_signals = stop_signals;
  sigaddset(&awaited_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &awaited_signals, nullptr);

  auto metrics = std::make_shared<ks::ServerMetrics>();
  config.engine.observer = metrics;
  spdlog::info(
      "engine: backend={} reward={} partial_credit={} queue_capacity={} "
      "compile_workers={} compile_reserve_threads={} custom_problems={} fixed_seeds={} "
      "emulated_speed_reward={}",
      config.backend, config.reward_mode, config.partial_credit, config.engine.queue_capacity,
      config.engine.compile_workers, config.engine.compile_reserve_threads,
      config.engine.allow_custom_problems, config.engine.allow_fixed_seeds,
      config.engine.reward_emulated_speed);
  auto engine = kerneleval::Engine::Create(config.engine);
  if (!engine.ok()) {
    spdlog::critical("cannot start the engine: {}", engine.status().ToString());
    return 1;
  }
  LogDevices(**engine, config.engine.reward_emulated_speed);

  auto server = ks::KernelEvalServer::Start(engine->get(), config.server, metrics);
  if (!server.ok()) {
    spdlog::critical("{}", server.status().ToString());
    (*engine)->Shutdown(absl::Now());
    return 1;
  }

  // Every 10 s without a signal, the heap memory freed meanwhile goes back
  // to the system: glibc keeps what large requests freed in its arenas (3
  // groups of 128 MiB sources left the server at 305 MiB of 50 idle; 60 MiB
  // after malloc_trim; bench/server/admission_memory_bench.py).
  constexpr timespec kTrimInterval = {.tv_sec = 10, .tv_nsec = 0};
  int signal_number = 0;
  for (;;) {
    signal_number = sigtimedwait(&awaited_signals, nullptr, &kTrimInterval);
    if (signal_number < 0 && (errno == EAGAIN || errno == EINTR)) {
      malloc_trim(0);
      continue;
    }
    if (signal_number < 0) {
      spdlog::error("sigtimedwait failed ({}): shutting down", std::strerror(errno));
      signal_number = SIGTERM;
      break;
    }
    if (signal_number != SIGHUP) break;
    if (config.tokens_file.empty()) {
      spdlog::warn("SIGHUP: no --tokens-file to read again");
      continue;
    }
    absl::StatusOr<std::vector<ks::ClientToken>> tokens = ks::LoadClientTokens(config);
    if (!tokens.ok()) {
      spdlog::error("SIGHUP: {}; the tokens in use stay", std::string(tokens.status().message()));
      continue;
    }
    const size_t clients = tokens->size();
    (*server)->SetClientTokens(*std::move(tokens));
    spdlog::info("SIGHUP: {} named clients from {}", clients, config.tokens_file);
  }
  const absl::Duration grace = absl::Seconds(config.shutdown_grace_seconds);
  spdlog::info("{}: graceful shutdown (grace {:.0f}s)",
               signal_number == SIGTERM ? "SIGTERM" : "SIGINT", config.shutdown_grace_seconds);

  // Last resort: a second signal, or shutdown overrunning the grace by 10 s,
  // ends the process at once (both gRPC and the engine honour the deadline,
  // so this only fires on a bug).
  std::thread watchdog([&stop_signals, grace] {
    const absl::Duration bound = grace + absl::Seconds(10);
    const timespec timeout = absl::ToTimespec(bound);
    siginfo_t info;
    if (sigtimedwait(&stop_signals, &info, &timeout) > 0) {
      spdlog::warn("second signal: exiting now");
      spdlog::shutdown();
      std::_Exit(1);
    }
    spdlog::error("shutdown overran the grace period by 10s: exiting now");
    spdlog::shutdown();
    std::_Exit(0);
  });
  watchdog.detach();

  (*server)->Shutdown(absl::Now() + grace);
  server->reset();
  engine->reset();
  spdlog::info("exit");
  spdlog::shutdown();
  return 0;
}
