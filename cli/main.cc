// kerneleval: grade CUDA kernels from the command line (see README "CLI").
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
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

int FailCommand(absl::string_view command, bool json, int exit_code, absl::string_view code,
                absl::string_view message, bool code_on_stderr) {
  std::fflush(stdout);
  const std::string text =
      code_on_stderr ? absl::StrCat(code, ": ", message) : std::string(message);
  std::fprintf(stderr, "kerneleval%s%.*s: %s\n", command.empty() ? "" : " ",
               static_cast<int>(command.size()), command.data(), text.c_str());
  if (json) {
    const nlohmann::json error = {{"error",
                                   {{"code", std::string(code)},
                                    {"message", std::string(message)},
                                    {"exit_code", exit_code}}}};
    std::printf("%s\n",
                error.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    std::fflush(stdout);
  }
  return exit_code;
}

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
  // --json anywhere: a usage error is also a JSON object on stdout (as the
  // commands' own failures are; a negative --seed printed nothing there).
  bool json = false;
  for (int i = 1; i < argc; ++i) json = json || std::strcmp(argv[i], "--json") == 0;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    if (!json) {
      app.exit(e);
      return cli::kExitUsage;
    }
    std::string message = e.what();
    return cli::FailCommand("", json, cli::kExitUsage, "INVALID_ARGUMENT", message);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kerneleval: %s\n", e.what());
    return cli::kExitUsage;
  }
  return cli::GetExitCode();
}
