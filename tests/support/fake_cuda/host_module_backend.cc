#include "tests/support/fake_cuda/host_module_backend.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "evaluator/compile/kernel_info.h"
#include "evaluator/cpu/cpu_worker.h"
#include "evaluator/cpu/source_rewrite.h"

namespace kerneleval::fake_cuda {
namespace {

std::vector<std::string> KernelsOf(const internal::ResolvedPlan& plan,
                                   std::vector<std::string> names = {}) {
  for (const internal::ResolvedLaunch& launch : plan.launches()) {
    if (std::find(names.begin(), names.end(), launch.kernel()) == names.end()) {
      names.push_back(launch.kernel());
    }
  }
  return names;
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

internal::RunFailure CompileFailure(const internal::Program& program, const std::string& log) {
  internal::RunFailure failure;
  failure.set_stage("compile");
  failure.set_program(program.label());
  failure.set_message(absl::StrCat("host compile for the test driver failed: ", log));
  return failure;
}

}  // namespace

absl::StatusOr<HostModuleBackend::Rebuilt> HostModuleBackend::Rebuild(
    internal::Program* program, const std::vector<std::string>& plan_kernels) {
  std::vector<std::string> defines(program->defines().begin(), program->defines().end());
  const int cuda_arch = cpu::CudaArchValue(program->compiled().arch());
  absl::StatusOr<std::string> unit = cpu::BuildTranslationUnit(
      program->source(), defines, plan_kernels, cuda_arch > 0 ? cuda_arch : 900);
  if (!unit.ok()) return Rebuilt{false, std::string(unit.status().message())};
  if (!cpu::NvrtcFusesMultiplyAdd(program->compiled().options())) {
    if (absl::Status fused = cpu::FuseNoMultiplyAdd(&*unit); !fused.ok()) return fused;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto cached = modules_.find(*unit);
  if (cached == modules_.end()) {
    absl::StatusOr<cpu::HostCompileResult> compiled = compiler_.Compile(*unit);
    if (!compiled.ok()) return compiled.status();
    if (!compiled->success) return Rebuilt{false, compiled->log};
    Module module{ReadFile(compiled->library_path), compiled->library_path};
    cached = modules_.emplace(*std::move(unit), std::move(module)).first;
  }
  v1::CompileResult* compiled = program->mutable_compiled();
  // The constants of NVRTC's prelude have storage in a CUBIN; the CPU
  // prelude's have none in the host module.
  std::vector<std::string> globals;
  for (const std::string& name : compiled->device_globals()) {
    if (!compile::IsPreludeGlobal(name)) globals.push_back(name);
  }
  compiled->mutable_device_globals()->Assign(globals.begin(), globals.end());
  // Each artefact the engine sent is replaced by its host equivalent: the
  // CUBIN by the shared object, the PTX (for the worker's JIT fallback) by
  // text naming that file. What the engine did not send stays absent, so a
  // fallback the engine never makes possible (no PTX) fails here as on a GPU.
  if (as_ptx_) {
    compiled->set_arch("sm_80");
    compiled->set_cubin("a CUBIN for sm_80");
  } else if (!compiled->cubin().empty()) {
    compiled->set_cubin(cached->second.bytes);
  }
  if (!compiled->ptx().empty()) {
    compiled->set_ptx("// kerneleval fake CUDA host module: " + cached->second.path);
  }
  return Rebuilt{true, ""};
}

absl::StatusOr<internal::RunResult> HostModuleBackend::Run(const internal::RunRequest& request) {
  internal::RunRequest rebuilt = request;
  std::vector<std::string> kernels;
  for (const internal::Case& test_case : request.cases()) {
    kernels = KernelsOf(test_case.plan(), std::move(kernels));
  }
  absl::StatusOr<Rebuilt> done = Rebuild(rebuilt.mutable_program(), kernels);
  if (!done.ok()) return done.status();
  if (!done->ok) {
    internal::RunResult result;
    *result.mutable_failure() = CompileFailure(request.program(), done->log);
    return result;
  }
  return inner_->Run(rebuilt);
}

absl::StatusOr<internal::TimingResult> HostModuleBackend::Time(
    const internal::TimingRequest& request) {
  internal::TimingRequest rebuilt = request;
  for (internal::TimedProgram& timed : *rebuilt.mutable_programs()) {
    absl::StatusOr<Rebuilt> done = Rebuild(timed.mutable_program(), KernelsOf(timed.plan()));
    if (!done.ok()) return done.status();
    if (!done->ok) {
      internal::TimingResult result;
      *result.mutable_failure() = CompileFailure(timed.program(), done->log);
      return result;
    }
  }
  return inner_->Time(rebuilt);
}

namespace {

absl::StatusOr<cpu::HostCompiler> MakeHostCompiler() {
  cpu::HostCompilerOptions options;
  options.prelude_dir = cpu::DefaultPreludeDir();
  options.cuda_include_dir = cpu::DefaultCudaIncludeDir();
  options.cache_dir = KERNELEVAL_FAKE_CUDA_CACHE_DIR;
  return cpu::HostCompiler::Create(std::move(options));
}

}  // namespace

std::unique_ptr<Backend> WrapForFakeDriver(std::unique_ptr<Backend> cuda, bool as_ptx) {
  absl::StatusOr<cpu::HostCompiler> compiler = MakeHostCompiler();
  if (!compiler.ok()) {
    std::fprintf(stderr, "fake CUDA driver: no host compiler: %s\n",
                 std::string(compiler.status().message()).c_str());
    return cuda;
  }
  return std::make_unique<HostModuleBackend>(std::move(cuda), *std::move(compiler), as_ptx);
}

void UseFakeDriver() { ::setenv("KERNELEVAL_CUDA_DRIVER", KERNELEVAL_FAKE_CUDA_DRIVER, 1); }

void UseFakeDriver(EngineOptions* options, bool as_ptx) {
  UseFakeDriver();
  options->wrap_cuda_backend = [as_ptx](std::unique_ptr<Backend> cuda) {
    return WrapForFakeDriver(std::move(cuda), as_ptx);
  };
}

absl::StatusOr<std::string> BuildHostModule(const std::string& source,
                                            const std::vector<std::string>& defines,
                                            const std::vector<std::string>& kernels,
                                            bool fuse_multiply_add) {
  absl::StatusOr<cpu::HostCompiler> compiler = MakeHostCompiler();
  if (!compiler.ok()) return compiler.status();
  absl::StatusOr<std::string> unit = cpu::BuildTranslationUnit(source, defines, kernels, 900);
  if (!unit.ok()) return unit.status();
  if (!fuse_multiply_add) {
    if (absl::Status fused = cpu::FuseNoMultiplyAdd(&*unit); !fused.ok()) return fused;
  }
  absl::StatusOr<cpu::HostCompileResult> compiled = compiler->Compile(*unit);
  if (!compiled.ok()) return compiled.status();
  if (!compiled->success) return absl::InvalidArgumentError(compiled->log);
  return ReadFile(compiled->library_path);
}

}  // namespace kerneleval::fake_cuda
