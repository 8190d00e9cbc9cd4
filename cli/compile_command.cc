// kerneleval compile FILE.cu: compile a kernel the way the server does
// (NVRTC in a sandboxed worker, the option allow-list), print success,
// diagnostics and each kernel's resources, or the CompileResult as JSON.
// With --server HOST:PORT the server compiles it (the Compile RPC).
// Exit codes: 0 compiled, 1 compile failed, 2 usage or bad input (an option
// off the allow-list, an architecture NVRTC does not know), 3 the compile
// service could not start (worker binary, toolkit or sandbox) or the server
// was unreachable or refused.
#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/client/client.h"
#include "cli/client/json.h"
#include "cli/client/number_checks.h"
#include "cli/client/server_flags.h"
#include "cli/command.h"
#include "cli/compile_flags.h"
#include "cli/source_file.h"
#include "evaluator/compile/compile_service.h"
#include "evaluator/compile/kernel_info.h"
#include "evaluator/compile/options.h"
#include "evaluator/plan/directives.h"

namespace kerneleval::cli {
namespace {

struct CompileFlags {
  std::string source_path;
  std::string arch;
  std::vector<std::string> options;
  // Template kernels to instantiate; those the source's @launch lines name
  // are added.
  std::vector<std::string> name_expressions;
  bool json = false;
  bool include_ptx = false;
  bool include_cubin = false;
  std::string ptx_path;
  std::string cubin_path;
  double timeout_seconds = 30;
  std::string cache_dir;
  std::string worker;
  client::ServerFlags server;
};

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  return static_cast<bool>(file);
}

// The author's device globals: kerneleval's prelude constants (INFINITY,
// FLT_MAX, ...) are in every module and say nothing about this one.
// The source's own globals: not the prelude's, nor the constants that
// libcu++ and cooperative groups headers define (<cooperative_groups.h>
// alone brings ~400: cuda::std traits, chrono constants, tile masks).
std::vector<std::string> AuthorsGlobals(const v1::CompileResult& r) {
  std::vector<std::string> globals;
  for (const std::string& name : r.device_globals()) {
    // cuda::std's internal-linkage constants are mangled inside the file's
    // _INTERNAL_ namespace: _ZN39_INTERNAL_..._kernel_cu_...4cuda3std...
    if (compile::IsPreludeGlobal(name) || absl::StartsWith(name, "_ZN4cuda") ||
        absl::StrContains(name, "4cuda3std") || absl::StrContains(name, "18cooperative_groups")) {
      continue;
    }
    globals.push_back(name);
  }
  return globals;
}

constexpr size_t kGlobalsShown = 16;

void PrintText(const v1::CompileResult& r, const std::string& path, FILE* out) {
  // "(NVRTC 13.0, --use_fast_math)"; a result refused before NVRTC ran has no
  // toolkit version.
  std::vector<std::string> how;
  if (!r.toolkit_version().empty()) how.push_back(absl::StrCat("NVRTC ", r.toolkit_version()));
  if (!r.options().empty()) how.push_back(absl::StrJoin(r.options(), " "));
  absl::FPrintF(out, "%s: %s for %s in %.3f s%s%s\n", path,
                r.success() ? "compiled" : "compile FAILED", r.arch(), r.compile_seconds(),
                r.cache_hit() ? " (cache hit)" : "",
                how.empty() ? "" : absl::StrCat(" (", absl::StrJoin(how, ", "), ")"));
  if (!r.diagnostics().empty()) {
    absl::FPrintF(out, "\ndiagnostics:\n");
    for (const auto& d : r.diagnostics()) {
      std::string where = d.line() ? absl::StrCat("line ", d.line()) : "-";
      if (d.line() && d.column()) absl::StrAppend(&where, ":", d.column());
      absl::FPrintF(out, "  %-12s %-8s %s\n", where, d.severity(), d.message());
    }
  }
  if (!r.success() && !r.log().empty()) {
    absl::FPrintF(out, "\ncompiler log:\n%s%s", r.log(), absl::EndsWith(r.log(), "\n") ? "" : "\n");
  }
  if (r.uses_device_malloc()) {
    absl::FPrintF(out,
                  "calls device malloc(): the GPU worker is replaced after each request that "
                  "runs it\n");
  }
  const std::vector<std::string> globals = AuthorsGlobals(r);
  if (!globals.empty()) {
    absl::FPrintF(out,
                  "device globals (hidden from other programs while timed, zeroed when "
                  "unloaded): %s%s\n",
                  absl::StrJoin(globals.begin(),
                                globals.begin() + std::min(globals.size(), kGlobalsShown), ", "),
                  globals.size() > kGlobalsShown
                      ? absl::StrCat(" and ", globals.size() - kGlobalsShown, " more (--json)")
                      : "");
  }
  if (r.kernels().empty()) return;
  absl::FPrintF(out, "\n%-40s %5s %9s %9s %13s %8s %7s %6s  %s\n", "kernel", "regs", "smem [B]",
                "local [B]", "spill st/ld", "cmem [B]", "threads", "params",
                "parameters (offset:size)");
  for (const auto& k : r.kernels()) {
    std::vector<std::string> params;
    uint32_t param_bytes = 0;
    for (const auto& p : k.params()) {
      params.push_back(absl::StrFormat("%s%s%s %u:%u", p.type(), p.name().empty() ? "" : " ",
                                       p.name(), p.offset_bytes(), p.size_bytes()));
      param_bytes = std::max(param_bytes, p.offset_bytes() + p.size_bytes());
    }
    std::string name = k.name();
    if (name.size() > 40) name = name.substr(0, 37) + "...";
    absl::FPrintF(out, "%-40s %5u %9u %9u %6u/%-6u %8u %7s %6s  %s\n", name,
                  k.registers_per_thread(), k.static_shared_bytes(), k.local_bytes(),
                  k.spill_store_bytes(), k.spill_load_bytes(), k.constant_bytes(),
                  k.max_threads_per_block() ? absl::StrCat(k.max_threads_per_block()) : "-",
                  absl::StrCat(k.params_size(), "/", param_bytes, "B"),
                  absl::StrJoin(params, ", "));
    if (k.name() != k.mangled_name()) absl::FPrintF(out, "  symbol %s\n", k.mangled_name());
  }
}

absl::StatusOr<v1::CompileResult> CompileHere(const CompileFlags& flags, std::string source) {
  compile::CompileServiceOptions options;
  options.workers = 1;
  options.timeout = absl::Seconds(flags.timeout_seconds);
  options.cache_dir = flags.cache_dir;
  options.worker_binary = flags.worker;
  absl::StatusOr<std::unique_ptr<compile::CompileService>> service =
      compile::CompileService::Create(options);
  if (!service.ok()) return service.status();
  compile::CompileJob job;
  job.source = std::move(source);
  job.options.set_arch(flags.arch);
  for (const auto& option : flags.options) job.options.add_options(option);
  for (const auto& expression : flags.name_expressions) {
    job.options.add_name_expressions(expression);
  }
  job.want_ptx = flags.include_ptx || !flags.ptx_path.empty();
  job.want_cubin = flags.include_cubin || !flags.cubin_path.empty();
  return (*service)->Compile(job);
}

absl::StatusOr<v1::CompileResult> CompileOnServer(const CompileFlags& flags, std::string source) {
  absl::StatusOr<std::unique_ptr<client::KernelEvalClient>> client =
      client::KernelEvalClient::Create(client::ToClientOptions(flags.server));
  if (!client.ok()) return client.status();
  v1::CompileRequest request;
  request.set_source(std::move(source));
  request.mutable_options()->set_arch(flags.arch);
  for (const auto& option : flags.options) request.mutable_options()->add_options(option);
  for (const auto& expression : flags.name_expressions) {
    request.mutable_options()->add_name_expressions(expression);
  }
  request.set_include_ptx(flags.include_ptx || !flags.ptx_path.empty());
  request.set_include_cubin(flags.include_cubin || !flags.cubin_path.empty());
  return (*client)->Compile(request);
}

// The CompileResult as JSON; device_globals are the author's, as in the text.
std::string ResultJson(v1::CompileResult result) {
  const std::vector<std::string> globals = AuthorsGlobals(result);
  result.clear_device_globals();
  for (const std::string& name : globals) result.add_device_globals(name);
  return client::ToJson(result, /*pretty=*/true);
}

int Run(CompileFlags flags) {
  auto fail = [&](int exit_code, absl::string_view code, absl::string_view message) {
    return FailCommand("compile", flags.json, exit_code, code, message);
  };
  auto fail_with = [&](const absl::Status& status) {
    return FailCommand("compile", flags.json, client::ExitCodeForStatus(status),
                       absl::StatusCodeToString(status.code()), status.message(),
                       /*code_on_stderr=*/true);
  };
  absl::StatusOr<std::string> source = ReadSourceFile(flags.source_path);
  if (!source.ok()) return fail(kExitUsage, "INVALID_ARGUMENT", source.status().message());
  // The allow-list and the architecture's spelling, checked here as the
  // compile service (or the server) would: a refused option is bad input.
  if (absl::Status s = CheckCompileFlags(flags.arch, flags.options); !s.ok()) {
    return fail(kExitUsage, "INVALID_ARGUMENT", s.message());
  }
  // The template kernels the source launches, as an evaluation instantiates
  // them (a plan that does not parse launches nothing here).
  if (absl::StatusOr<v1::LaunchPlan> plan = plan::ParseDirectives(*source); plan.ok()) {
    for (std::string& instance : plan::LaunchedTemplateInstances(*plan)) {
      flags.name_expressions.push_back(std::move(instance));
    }
  }
  absl::StatusOr<std::vector<std::string>> expressions =
      compile::CheckNameExpressions(flags.name_expressions);
  if (!expressions.ok())
    return fail(kExitUsage, "INVALID_ARGUMENT", expressions.status().message());
  flags.name_expressions = *std::move(expressions);

  absl::StatusOr<v1::CompileResult> result =
      flags.server.remote() ? CompileOnServer(flags, *source) : CompileHere(flags, *source);
  if (!result.ok()) return fail_with(result.status());
  if (NvrtcRefusedAnOption(*result)) {
    std::string log(result->log());
    while (!log.empty() && log.back() == '\n') log.pop_back();
    return fail(
        kExitUsage, "INVALID_ARGUMENT",
        absl::StrFormat("%s (NVRTC %s, arch %s)", log, result->toolkit_version(), result->arch()));
  }
  if (!flags.ptx_path.empty() && result->success() && !WriteFile(flags.ptx_path, result->ptx())) {
    return fail(kExitUsage, "INVALID_ARGUMENT", absl::StrCat("cannot write ", flags.ptx_path));
  }
  if (!flags.cubin_path.empty() && result->success() &&
      !WriteFile(flags.cubin_path, result->cubin())) {
    return fail(kExitUsage, "INVALID_ARGUMENT", absl::StrCat("cannot write ", flags.cubin_path));
  }
  if (!flags.include_ptx) result->clear_ptx();
  if (!flags.include_cubin) result->clear_cubin();

  if (flags.json) {
    absl::FPrintF(stdout, "%s\n", ResultJson(*result));
  } else {
    PrintText(*result, flags.source_path, stdout);
  }
  return result->success() ? kExitOk : kExitFailed;
}

void AddCompileCommand(CLI::App& root) {
  auto flags = std::make_shared<CompileFlags>();
  CLI::App* command = root.add_subcommand(
      "compile",
      "Compile a CUDA kernel as the server does (NVRTC, sandboxed) and show diagnostics and "
      "per-kernel resources (--server: on a kerneleval server).");
  // Its own: the root's footer (evaluate's 0 passed, 1 judged and failed) would
  // otherwise follow this subcommand's help too.
  command->footer(
      "Exit codes: 0 compiled, 1 compile failed, 2 usage or bad input (a refused option or "
      "architecture), 3 the compile service could not start or the server was unreachable.");
  command->add_option("file", flags->source_path, "CUDA C++ source (.cu)")->required();
  command->add_option("--arch", flags->arch, "target, e.g. sm_90 (PTX only for compute_XX)")
      ->default_str("sm_90");
  command->add_option(
      "--option,-O", flags->options,
      "an NVRTC option from the allow-list (repeatable): " + compile::AllowedOptionsSummary());
  command->add_option("--instantiate", flags->name_expressions,
                      "a template kernel to instantiate, e.g. 'scale<float, 4>' (repeatable; the "
                      "template kernels the source's @launch lines name are instantiated too)");
  command->add_flag("--json", flags->json,
                    "print the CompileResult as JSON (proto field names, every field; "
                    "device_globals: the source's own, without the prelude's constants)");
  command->add_flag("--include-ptx", flags->include_ptx, "put the PTX into the JSON");
  command->add_flag("--include-cubin", flags->include_cubin,
                    "put the CUBIN (base64) into the JSON");
  command->add_option("--ptx", flags->ptx_path, "write the PTX to this file");
  command->add_option("--cubin", flags->cubin_path, "write the CUBIN to this file");
  command->add_option("--timeout", flags->timeout_seconds, "wall-clock limit [s] (in-process)")
      ->default_val(30)
      ->check(client::PositiveNumber());
  command->add_option("--cache-dir", flags->cache_dir,
                      "on-disk compile cache (in-process; default: none)");
  command->add_option("--worker", flags->worker,
                      "kerneleval-worker binary (default: $KERNELEVAL_WORKER, beside this "
                      "program, or the build tree's; in-process)");
  client::AddServerOptions(command, &flags->server);
  command->callback([flags] { SetExitCode(Run(*flags)); });
}

}  // namespace

KERNELEVAL_CLI_COMMAND("compile", AddCompileCommand);

}  // namespace kerneleval::cli
