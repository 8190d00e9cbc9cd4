// kerneleval_server_bench: what the gRPC front costs, over loopback.
//
//   1. RPC overhead of a cached Compile (p50, p99) at 1, 16 and 64 clients;
//   2. evaluations per second on the CPU backend;
//   3. server RSS idle, under load, and after 10,000 requests (flat?).
//
// Runs the real kerneleval-server (--backend cpu) when it is built, else (or
// with --stub) this binary as a server in front of a stub engine that answers
// at once, which isolates the server's own cost. Bounded in time by
// --seconds per measurement. Prints a table.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/client/client.h"
#include "server/server.h"

#ifndef KERNELEVAL_SERVER_BINARY
#define KERNELEVAL_SERVER_BINARY ""
#endif
#ifndef KERNELEVAL_SOURCE_DIR
#define KERNELEVAL_SOURCE_DIR "."
#endif

namespace kerneleval::bench {
namespace {

using Clock = std::chrono::steady_clock;

// ------------------------------------------------------------ stub engine

// Answers everything at once, in the calling thread: what is left to measure
// is the server.
class StubEngine final : public Engine {
 public:
  void EvaluateAsync(v1::EvaluateRequest request, CallContext context,
                     VerdictCallback done) override {
    v1::Verdict verdict;
    verdict.set_correct(true);
    verdict.set_stage("passed");
    verdict.set_reward(1);
    verdict.set_problem_id(request.problem_id());
    done(std::move(verdict));
  }
  void EvaluateGroupAsync(v1::EvaluateGroupRequest request, CallContext context,
                          GroupCallback done) override {
    v1::EvaluateGroupResponse response;
    for (int i = 0; i < request.submissions_size(); ++i) response.add_verdicts()->set_correct(true);
    done(std::move(response));
  }
  absl::StatusOr<v1::CompileResult> Compile(const v1::CompileRequest& request,
                                            const CallContext& context) override {
    v1::CompileResult result;
    result.set_success(true);
    result.set_cache_hit(true);
    result.set_arch("sm_90");
    result.add_kernels()->set_name("kernel");
    return result;
  }
  absl::StatusOr<v1::ListProblemsResponse> ListProblems(const v1::ListProblemsRequest&) override {
    return v1::ListProblemsResponse();
  }
  absl::StatusOr<v1::GetProblemResponse> GetProblem(const v1::GetProblemRequest&) override {
    return absl::NotFoundError("stub");
  }
  v1::ListDevicesResponse ListDevices() override {
    v1::ListDevicesResponse response;
    response.add_devices()->set_id("stub");
    return response;
  }
  bool Ready() const override { return true; }
  void Shutdown(absl::Time) override {}
};

int ServeStub() {
  spdlog::set_level(spdlog::level::warn);
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  StubEngine engine;
  server::ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  auto started = server::KernelEvalServer::Start(&engine, options, nullptr);
  if (!started.ok()) {
    std::fprintf(stderr, "%s\n", started.status().ToString().c_str());
    return 1;
  }
  std::printf("listening on port %d\n", (*started)->port());
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop, &signal_number);
  (*started)->Shutdown(absl::Now() + absl::Seconds(5));
  return 0;
}

// ------------------------------------------------------------- the server

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The server as a child process; its output goes to a temporary file (a pipe
// nobody drains would block its logging under load).
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> args) {
    char path[] = "/tmp/kerneleval-server-bench-XXXXXX";
    const int log_fd = mkstemp(path);
    if (log_fd < 0) return;
    log_path_ = path;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      close(log_fd);
      std::vector<char*> argv;
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(log_fd);
  }
  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (!log_path_.empty()) unlink(log_path_.c_str());
  }

  std::string Output() const { return ReadFile(log_path_); }

  int WaitForPort(std::chrono::seconds timeout) {
    const std::regex pattern("listening on port ([0-9]+)");
    const auto until = Clock::now() + timeout;
    while (Clock::now() < until && !Exited()) {
      std::smatch match;
      const std::string text = Output();
      if (std::regex_search(text, match, pattern)) return std::stoi(match[1]);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return 0;
  }

  bool Exited() {
    if (!exited_ && waitpid(pid_, &status_, WNOHANG) == pid_) exited_ = true;
    return exited_;
  }

  // Exit code after SIGTERM, and how long it took [s]; -1 on timeout.
  std::pair<int, double> Terminate(std::chrono::seconds timeout) {
    const auto start = Clock::now();
    kill(pid_, SIGTERM);
    while (!Exited()) {
      if (Clock::now() - start > timeout) return {-1, 0};
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return {WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_), seconds};
  }

  // Resident set [MiB] from /proc/<pid>/status VmRSS.
  double RssMiB() const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) {
        std::istringstream fields(line.substr(6));
        double kib = 0;
        fields >> kib;
        return kib / 1024;
      }
    }
    return 0;
  }

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  bool exited_ = false;
  int status_ = 0;
};

// ---------------------------------------------------------------- measures

struct LatencySummary {
  size_t requests = 0;
  size_t errors = 0;
  double p50_us = 0;
  double p99_us = 0;
  double per_second = 0;
  std::string first_error;
};

double Percentile(std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t index = std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()));
  return sorted[index];
}

// `clients` threads, each with its own channel, call `call` until `seconds`
// pass or `max_requests` are done in total. `sample` runs every 50 ms.
template <typename Call>
LatencySummary Drive(const client::ClientOptions& options, int clients, double seconds,
                     size_t max_requests, Call call, const std::function<void()>& sample = {}) {
  std::vector<std::vector<double>> latencies(clients);
  std::atomic<size_t> issued{0};
  std::atomic<size_t> errors{0};
  std::string first_error;
  std::mutex error_mutex;
  const auto start = Clock::now();
  const auto until = start + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto created = client::KernelEvalClient::Create(options);
      if (!created.ok()) return;
      auto& client = **created;
      while (Clock::now() < until && issued.fetch_add(1) < max_requests) {
        const auto begin = Clock::now();
        const absl::Status status = call(client, issued.load());
        latencies[c].push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - begin).count());
        if (!status.ok()) {
          ++errors;
          std::lock_guard lock(error_mutex);
          if (first_error.empty()) first_error = status.ToString();
        }
      }
    });
  }
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done.load() && sample) {
      sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  for (auto& thread : threads) thread.join();
  done = true;
  sampler.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& per_client : latencies) all.insert(all.end(), per_client.begin(), per_client.end());
  std::sort(all.begin(), all.end());
  LatencySummary summary;
  summary.requests = all.size();
  summary.errors = errors.load();
  summary.p50_us = Percentile(all, 0.50);
  summary.p99_us = Percentile(all, 0.99);
  summary.per_second = all.size() / elapsed;
  summary.first_error = first_error;
  return summary;
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"kerneleval_server_bench: gRPC front overhead, throughput and memory (loopback)"};
  std::string server_binary = KERNELEVAL_SERVER_BINARY;
  std::string problems_dir = std::string(KERNELEVAL_SOURCE_DIR) + "/problems";
  std::string problem = "leaky_relu";
  std::string solution;
  bool stub = false;
  bool serve_stub = false;
  double seconds = 3;
  double eval_seconds = 10;
  int eval_clients = 4;
  size_t memory_requests = 10'000;
  app.add_option("--server-binary", server_binary, "kerneleval-server to run")
      ->capture_default_str();
  app.add_option("--problems-dir", problems_dir)->capture_default_str();
  app.add_option("--problem", problem, "Problem for the evaluation rate")->capture_default_str();
  app.add_option("--solution", solution,
                 "Submission source; default problems/<problem>/solutions/correct_scalar.cu");
  app.add_flag("--stub", stub, "Measure against a stub engine even if the server is built");
  app.add_flag("--serve-stub", serve_stub, "(internal) be the stub server");
  app.add_option("--seconds", seconds, "Duration of each Compile level [s]")->capture_default_str();
  app.add_option("--eval-seconds", eval_seconds, "Duration of the evaluation rate [s]")
      ->capture_default_str();
  app.add_option("--eval-clients", eval_clients)->capture_default_str();
  app.add_option("--memory-requests", memory_requests)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (serve_stub) return ServeStub();

  const bool real = !stub && !server_binary.empty() && access(server_binary.c_str(), X_OK) == 0;
  std::vector<std::string> args;
  if (real) {
    // Info level: the "listening on port" line is how the port is learnt.
    args = {server_binary,    "--backend",  "cpu",         "--listen", "127.0.0.1:0",
            "--problems-dir", problems_dir, "--log-level", "info"};
  } else {
    args = {"/proc/self/exe", "--serve-stub"};
    char self[4096];
    const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (length > 0) args[0].assign(self, length);
  }
  ServerProcess server(args);
  const int port = server.WaitForPort(std::chrono::seconds(120));
  if (port == 0) {
    std::fprintf(stderr, "the server did not start:\n%s\n", server.Output().c_str());
    return 1;
  }
  client::ClientOptions options;
  options.target = "127.0.0.1:" + std::to_string(port);
  options.timeout = absl::Seconds(120);
  auto probe = client::KernelEvalClient::Create(options);
  for (int i = 0; i < 1200; ++i) {  // up to 2 min for the engine's workers
    auto health = (*probe)->CheckHealth(server::kHealthServiceName);
    if (health.ok() && *health == client::HealthStatus::kServing) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const double rss_idle = server.RssMiB();

  if (solution.empty()) solution = problems_dir + "/" + problem + "/solutions/correct_scalar.cu";
  std::string source = ReadFile(solution);
  if (source.empty()) source = "__global__ void kernel(float* y) { y[0] = 1.0f; }\n";

  // 1. Cached Compile: the first call fills the cache.
  v1::CompileRequest compile;
  compile.set_source(source);
  auto warm = (*probe)->Compile(compile);
  if (!warm.ok()) std::fprintf(stderr, "warm-up Compile: %s\n", warm.status().ToString().c_str());
  double rss_load = rss_idle;
  const auto sample_rss = [&] { rss_load = std::max(rss_load, server.RssMiB()); };
  const auto compile_call = [&](client::KernelEvalClient& c, size_t) {
    return c.Compile(compile).status();
  };
  std::vector<std::pair<int, LatencySummary>> compile_levels;
  for (const int clients : {1, 16, 64}) {
    compile_levels.emplace_back(
        clients, Drive(options, clients, seconds, 1'000'000, compile_call, sample_rss));
  }

  // 2. Evaluations per second (distinct seeds: no de-duplication).
  v1::EvaluateRequest evaluate;
  evaluate.set_problem_id(problem);
  evaluate.mutable_submission()->set_source(source);
  evaluate.set_backend(v1::BACKEND_CPU);
  std::atomic<uint64_t> seed{1};
  std::atomic<size_t> passed{0};
  const auto evaluate_call = [&](client::KernelEvalClient& c, size_t) {
    v1::EvaluateRequest request = evaluate;
    request.set_seed(seed.fetch_add(1));
    auto verdict = c.Evaluate(request);
    if (verdict.ok() && verdict->correct()) ++passed;
    return verdict.status();
  };
  evaluate.set_skip_timing(true);
  const LatencySummary correctness_only =
      Drive(options, eval_clients, eval_seconds, 1'000'000, evaluate_call, sample_rss);
  const size_t passed_correctness = passed.exchange(0);
  evaluate.set_skip_timing(false);
  const LatencySummary with_timing =
      Drive(options, eval_clients, eval_seconds, 1'000'000, evaluate_call, sample_rss);
  const size_t passed_timed = passed.load();

  // 3. Memory over many requests: RSS after the first 1,000 and after all.
  const size_t first_batch = std::min<size_t>(1000, memory_requests);
  Drive(options, 16, 600, first_batch, compile_call);
  const double rss_after_first = server.RssMiB();
  Drive(options, 16, 600, memory_requests - first_batch, compile_call);
  const double rss_after_all = server.RssMiB();

  const auto [exit_code, shutdown_seconds] = server.Terminate(std::chrono::seconds(60));

  std::printf("\nkerneleval-server over loopback (%s engine%s)\n", real ? "real" : "stub",
              real ? ", --backend cpu" : ": server cost only");
  std::printf("%-56s %10s %10s %10s %10s %8s\n", "measure", "p50 [us]", "p99 [us]", "rate [/s]",
              "requests", "errors");
  for (const auto& [clients, summary] : compile_levels) {
    const std::string name =
        "Compile (cached), " + std::to_string(clients) + " client" + (clients > 1 ? "s" : "");
    std::printf("%-56s %10.0f %10.0f %10.0f %10zu %8zu\n", name.c_str(), summary.p50_us,
                summary.p99_us, summary.per_second, summary.requests, summary.errors);
  }
  const std::string eval_name =
      "Evaluate " + problem + ", correctness only, " + std::to_string(eval_clients) + " clients";
  std::printf("%-56s %10.0f %10.0f %10.2f %10zu %8zu  (%zu correct)\n", eval_name.c_str(),
              correctness_only.p50_us, correctness_only.p99_us, correctness_only.per_second,
              correctness_only.requests, correctness_only.errors, passed_correctness);
  const std::string timed_name =
      "Evaluate " + problem + ", with timing, " + std::to_string(eval_clients) + " clients";
  std::printf("%-56s %10.0f %10.0f %10.2f %10zu %8zu  (%zu correct)\n", timed_name.c_str(),
              with_timing.p50_us, with_timing.p99_us, with_timing.per_second, with_timing.requests,
              with_timing.errors, passed_timed);
  for (const LatencySummary* summary : std::initializer_list<const LatencySummary*>{
           &compile_levels.back().second, &correctness_only, &with_timing}) {
    if (!summary->first_error.empty())
      std::printf("  first error: %s\n", summary->first_error.c_str());
  }
  const double growth = rss_after_all - rss_after_first;
  std::printf(
      "\nserver RSS [MiB]: idle %.1f, under load (max) %.1f, after %zu requests %.1f, "
      "after %zu %.1f -> %+.1f MiB over %zu requests (%s)\n",
      rss_idle, rss_load, first_batch, rss_after_first, memory_requests, rss_after_all, growth,
      memory_requests - first_batch,
      growth <= std::max(2.0, 0.05 * rss_after_first) ? "flat" : "GROWING");
  std::printf("SIGTERM: exit code %d after %.2f s\n", exit_code, shutdown_seconds);
  return exit_code == 0 ? 0 : 1;
}

}  // namespace kerneleval::bench

int main(int argc, char** argv) { return kerneleval::bench::Main(argc, argv); }
