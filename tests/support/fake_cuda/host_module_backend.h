// HostModuleBackend: a Backend decorator for the CUDA backend running on the
// test driver (fake_cuda.cc). The engine compiles every program with NVRTC
// into a CUBIN, which the test driver cannot run; this decorator rebuilds each
// program from the source it carries (Program.source, Program.defines) with
// the CPU backend's HostCompiler and passes the shared object in the CUBIN's
// place, so the request then goes through the real CudaBackend, its worker
// process and the worker's code unchanged. Hook it in with
// EngineOptions::wrap_cuda_backend.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "evaluator/cpu/host_compiler.h"
#include "evaluator/engine/backend.h"
#include "evaluator/engine/engine.h"

namespace kerneleval::fake_cuda {

class HostModuleBackend : public Backend {
 public:
  // Each program's CUBIN becomes the host module, and its PTX, where the
  // engine sent one, text naming that module's file (the test driver loads
  // it as "PTX"): a CUBIN for another architecture, or none (compute_XX),
  // takes the worker's PTX JIT fallback only when the engine sent the PTX.
  // `as_ptx`: the CUBIN is replaced by one for another architecture
  // (sm_80), so the worker takes its PTX JIT fallback.
  HostModuleBackend(std::unique_ptr<Backend> inner, cpu::HostCompiler compiler, bool as_ptx = false)
      : inner_(std::move(inner)), compiler_(std::move(compiler)), as_ptx_(as_ptx) {}

  [[nodiscard]] std::string_view name() const override { return inner_->name(); }
  [[nodiscard]] v1::DeviceInfo device() const override { return inner_->device(); }
  [[nodiscard]] std::string target_arch() const override { return inner_->target_arch(); }
  [[nodiscard]] uint64_t worker_restarts() const override { return inner_->worker_restarts(); }

  // A program the host compiler rejects (a feature the CPU backend cannot
  // run) fails with stage "compile" and its log, as the CPU backend reports it.
  absl::StatusOr<internal::RunResult> Run(const internal::RunRequest& request) override;
  absl::StatusOr<internal::TimingResult> Time(const internal::TimingRequest& request) override;

 private:
  struct Rebuilt {
    bool ok = false;
    std::string log;  // why not
  };
  // Replaces program->compiled()'s CUBIN and PTX with the host module built
  // for the kernels `plan_kernels` names (see the constructor).
  absl::StatusOr<Rebuilt> Rebuild(internal::Program* program,
                                  const std::vector<std::string>& plan_kernels);

  std::unique_ptr<Backend> inner_;
  std::mutex mutex_;  // guards compiler_ and modules_
  cpu::HostCompiler compiler_;
  struct Module {
    std::string bytes;  // the shared object
    std::string path;   // where the host compiler keeps it
  };
  std::map<std::string, Module> modules_;  // by translation unit
  const bool as_ptx_;
};

// The wrapper EngineOptions::wrap_cuda_backend wants. Without a host compiler
// the backend is returned as it is (its CUBINs then fail to load, loudly).
std::unique_ptr<Backend> WrapForFakeDriver(std::unique_ptr<Backend> cuda, bool as_ptx = false);

// Points this process, and the CUDA workers it starts (they inherit the
// environment), at the test driver built with this library
// (KERNELEVAL_CUDA_DRIVER). Call before anything loads a driver.
void UseFakeDriver();
// UseFakeDriver(), and the engine made from `options` wraps each CUDA backend
// in a HostModuleBackend.
// `as_ptx`: see HostModuleBackend.
void UseFakeDriver(EngineOptions* options, bool as_ptx = false);

// The shared object HostCompiler builds from `source` with a launcher for
// each of `kernels`: the module image the test driver runs. The compile cache
// is the CPU tests' (the precompiled prelude is built once per build tree).
// `fuse_multiply_add` false: as nvcc or NVRTC with -fmad=false (the worker's
// own kernels, aux_kernels.cu, are built so).
absl::StatusOr<std::string> BuildHostModule(const std::string& source,
                                            const std::vector<std::string>& defines,
                                            const std::vector<std::string>& kernels,
                                            bool fuse_multiply_add = true);

}  // namespace kerneleval::fake_cuda
