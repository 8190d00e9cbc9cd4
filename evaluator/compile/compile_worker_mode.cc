// `kerneleval-worker compile --scratch-dir=DIR [--arch=sm_XX] [--pch]
// [--pch-limit-bytes=N] [--filesystem-sandbox=MECHANISM]`: the sandboxed
// NVRTC worker of CompileService (MECHANISM: sandbox::MechanismName; default
// landlock+mount-namespace; there is no value for "none").
//
// Start-up, in this order: find the toolkit; compile a trivial kernel (NVRTC
// dlopen's libnvrtc-builtins and reads the toolkit lazily: this makes it do so
// before the sandbox); confine the file system to the CUDA headers and
// libraries, kerneleval's headers and DIR (read-write: NVRTC's temporary file
// and precompiled headers) with Landlock and, where the kernel lets us, a
// mount namespace in which nothing else exists (so that neither
// __has_include nor an error's errno tells which host files exist); load the
// kKernel seccomp profile; say ready.
// Then: one CompileJobRequest -> one CompileJobResponse, until EOF.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "evaluator/compile/compile_service.h"
#include "evaluator/compile/host_build_probe.h"
#include "evaluator/compile/nvrtc_compiler.h"
#include "evaluator/compile/options.h"
#include "evaluator/process/framing.h"
#include "evaluator/sandbox/sandbox.h"
#include "evaluator/worker/worker_mode.h"
#include "kerneleval/internal/compile.pb.h"

namespace kerneleval::compile {
namespace {

namespace fs = std::filesystem;

struct WorkerArgs {
  std::string scratch_dir;
  std::string arch = "sm_90";
  bool pch = false;
  sandbox::FilesystemMechanism filesystem =
      sandbox::FilesystemMechanism::kLandlockAndMountNamespace;
  uint64_t pch_limit_bytes = uint64_t{2} << 30;
};

WorkerArgs ParseArgs(int argc, char** argv) {
  WorkerArgs args;
  for (int i = 2; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (absl::StartsWith(arg, "--scratch-dir=")) args.scratch_dir = std::string(arg.substr(14));
    if (absl::StartsWith(arg, "--arch=")) args.arch = std::string(arg.substr(7));
    if (arg == "--pch") args.pch = true;
    if (absl::StartsWith(arg, "--filesystem-sandbox=")) {
      for (auto mechanism :
           {sandbox::FilesystemMechanism::kAuto, sandbox::FilesystemMechanism::kLandlock,
            sandbox::FilesystemMechanism::kMountNamespace,
            sandbox::FilesystemMechanism::kLandlockAndMountNamespace}) {
        if (arg.substr(21) == sandbox::MechanismName(mechanism)) args.filesystem = mechanism;
      }
    }
    if (absl::StartsWith(arg, "--pch-limit-bytes=")) {
      (void)absl::SimpleAtoi(arg.substr(18), &args.pch_limit_bytes);
    }
  }
  return args;
}

int Fail(int fd, const std::string& error) {
  internal::CompileWorkerReady ready;
  ready.set_ok(false);
  ready.set_error(error);
  (void)process::WriteMessage(fd, ready);
  return 1;
}

// NVRTC keeps every distinct header prefix as a PCH file (CUB: ~170 MB): a
// stream of submissions with distinct prefixes would fill the disk. Beyond
// the limit the worker starts over (NVRTC looks the files up by name each
// compile, a missing one is simply rebuilt).
void TrimPchDir(const std::string& dir, uint64_t limit_bytes) {
  std::error_code ec;
  uint64_t total = 0;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    total += entry.is_regular_file(ec) ? entry.file_size(ec) : 0;
  }
  if (total <= limit_bytes) return;
  for (const auto& entry : fs::directory_iterator(dir, ec)) fs::remove(entry.path(), ec);
}

// Compiles each job the service sends until the channel closes.
int ServeCompiles(int fd, const WorkerArgs& args, const NvrtcSettings& settings) {
  internal::CompileJobRequest request;
  while (process::ReadMessage(fd, &request, absl::InfiniteFuture()).ok()) {
    internal::CompileJobResponse response;
    // The service checked the options; checking again costs nothing and keeps
    // this process safe on its own.
    absl::StatusOr<std::vector<std::string>> options = CheckUserOptions(
        std::vector<std::string>(request.options().begin(), request.options().end()));
    absl::Status arch_ok = CheckArch(request.arch());
    absl::StatusOr<std::vector<std::string>> name_expressions =
        CheckNameExpressions(std::vector<std::string>(request.name_expressions().begin(),
                                                      request.name_expressions().end()));
    if (!options.ok() || !arch_ok.ok() || !name_expressions.ok()) {
      response.set_error(absl::StrCat(
          "compile worker refused a job: ",
          !options.ok()
              ? options.status().message()
              : (!arch_ok.ok() ? arch_ok.message() : name_expressions.status().message())));
    } else {
      absl::StatusOr<v1::CompileResult> result =
          CompileWithNvrtc(request.source(), *options, request.arch(), settings, *name_expressions);
      if (result.ok() && result->success() && request.host_build_probe()) {
        absl::StatusOr<v1::HostBuildProbe> probe =
            ProbeHostBuild(request.source(), *options, request.arch(), settings);
        if (probe.ok()) {
          *result->mutable_host_build_probe() = *std::move(probe);
        } else {
          result = probe.status();
        }
      }
      if (result.ok()) {
        *response.mutable_result() = *std::move(result);
      } else {
        response.set_error(std::string(result.status().message()));
      }
    }
    if (!process::WriteMessage(fd, response).ok()) return 1;
    if (!settings.pch_dir.empty()) TrimPchDir(settings.pch_dir, args.pch_limit_bytes);
  }
  return 0;
}

// Confines this worker (file-system view, then the seccomp profile);
// returns how, or why it could not be (the ready message's error).
absl::StatusOr<std::string> Confine(const ToolkitPaths& toolkit, const WorkerArgs& args) {
  // The operator's explicit choice for sources it trusts (its own test
  // kernels) on a machine where the sandbox cannot be built (gVisor: no
  // Landlock, and mount namespaces may not work): a submission could then
  // read any file the server can. Never the default; the ready message
  // says so and the service warns at start.
  const char* unsandboxed = std::getenv(kUnsandboxedCompileVariable);
  if (unsandboxed != nullptr && absl::string_view(unsandboxed) == "1") {
    return absl::StrCat(kUnsandboxedDescriptionPrefix, kUnsandboxedCompileVariable,
                        "=1: for trusted sources only)");
  }
  sandbox::FilesystemPolicy policy;
  policy.read_only = {toolkit.include_dir, toolkit.kerneleval_include_dir};
  if (!toolkit.cccl_include_dir.empty()) policy.read_only.push_back(toolkit.cccl_include_dir);
  if (!toolkit.library_dir.empty()) policy.read_only.push_back(toolkit.library_dir);
  policy.read_write = {args.scratch_dir};
  absl::StatusOr<sandbox::FilesystemMechanism> mechanism =
      sandbox::RestrictFilesystemUsing(policy, args.filesystem);
  if (!mechanism.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("file-system sandbox: ", mechanism.status().message()));
  }
  if (absl::Status s = sandbox::RestrictSyscalls(sandbox::SyscallProfile::kKernel); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("seccomp: ", s.message()));
  }
  return absl::StrCat(sandbox::MechanismName(*mechanism), " + seccomp");
}

int CompileWorkerMain(int fd, int argc, char** argv) {
  const WorkerArgs args = ParseArgs(argc, argv);
  if (args.scratch_dir.empty() || args.scratch_dir[0] != '/') {
    return Fail(fd, "compile worker needs --scratch-dir=<absolute path>");
  }
  absl::StatusOr<ToolkitPaths> toolkit = FindToolkit();
  if (!toolkit.ok()) return Fail(fd, std::string(toolkit.status().message()));

  NvrtcSettings settings{.toolkit = *toolkit, .pch_dir = ""};
  if (args.pch) {
    settings.pch_dir = args.scratch_dir + "/pch";
    std::error_code ec;
    fs::create_directories(settings.pch_dir, ec);
    if (ec) return Fail(fd, absl::StrCat("cannot create ", settings.pch_dir, ": ", ec.message()));
  }
  // NVRTC's front end writes (and unlinks) a temporary file in $TMPDIR.
  ::setenv("TMPDIR", args.scratch_dir.c_str(), 1);
  // NVRTC looks for a submission's quoted includes in the directory of its
  // source name ("kernel.cu": the current one) first: "/", where the
  // sandbox lets it read only the toolkit's headers (as the mount-namespace
  // sandbox's new root does). Not a directory inside the scratch dir, whose
  // PCH files `#include "../pch/..."` would then reach.
  if (::chdir("/") != 0) return Fail(fd, "cannot enter /");

  // Warm-up: loads libnvrtc-builtins and the toolkit's headers NVRTC reads
  // on every compile, while they are still reachable.
  {
    absl::StatusOr<v1::CompileResult> warm = CompileWithNvrtc(
        "__global__ void kerneleval_warm_up(float* x) { x[threadIdx.x] = 1.0f; }\n", {}, args.arch,
        NvrtcSettings{.toolkit = *toolkit, .pch_dir = ""});
    if (!warm.ok()) return Fail(fd, absl::StrCat("NVRTC does not run: ", warm.status().message()));
    if (!warm->success()) return Fail(fd, absl::StrCat("NVRTC warm-up failed: ", warm->log()));
  }

  absl::StatusOr<std::string> confined = Confine(*toolkit, args);
  if (!confined.ok()) return Fail(fd, std::string(confined.status().message()));
  internal::CompileWorkerReady ready;
  ready.set_ok(true);
  ready.set_sandbox(*confined);
  ready.set_toolkit_version(NvrtcVersionString());
  if (!process::WriteMessage(fd, ready).ok()) return 1;

  return ServeCompiles(fd, args, settings);
}

}  // namespace
}  // namespace kerneleval::compile

KERNELEVAL_WORKER_MODE("compile", kerneleval::compile::CompileWorkerMain);
