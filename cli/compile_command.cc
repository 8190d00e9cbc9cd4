// kerneleval compile FILE.cu: compile a kernel the way the server does
// (NVRTC in a sandboxed worker, the option allow-list), print success,
// diagnostics and each kernel's resources, or the CompileResult as JSON.
// Exit codes: 0 compiled, 1 compile failed, 2 usage or bad input, 3 the
// compile service could not start (worker binary, toolkit or sandbox).
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/command.h"
#include "evaluator/compile/compile_service.h"
#include "evaluator/compile/kernel_info.h"
#include "evaluator/compile/options.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace kerneleval::cli {
namespace {

struct CompileFlags {
  std::string source_path;
  std::string arch;
  std::vector<std::string> options;
  bool json = false;
  bool include_ptx = false;
  bool include_cubin = false;
  std::string ptx_path;
  std::string cubin_path;
  double timeout_seconds = 30;
  std::string cache_dir;
  std::string worker;
};

bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  return static_cast<bool>(file);
}

void PrintText(const v1::CompileResult& r, const std::string& path, FILE* out) {
  absl::FPrintF(out, "%s: %s for %s in %.3f s%s (NVRTC %s%s%s)\n", path,
                r.success() ? "compiled" : "compile FAILED", r.arch(), r.compile_seconds(),
                r.cache_hit() ? " (cache hit)" : "", r.toolkit_version(),
                r.options().empty() ? "" : ", ", absl::StrJoin(r.options(), " "));
  if (!r.diagnostics().empty()) {
    absl::FPrintF(out, "\ndiagnostics:\n");
    for (const auto& d : r.diagnostics()) {
      std::string where = d.line() ? absl::StrCat("line ", d.line()) : "-";
      if (d.line() && d.column()) absl::StrAppend(&where, ":", d.column());
      absl::FPrintF(out, "  %-12s %-8s %s\n", where, d.severity(), d.message());
    }
  }
  if (!r.success() && !r.log().empty()) absl::FPrintF(out, "\ncompiler log:\n%s", r.log());
  if (r.uses_device_malloc()) {
    absl::FPrintF(out,
                  "calls device malloc(): the GPU worker is replaced after each request that "
                  "runs it\n");
  }
  std::vector<std::string> globals;
  for (const std::string& name : r.device_globals()) {
    if (!compile::IsPreludeGlobal(name)) globals.push_back(name);
  }
  if (!globals.empty()) {
    absl::FPrintF(out,
                  "device globals (hidden from other programs while timed, zeroed when "
                  "unloaded): %s\n",
                  absl::StrJoin(globals, ", "));
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

int Run(const CompileFlags& flags) {
  // Progress and warnings to stderr: stdout carries the result (maybe JSON).
  spdlog::set_default_logger(spdlog::stderr_color_st("kerneleval-compile"));
  std::ifstream file(flags.source_path, std::ios::binary);
  if (!file) {
    absl::FPrintF(stderr, "kerneleval compile: cannot read %s\n", flags.source_path);
    return kExitUsage;
  }
  std::stringstream source;
  source << file.rdbuf();

  compile::CompileServiceOptions options;
  options.workers = 1;
  options.timeout = absl::Seconds(flags.timeout_seconds);
  options.cache_dir = flags.cache_dir;
  options.worker_binary = flags.worker;
  absl::StatusOr<std::unique_ptr<compile::CompileService>> service =
      compile::CompileService::Create(options);
  if (!service.ok()) {
    absl::FPrintF(stderr, "kerneleval compile: %s\n", service.status().ToString());
    return kExitUnavailable;
  }
  compile::CompileJob job;
  job.source = source.str();
  job.options.set_arch(flags.arch);
  for (const auto& option : flags.options) job.options.add_options(option);
  job.want_ptx = flags.include_ptx || !flags.ptx_path.empty();
  job.want_cubin = flags.include_cubin || !flags.cubin_path.empty();
  absl::StatusOr<v1::CompileResult> result = (*service)->Compile(job);
  if (!result.ok()) {
    absl::FPrintF(stderr, "kerneleval compile: %s\n", result.status().message());
    return absl::IsInvalidArgument(result.status()) ? kExitUsage : kExitUnavailable;
  }
  if (!flags.ptx_path.empty() && result->success() && !WriteFile(flags.ptx_path, result->ptx())) {
    absl::FPrintF(stderr, "kerneleval compile: cannot write %s\n", flags.ptx_path);
    return kExitUsage;
  }
  if (!flags.cubin_path.empty() && result->success() &&
      !WriteFile(flags.cubin_path, result->cubin())) {
    absl::FPrintF(stderr, "kerneleval compile: cannot write %s\n", flags.cubin_path);
    return kExitUsage;
  }
  if (!flags.include_ptx) result->clear_ptx();
  if (!flags.include_cubin) result->clear_cubin();

  if (flags.json) {
    google::protobuf::util::JsonPrintOptions json_options;
    json_options.add_whitespace = true;
    json_options.always_print_primitive_fields = true;
    json_options.preserve_proto_field_names = true;
    std::string json;
    if (!google::protobuf::util::MessageToJsonString(*result, &json, json_options).ok()) {
      absl::FPrintF(stderr, "kerneleval compile: cannot print JSON\n");
      return kExitUnavailable;
    }
    absl::FPrintF(stdout, "%s", json);
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
      "per-kernel resources. Exit 0 compiled, 1 compile failed, 2 usage or bad input, 3 the "
      "compile service could not start.");
  command->add_option("file", flags->source_path, "CUDA C++ source (.cu)")->required();
  command->add_option("--arch", flags->arch, "target, e.g. sm_90 (PTX only for compute_XX)")
      ->default_str("sm_90");
  command->add_option(
      "--option", flags->options,
      "an NVRTC option from the allow-list (repeatable): " + compile::AllowedOptionsSummary());
  command->add_flag("--json", flags->json,
                    "print the CompileResult as JSON (proto field names, every field)");
  command->add_flag("--include-ptx", flags->include_ptx, "put the PTX into the JSON");
  command->add_flag("--include-cubin", flags->include_cubin,
                    "put the CUBIN (base64) into the JSON");
  command->add_option("--ptx", flags->ptx_path, "write the PTX to this file");
  command->add_option("--cubin", flags->cubin_path, "write the CUBIN to this file");
  command->add_option("--timeout", flags->timeout_seconds, "wall-clock limit [s]")
      ->default_val(30)
      ->check(CLI::PositiveNumber);
  command->add_option("--cache-dir", flags->cache_dir, "on-disk compile cache (default: none)");
  command->add_option("--worker", flags->worker,
                      "kerneleval-worker binary (default: $KERNELEVAL_WORKER, beside this "
                      "program, or the build tree's)");
  command->callback([flags] { SetExitCode(Run(*flags)); });
}

}  // namespace

KERNELEVAL_CLI_COMMAND("compile", AddCompileCommand);

}  // namespace kerneleval::cli
