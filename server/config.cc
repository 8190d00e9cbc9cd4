#include "server/config.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/client/number_checks.h"
#include "rubric/rubric.h"
#include "server/auth.h"

namespace kerneleval::server {

void AddServerFlags(CLI::App& app, ServerConfig* config) {
  ServerOptions& server = config->server;
  EngineOptions& engine = config->engine;
  app.add_option("--listen", server.listen_address,
                 "Address to serve gRPC on, HOST:PORT (port 0: any free port)")
      ->envname("KERNELEVAL_LISTEN")
      ->capture_default_str();
  app.add_option("--backend", config->backend,
                 "Default backend: auto (a GPU when present, else the CPU), cuda (require GPUs; "
                 "requests may still ask for cpu), cpu (never probe GPUs)")
      ->envname("KERNELEVAL_BACKEND")
      ->check(CLI::IsMember({"auto", "cuda", "cpu"}))
      ->capture_default_str();
  app.add_option("--problems-dir", engine.problems_dir,
                 "Directory of built-in problems (<id>/problem.textproto); default: the "
                 "engine's (problems/ next to the install)")
      ->envname("KERNELEVAL_PROBLEMS_DIR");
  app.add_option("--compile-workers", engine.compile_workers,
                 "Concurrent compiles of one client (the compile pool's general threads); 0 = "
                 "one per core")
      ->envname("KERNELEVAL_COMPILE_WORKERS")
      ->check(client::NonNegativeNumber())
      ->capture_default_str();
  app.add_option("--compile-reserve-threads", engine.compile_reserve_threads,
                 "Compile threads beyond --compile-workers, each for a client with no compile "
                 "running: while other clients' slow sources hold the general threads, this "
                 "many more clients start at once")
      ->envname("KERNELEVAL_COMPILE_RESERVE_THREADS")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--compile-cache-dir", engine.compile_cache_dir,
                 "On-disk compile cache directory; empty = in-memory cache only")
      ->envname("KERNELEVAL_COMPILE_CACHE_DIR");
  app.add_option("--compile-cache-dir-bytes", engine.compile_cache_dir_bytes,
                 "Bound on the compile cache directory [bytes]; least recently used entries "
                 "are removed first; 0 = unbounded")
      ->envname("KERNELEVAL_COMPILE_CACHE_DIR_BYTES")
      ->check(client::NonNegativeNumber())
      ->capture_default_str();
  app.add_option("--queue-capacity", engine.queue_capacity,
                 "Evaluations queued per device before RESOURCE_EXHAUSTED")
      ->envname("KERNELEVAL_QUEUE_CAPACITY")
      ->check(client::PositiveNumber())
      ->capture_default_str();
  app.add_option("--max-source-bytes", engine.max_source_bytes,
                 "Largest accepted source per submission [bytes]")
      ->envname("KERNELEVAL_MAX_SOURCE_BYTES")
      ->check(client::PositiveNumber())
      ->capture_default_str();
  app.add_option("--max-admitted-bytes", engine.max_admitted_bytes,
                 "Bytes of sources (with plans, options and custom problems) that admitted "
                 "Evaluate, EvaluateGroup and Compile calls may hold in all until answered; "
                 "beyond it RESOURCE_EXHAUSTED (a call arriving when none is held is admitted)")
      ->envname("KERNELEVAL_MAX_ADMITTED_BYTES")
      ->check(client::PositiveNumber())
      ->capture_default_str();
  app.add_option("--max-group-size", engine.max_group_size, "Most submissions in one EvaluateGroup")
      ->envname("KERNELEVAL_MAX_GROUP_SIZE")
      ->check(client::PositiveNumber())
      ->capture_default_str();
  app.add_flag("--custom-problems,!--no-custom-problems", engine.allow_custom_problems,
               "Evaluate problems sent in the request (their verdicts are flagged "
               "custom_problem); --no-custom-problems: PERMISSION_DENIED, only the built-in "
               "problems, for servers whose verdicts others read by problem id")
      ->capture_default_str();
  app.add_flag("--fixed-seeds,!--no-fixed-seeds", engine.allow_fixed_seeds,
               "Evaluate requests that fix their inputs' seed (to reproduce a verdict; flagged "
               "fixed_seed); --no-fixed-seeds: PERMISSION_DENIED, every evaluation on inputs the "
               "server draws, for servers grading training rollouts (a kernel can be fitted to "
               "inputs that do not change)")
      ->capture_default_str();
  // Off by default here, unlike the engine's (and the CLI's) default: a
  // server grades training rollouts, whose policies would learn the
  // emulator's costs.
  engine.reward_emulated_speed = false;
  app.add_flag("--emulated-speed-reward,!--no-emulated-speed-reward", engine.reward_emulated_speed,
               "Reward the speedups the CPU backend's emulation measures (the emulator's costs "
               "are not a GPU's: a kernel serialised to one thread per row earns 3.3 there); "
               "off: correct kernels on emulated timing are rewarded at speedup 1 (flag "
               "emulated_speed_not_rewarded)")
      ->capture_default_str();
  app.add_option("--log-level", config->log_level,
                 "trace, debug, info, warn, error, critical or off")
      ->envname("KERNELEVAL_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
      ->capture_default_str();
  app.add_option("--metrics-port", config->metrics_port,
                 "Serve Prometheus metrics on http://0.0.0.0:PORT/metrics; 0 = off")
      ->envname("KERNELEVAL_METRICS_PORT")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--token", server.service.token,
                 "Require 'authorization: Bearer <token>' on every call except health "
                 "(env KERNELEVAL_TOKEN; prefer the env: flags show in ps)")
      ->envname("KERNELEVAL_TOKEN");
  app.add_option("--tokens-file", config->tokens_file,
                 "Named clients' own tokens, one 'CLIENT TOKEN' per line (whole-line '#' "
                 "comments): a "
                 "call with one is that client's, whose key for fairness is then token:<name> "
                 "(its request's client_id is not); with --token or alone")
      ->envname("KERNELEVAL_TOKENS_FILE");
  app.add_flag("--reflection,!--no-reflection", server.reflection,
               "Serve gRPC reflection (the public schema, answered without the token; "
               "default on)")
      ->envname("KERNELEVAL_REFLECTION");
  app.add_option("--tls-cert", server.tls_cert_path, "PEM certificate chain; with --tls-key: TLS")
      ->envname("KERNELEVAL_TLS_CERT")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", server.tls_key_path, "PEM private key of --tls-cert")
      ->envname("KERNELEVAL_TLS_KEY")
      ->check(CLI::ExistingFile);
  app.add_flag("--calibrate", engine.calibrate,
               "Measure each GPU's bandwidth and FP32 FLOP/s at start (ListDevices reports them)")
      ->envname("KERNELEVAL_CALIBRATE");
  app.add_option("--reward-mode", config->reward_mode,
                 "Default reward: speedup or roofline (default: $KERNEL_ENV_REWARD, else "
                 "speedup, as the seed rubric reads it)")
      ->check(CLI::IsMember({"speedup", "roofline"}));
  app.add_flag("--partial-credit,!--no-partial-credit", config->partial_credit,
               "Default partial credit for failed submissions (default: on when "
               "$KERNEL_ENV_PARTIAL_CREDIT is \"1\", as the seed reads it)");
  app.add_option("--shutdown-grace-seconds", config->shutdown_grace_seconds,
                 "On SIGTERM/SIGINT: let in-flight calls finish for this long [s], then cancel "
                 "them and exit 0")
      ->envname("KERNELEVAL_SHUTDOWN_GRACE_SECONDS")
      ->check(client::NonNegativeNumber())
      ->capture_default_str();
  app.add_option("--worker-binary", engine.worker_binary,
                 "The kerneleval-worker executable; default: the engine's")
      ->envname("KERNELEVAL_WORKER_BINARY");
  app.add_option("--default-arch", engine.default_arch,
                 "NVRTC target when neither the request nor a device names one")
      ->capture_default_str();
  app.add_option("--run-timeout-seconds", engine.run_timeout_seconds,
                 "Wall-clock limit of one correctness or timing run [s]")
      ->check(client::PositiveNumber())
      ->capture_default_str();
  app.add_option("--candidate-run-factor", engine.candidate_run_factor,
                 "A candidate's correctness run may take this many times the reference's on "
                 "the same cases (at least --candidate-run-floor-seconds, at most "
                 "--run-timeout-seconds): a hanging kernel holds its device that long. 0: the "
                 "run timeout alone")
      ->check(client::NonNegativeNumber())
      ->capture_default_str();
  app.add_option("--candidate-run-floor-seconds", engine.candidate_run_floor_seconds,
                 "The least a candidate's correctness run may take [s]")
      ->check(client::PositiveNumber())
      ->capture_default_str();
  app.add_option("--transport-memory-bytes", server.transport_memory_bytes,
                 "Bound on the memory gRPC's transport may use for calls, requests being "
                 "received among them (read whole, token or not, before the service sees "
                 "them) [bytes], at least twice the largest request; 0: no bound")
      ->envname("KERNELEVAL_TRANSPORT_MEMORY_BYTES")
      ->check(client::NonNegativeNumber())
      ->capture_default_str();
}

absl::StatusOr<std::vector<ClientToken>> LoadClientTokens(const ServerConfig& config) {
  absl::StatusOr<std::vector<ClientToken>> tokens = ReadClientTokens(config.tokens_file);
  if (!tokens.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tokens-file (or KERNELEVAL_TOKENS_FILE): ", tokens.status().message()));
  }
  if (tokens->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tokens-file (or KERNELEVAL_TOKENS_FILE): ", config.tokens_file,
                     " names no client (an empty file would leave the server open)"));
  }
  for (const ClientToken& client : *tokens) {
    if (client.token == config.server.service.token) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tokens-file: the token of ", client.client, " is also --token"));
    }
  }
  return tokens;
}

absl::Status FinalizeServerConfig(const CLI::App& app, ServerConfig* config) {
  EngineOptions& engine = config->engine;
  if (config->backend == "cpu") {
    engine.default_backend = v1::BACKEND_CPU;
    engine.enable_cuda = false;
  } else if (config->backend == "cuda") {
    engine.default_backend = v1::BACKEND_CUDA;
  } else {
    engine.default_backend = v1::BACKEND_AUTO;
  }

  // The seed's kernel_rubric defaults, read by the rubric's own function: a
  // KERNEL_ENV_REWARD that is set but empty is an unknown mode there (the
  // seed's KeyError), not the default.
  config->partial_credit_given = app.count("--partial-credit") > 0;
  absl::StatusOr<rubric::RewardConfig> reward = rubric::RewardConfigFromEnv(
      config->reward_mode,
      config->partial_credit_given ? std::optional<bool>(config->partial_credit) : std::nullopt);
  if (!reward.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--reward-mode (or KERNEL_ENV_REWARD): ", reward.status().message()));
  }
  config->reward_mode = rubric::RewardModeName(reward->mode);
  config->partial_credit = reward->partial_credit;
  engine.reward_mode = config->reward_mode;
  engine.partial_credit = config->partial_credit;

  if (config->server.tls_cert_path.empty() != config->server.tls_key_path.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key: give both or neither");
  }
  const char* tokens_env = std::getenv("KERNELEVAL_TOKENS_FILE");
  if (config->tokens_file.empty() && (app.count("--tokens-file") > 0 || tokens_env != nullptr)) {
    // Set but empty (a template left unfilled): not "no authentication".
    return absl::InvalidArgumentError("--tokens-file (or KERNELEVAL_TOKENS_FILE): empty path");
  }
  if (!config->tokens_file.empty()) {
    absl::StatusOr<std::vector<ClientToken>> tokens = LoadClientTokens(*config);
    if (!tokens.ok()) return tokens.status();
    config->server.service.client_tokens = *std::move(tokens);
  }
  config->server.service.limits.max_source_bytes = engine.max_source_bytes;
  config->server.service.limits.max_group_size = engine.max_group_size;
  // A request larger than about half the bound is refused whole
  // (RESOURCE_EXHAUSTED before the service sees it): the bound must hold two
  // of the largest requests the limits allow.
  const uint64_t largest_request =
      static_cast<uint64_t>(MaxRequestMessageBytes(config->server.service.limits));
  const uint64_t transport_bytes = config->server.transport_memory_bytes;
  if (transport_bytes > 0 && transport_bytes < 2 * largest_request) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--transport-memory-bytes: ", transport_bytes, " is below twice the largest request (",
        largest_request,
        " bytes: --max-source-bytes x --max-group-size + 16 MiB), which it would refuse"));
  }
  config->server.metrics_address =
      config->metrics_port > 0 ? absl::StrCat("0.0.0.0:", config->metrics_port) : "";
  return absl::OkStatus();
}

}  // namespace kerneleval::server
