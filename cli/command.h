// Subcommands of the `kerneleval` CLI register themselves here, one file each
// (cli/<name>_command.cc), so that main.cc never changes when one is added.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace kerneleval::cli {

// Documented exit codes (README "CLI"): scripts and CI rely on them.
enum ExitCode : int {
  kExitOk = 0,           // passed / success
  kExitFailed = 1,       // judged, and the kernel failed
  kExitUsage = 2,        // usage error or bad input
  kExitUnavailable = 3,  // server unreachable or refused the request
};

// Adds one subcommand (with its options and callback) to the root app.
using CommandFactory = std::function<void(CLI::App& root)>;

struct CommandRegistration {
  std::string name;
  CommandFactory add;
};

std::vector<CommandRegistration>& CommandRegistry();
bool RegisterCommand(std::string name, CommandFactory add);

// A command's callback reports its outcome here; main returns it.
void SetExitCode(int code);
int GetExitCode();

// A command that fails: `message` on stderr ("kerneleval COMMAND: message"),
// and with --json (`json`) also one object on stdout,
// {"error": {"code", "message", "exit_code"}}, so that `kerneleval ... --json
// | jq` reads an object on every outcome (it read nothing; rt7 #11, and the
// docs audit rt9 #1 for parse errors and the other commands). `code`: the
// status code's name (INVALID_ARGUMENT, UNAVAILABLE, ...). Returns
// `exit_code`. `code_on_stderr`: the stderr line starts with the code too
// (an engine's or server's status, "UNAUTHENTICATED: ...", as before).
int FailCommand(absl::string_view command, bool json, int exit_code, absl::string_view code,
                absl::string_view message, bool code_on_stderr = false);

}  // namespace kerneleval::cli

#define KERNELEVAL_CONCAT_INNER(a, b) a##b
#define KERNELEVAL_CONCAT(a, b) KERNELEVAL_CONCAT_INNER(a, b)
// Registers a subcommand at static-initialisation time (the CLI's sources are
// compiled into the executable itself, so the linker keeps them).
#define KERNELEVAL_CLI_COMMAND(name, factory)                                                  \
  [[maybe_unused]] static const bool KERNELEVAL_CONCAT(kerneleval_cli_registered_, __LINE__) = \
      ::kerneleval::cli::RegisterCommand(name, factory)
