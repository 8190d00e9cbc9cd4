// cpu_backend_bench: what the CPU backend costs on this machine.
//   1. host compile of the softmax reference: cold (no precompiled prelude),
//      with the precompiled prelude at -O1 and -O2, and a cache hit;
//   2. CpuBackend::Run of that kernel on a few shapes (one case each), and a
//      Time() of it against itself;
//   3. a Time() of a shared-memory histogram adding with atomicAdd against
//      its twin adding with a plain `+= 1` (racy on a GPU), in a grid-stride
//      loop: what a kernel telling the builds apart gains by racing only
//      where timed. The timed build's atomics on shared memory are plain
//      updates since session 34, and the loop's reload of gridDim after
//      each is a load since session 35, not a __tls_get_addr call
//      (evaluator/cpu/README.md). The ratio is printed (4 blocks: ~2.3x
//      before session 34, ~1.9x after, ~1.13x since session 35).
// Usage: cpu_backend_bench [threads]
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "evaluator/cpu/cpu_backend.h"
#include "evaluator/cpu/cpu_worker.h"
#include "evaluator/cpu/host_compiler.h"
#include "evaluator/cpu/source_rewrite.h"

namespace {

namespace fs = std::filesystem;
using namespace kerneleval;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string TempDir() {
  std::string pattern = (fs::temp_directory_path() / "cpu-bench-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) std::abort();
  return pattern;
}

// Appends a buffer to `plan`.
void AddBuffer(internal::ResolvedPlan* plan, const std::string& name, v1::DType dtype,
               uint64_t elements, internal::BufferRole role) {
  internal::BufferSpec* buffer = plan->add_buffers();
  buffer->set_name(name);
  buffer->set_dtype(dtype);
  buffer->set_elements(elements);
  buffer->set_role(role);
}

// Appends a launch of `kernel` on a 1-D grid to `plan`; its arguments are
// the caller's to add.
internal::ResolvedLaunch* AddLaunch(internal::ResolvedPlan* plan, const std::string& kernel,
                                    uint32_t blocks, uint32_t threads) {
  internal::ResolvedLaunch* launch = plan->add_launches();
  launch->set_kernel(kernel);
  launch->add_grid(blocks);
  launch->add_block(threads);
  return launch;
}

internal::Case SoftmaxCase(int rows, int cols) {
  internal::Case c;
  c.set_label(std::to_string(rows) + "x" + std::to_string(cols));
  c.set_input_seed(1);
  const auto elements = static_cast<uint64_t>(rows) * cols;
  AddBuffer(c.mutable_plan(), "x", v1::DTYPE_F32, elements, internal::BUFFER_ROLE_INPUT);
  AddBuffer(c.mutable_plan(), "y", v1::DTYPE_F32, elements, internal::BUFFER_ROLE_OUTPUT);
  internal::ResolvedLaunch* launch = AddLaunch(c.mutable_plan(), "softmax_kernel", rows, 256);
  launch->add_args()->set_buffer("x");
  launch->add_args()->set_buffer("y");
  launch->add_args()->set_scalar(rows);
  launch->add_args()->set_scalar(cols);
  return c;
}

// A histogram of n bytes into 256 bins: per-block bins in shared memory,
// each element added with `increment`, then added to the global counts.
std::string SharedHistogram(const std::string& increment) {
  return R"(
__global__ void zero(int* counts) { counts[threadIdx.x] = 0; }
__global__ void hist(const unsigned char* x, int* counts, long long n) {
  __shared__ int local[256];
  local[threadIdx.x] = 0;
  __syncthreads();
  for (long long i = blockIdx.x * 256ll + threadIdx.x; i < n; i += gridDim.x * 256ll) {
    )" + increment +
         R"(;
  }
  __syncthreads();
  if (local[threadIdx.x]) atomicAdd(&counts[threadIdx.x], local[threadIdx.x]);
}
)";
}

internal::ResolvedPlan HistogramPlan(int64_t n, uint32_t blocks) {
  internal::ResolvedPlan plan;
  AddBuffer(&plan, "x", v1::DTYPE_U8, static_cast<uint64_t>(n), internal::BUFFER_ROLE_INPUT);
  AddBuffer(&plan, "counts", v1::DTYPE_I32, 256, internal::BUFFER_ROLE_OUTPUT);
  AddLaunch(&plan, "zero", 1, 256)->add_args()->set_buffer("counts");
  internal::ResolvedLaunch* hist = AddLaunch(&plan, "hist", blocks, 256);
  hist->add_args()->set_buffer("x");
  hist->add_args()->set_buffer("counts");
  hist->add_args()->set_scalar(n);
  return plan;
}

// The median of `values` (0 for none).
double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0 : values[values.size() / 2];
}

// The median of a timed program's samples [us].
double MedianUs(const internal::ProgramTiming& timing) {
  return Median({timing.samples_us().begin(), timing.samples_us().end()});
}

// The median CPU time [us] the runner spent preparing a run (its stack
// fill), which is not in the samples.
double MedianPreparationUs(const internal::ProgramTiming& timing) {
  return Median({timing.preparation_us().begin(), timing.preparation_us().end()});
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned threads = argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 0;
  std::ifstream in(KERNELEVAL_CPU_BENCH_SOFTMAX);
  const std::string source((std::istreambuf_iterator<char>(in)), {});

  std::printf("== host compile of problems/softmax/reference.cu\n");
  for (const char* level : {"-O1", "-O2"}) {
    const std::string dir = TempDir();
    cpu::HostCompilerOptions options;
    options.prelude_dir = cpu::DefaultPreludeDir();
    options.cuda_include_dir = cpu::DefaultCudaIncludeDir();
    options.cache_dir = dir;
    options.optimization = level;
    for (bool pch : {false, true}) {
      options.precompiled_prelude = pch;
      auto compiler = cpu::HostCompiler::Create(options);
      if (!compiler.ok()) {
        std::printf("%s\n", compiler.status().ToString().c_str());
        return 1;
      }
      auto start = std::chrono::steady_clock::now();
      auto unit = cpu::BuildTranslationUnit(source + "\n// first\n", {}, {"softmax_kernel"});
      auto first = compiler->Compile(*unit);
      const double first_seconds = Seconds(start);
      start = std::chrono::steady_clock::now();
      unit = cpu::BuildTranslationUnit(source + "\n// second\n", {}, {"softmax_kernel"});
      auto second = compiler->Compile(*unit);
      const double second_seconds = Seconds(start);
      start = std::chrono::steady_clock::now();
      auto hit = compiler->Compile(*unit);
      const double hit_seconds = Seconds(start);
      if (!first.ok() || !first->success || !second.ok() || !hit.ok() || !hit->cache_hit) {
        std::printf("compile failed\n");
        return 1;
      }
      std::printf(
          "%s %-22s first %.2f s (incl. building the .gch when used), next %.2f s, "
          "cache hit %.4f s\n",
          level, pch ? "precompiled prelude" : "no precompiled prelude", first_seconds,
          second_seconds, hit_seconds);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

  const std::string dir = TempDir();
  cpu::CpuBackendOptions options;
  options.cache_dir = dir;
  options.threads = threads;
  options.timeout_seconds = 120;
  auto start = std::chrono::steady_clock::now();
  auto backend = cpu::CpuBackend::Create(options);
  if (!backend.ok()) {
    std::printf("%s\n", backend.status().ToString().c_str());
    return 1;
  }
  std::printf("\n== CpuBackend (%s)\nCreate with warm-up: %.2f s\n",
              (*backend)->device().name().c_str(), Seconds(start));
  for (auto [rows, cols] : {std::pair{64, 1024}, {256, 4096}, {1024, 4096}}) {
    internal::RunRequest request;
    request.mutable_program()->set_label("reference");
    request.mutable_program()->set_source(source);
    *request.add_cases() = SoftmaxCase(rows, cols);
    for (int repeat = 0; repeat < 2; ++repeat) {
      start = std::chrono::steady_clock::now();
      auto result = (*backend)->Run(request);
      if (!result.ok() || result->has_failure()) {
        std::printf("run failed: %s\n", result.ok() ? result->failure().message().c_str()
                                                    : result.status().ToString().c_str());
        return 1;
      }
      std::printf("Run %5dx%-5d %s: %.3f s (compile or cache, runner, inputs, kernel, outputs)\n",
                  rows, cols, repeat == 0 ? "first " : "cached", Seconds(start));
    }
  }
  internal::TimingRequest timing;
  for (const char* label : {"reference", "candidate"}) {
    auto* program = timing.add_programs();
    program->mutable_program()->set_label(label);
    program->mutable_program()->set_source(source);
    *program->mutable_plan() = SoftmaxCase(256, 4096).plan();
  }
  timing.add_input_seeds(1);
  timing.add_input_seeds(2);
  timing.mutable_config()->set_warmup_runs(1);
  timing.mutable_config()->set_min_samples(10);
  timing.mutable_config()->set_min_seconds(0.5);
  timing.mutable_config()->set_max_seconds(5);
  timing.mutable_config()->set_target_rel_stderr(0.02);
  timing.mutable_config()->set_input_sets(2);
  start = std::chrono::steady_clock::now();
  auto timed = (*backend)->Time(timing);
  if (!timed.ok() || timed->has_failure()) {
    std::printf("time failed\n");
    return 1;
  }
  for (int p = 0; p < timed->programs_size(); ++p) {
    const internal::ProgramTiming& program = timed->programs(p);
    std::printf(
        "Time 256x4096 %-9s: %d samples, median %.0f us, min %.0f us (of which the runner's "
        "preparation: median %.0f us)\n",
        timing.programs(p).program().label().c_str(), program.samples_us_size(), MedianUs(program),
        *std::min_element(program.samples_us().begin(), program.samples_us().end()),
        MedianPreparationUs(program));
  }
  std::printf("Time call: %.2f s, converged %d\n", Seconds(start), timed->converged());

  std::printf("\n== shared-memory atomics in the timed build (histogram of 262144 bytes)\n");
  for (uint32_t blocks : {64u, 4u}) {
    internal::TimingRequest histograms;
    const std::pair<const char*, std::string> variants[] = {
        {"atomicAdd", SharedHistogram("atomicAdd(&local[x[i]], 1)")},
        {"plain +=", SharedHistogram("local[x[i]] = local[x[i]] + 1")}};
    for (const auto& [label, kernel] : variants) {
      auto* program = histograms.add_programs();
      program->mutable_program()->set_label(label);
      program->mutable_program()->set_source(kernel);
      *program->mutable_plan() = HistogramPlan(262144, blocks);
    }
    histograms.add_input_seeds(1);
    histograms.add_input_seeds(2);
    *histograms.mutable_config() = timing.config();
    timed = (*backend)->Time(histograms);
    if (!timed.ok() || timed->has_failure()) {
      std::printf("time failed: %s\n", timed.ok() ? timed->failure().message().c_str()
                                                  : timed.status().ToString().c_str());
      return 1;
    }
    const double atomic_us = MedianUs(timed->programs(0));
    const double plain_us = MedianUs(timed->programs(1));
    std::printf(
        "%2u blocks: atomicAdd median %.0f us, plain += median %.0f us, ratio %.2f (of which the "
        "runner's preparation: medians %.0f / %.0f us)\n",
        blocks, atomic_us, plain_us, plain_us > 0 ? atomic_us / plain_us : 0.0,
        MedianPreparationUs(timed->programs(0)), MedianPreparationUs(timed->programs(1)));
  }
  backend->reset();
  std::error_code ec;
  fs::remove_all(dir, ec);
  return 0;
}
