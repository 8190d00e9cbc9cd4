// kerneleval: grade CUDA kernels from the command line (see README "CLI").
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "cli/command.h"

namespace kerneleval::cli {
namespace {
int g_exit_code = kExitOk;
}  // namespace

std::vector<CommandRegistration>& CommandRegistry() {
  static std::vector<CommandRegistration> registry;
  return registry;
}

bool RegisterCommand(std::string name, CommandFactory add) {
  CommandRegistry().push_back({std::move(name), std::move(add)});
  return true;
}

void SetExitCode(int code) { g_exit_code = code; }
int GetExitCode() { return g_exit_code; }

}  // namespace kerneleval::cli

// Outside the try below only a bug can throw (a duplicate subcommand or option
// name, a second "kerneleval" logger) and that should abort loudly; parse and
// command errors are caught and mapped to exit codes.
// NOLINTNEXTLINE(bugprone-exception-escape): only a bug throws, see above.
int main(int argc, char** argv) {
  namespace cli = kerneleval::cli;
  // The CLI's output is the verdict (maybe JSON, on stdout); engine logs go
  // to stderr, only when they matter (SPDLOG_LEVEL=info or debug shows more).
  spdlog::set_default_logger(spdlog::stderr_color_mt("kerneleval"));
  spdlog::set_level(spdlog::level::warn);
  spdlog::cfg::load_env_levels();
  CLI::App app{"kerneleval: compile, run, check and time CUDA kernels, and score them."};
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success (evaluate: the kernel passed), 1 evaluate: judged and failed, "
      "2 usage or bad input, 3 server unreachable or refused (evaluate: or a group's deadline "
      "left kernels unjudged and no judged one failed).");
  auto& registry = cli::CommandRegistry();
  std::sort(registry.begin(), registry.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  for (const auto& command : registry) command.add(app);
  // CLI11 says only "A subcommand is required" for a misspelt one.
  if (argc > 1 && argv[1][0] != '-' &&
      app.get_subcommands([&](const CLI::App* sub) { return sub->check_name(argv[1]); }).empty()) {
    std::fprintf(stderr, "kerneleval: unknown subcommand '%s' (kerneleval --help lists them)\n",
                 argv[1]);
    return cli::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? cli::kExitOk : cli::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kerneleval: %s\n", e.what());
    return cli::kExitUsage;
  }
  return cli::GetExitCode();
}
