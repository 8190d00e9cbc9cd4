// kerneleval_cuda_timing_probe [--device N] [--calibrate] [--json FILE]
//     [--copy-mib M] [--check-mib M] [--gemm-n N] [--max-seconds S]
// Times two kernels through CudaBackend exactly as evaluations are timed (a
// worker process, L2 flush, stream hold, events, stopping rule) and writes
// what it measured, with the kernels' source and launch, as JSON for
// scripts/torch_crosscheck.py (rewritten after each case: a crash keeps what
// was measured). Then a small copy (--check-mib) is timed again with its
// outputs sent back, to check that each is a round's input as the host
// generates it (the GPU generates them). Exit status: 0 measured and
// checked, 1 error, 2 usage, 3 no CUDA device.
#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/cuda/copy_check.h"
#include "evaluator/cuda/cuda_backend.h"
#include "evaluator/timing/sampling.h"

namespace {

using kerneleval::internal::BufferSpec;
using kerneleval::internal::ResolvedPlan;

// One seed per input set (two sets, as evaluations time).
constexpr uint64_t kInputSeeds[] = {1, 2};

constexpr char kSource[] = R"(
// One float4 per thread: bytes moved = 2 * 16 * n4 (read + write).
extern "C" __global__ void copy_f32x4(const float4* __restrict__ in, float4* __restrict__ out,
                                      long long n4) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n4) out[i] = in[i];
}
// Shared-memory tiled SGEMM, C = A * B, N x N row-major, N a multiple of 16:
// flops = 2 * N^3.
extern "C" __global__ void sgemm_tiled16(const float* __restrict__ a, const float* __restrict__ b,
                                         float* __restrict__ c, int n) {
  __shared__ float ta[16][16];
  __shared__ float tb[16][16];
  int row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  float sum = 0.0f;
  for (int k0 = 0; k0 < n; k0 += 16) {
    ta[threadIdx.y][threadIdx.x] = a[row * n + k0 + threadIdx.x];
    tb[threadIdx.y][threadIdx.x] = b[(k0 + threadIdx.y) * n + col];
    __syncthreads();
    for (int k = 0; k < 16; ++k) sum += ta[threadIdx.y][k] * tb[k][threadIdx.x];
    __syncthreads();
  }
  c[row * n + col] = sum;
}
)";

std::string CompileCubin(const std::string& arch, std::string* error) {
  nvrtcProgram program = nullptr;
  if (nvrtcCreateProgram(&program, kSource, "probe.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    *error = "nvrtcCreateProgram failed";
    return "";
  }
  const std::string option = "--gpu-architecture=" + arch;
  const char* options[] = {option.c_str()};
  std::string cubin;
  if (nvrtcCompileProgram(program, 1, options) != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    error->resize(size);
    nvrtcGetProgramLog(program, error->data());
  } else {
    size_t size = 0;
    nvrtcGetCUBINSize(program, &size);
    cubin.resize(size);
    nvrtcGetCUBIN(program, cubin.data());
  }
  nvrtcDestroyProgram(&program);
  return cubin;
}

struct Case {
  std::string name;
  std::string kernel;
  ResolvedPlan plan;
  double bytes = 0;  // fewest bytes the kernel must move [bytes]
  double flops = 0;
  nlohmann::json launch;  // for the cross-check: grid, block, args
};

BufferSpec* AddBuffer(ResolvedPlan* plan, const std::string& name, uint64_t elements,
                      kerneleval::internal::BufferRole role) {
  BufferSpec* spec = plan->add_buffers();
  spec->set_name(name);
  spec->set_dtype(kerneleval::v1::DTYPE_F32);
  spec->set_elements(elements);
  spec->set_role(role);
  return spec;
}

void AddLaunch(Case* c, std::vector<uint32_t> grid, std::vector<uint32_t> block,
               std::vector<std::string> buffers, int64_t scalar, uint32_t scalar_bytes) {
  auto* launch = c->plan.add_launches();
  launch->set_kernel(c->kernel);
  launch->set_symbol(c->kernel);
  for (uint32_t g : grid) launch->add_grid(g);
  for (uint32_t b : block) launch->add_block(b);
  nlohmann::json args = nlohmann::json::array();
  for (const std::string& name : buffers) {
    auto* arg = launch->add_args();
    arg->set_buffer(name);
    arg->set_size_bytes(8);
    args.push_back({{"buffer", name}});
  }
  auto* arg = launch->add_args();
  arg->set_scalar(scalar);
  arg->set_size_bytes(scalar_bytes);
  arg->set_is_signed(true);
  args.push_back({{"int", scalar}, {"bytes", scalar_bytes}});
  c->launch = {{"grid", grid}, {"block", block}, {"args", args}};
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  bool calibrate = false;
  std::string json_path;
  uint64_t copy_mib = 256;
  // The checked copy's size: ~2 sets x 5 runs of it come back (the worker
  // refuses more than 1 GiB of returned outputs).
  uint64_t check_mib = 4;
  int gemm_n = 2048;
  double max_seconds = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--device") {
      device = std::atoi(next().c_str());
    } else if (arg == "--calibrate") {
      calibrate = true;
    } else if (arg == "--json") {
      json_path = next();
    } else if (arg == "--copy-mib") {
      copy_mib = std::strtoull(next().c_str(), nullptr, 10);
    } else if (arg == "--check-mib") {
      check_mib = std::strtoull(next().c_str(), nullptr, 10);
    } else if (arg == "--gemm-n") {
      gemm_n = std::atoi(next().c_str()) / 16 * 16;
    } else if (arg == "--max-seconds") {
      max_seconds = std::atof(next().c_str());
    } else {
      std::fprintf(stderr,
                   "usage: %s [--device N] [--calibrate] [--json FILE] [--copy-mib M] "
                   "[--check-mib M] [--gemm-n N] [--max-seconds S]\n",
                   argv[0]);
      return 2;
    }
  }

  kerneleval::cuda::CudaBackendOptions options;
  options.calibrate = calibrate;
  auto backend = kerneleval::cuda::CudaBackend::Create(device, options);
  if (!backend.ok()) {
    std::fprintf(stderr, "no CUDA device: %s\n", backend.status().ToString().c_str());
    return backend.status().code() == absl::StatusCode::kFailedPrecondition ? 3 : 1;
  }
  const kerneleval::v1::DeviceInfo info = (*backend)->device();
  std::string error;
  const std::string cubin = CompileCubin((*backend)->target_arch(), &error);
  if (cubin.empty()) {
    std::fprintf(stderr, "NVRTC: %s\n", error.c_str());
    return 1;
  }

  auto copy_case = [](uint64_t mib) {
    Case c;
    c.name = "copy";
    c.kernel = "copy_f32x4";
    const uint64_t n = mib * (uint64_t{1} << 20) / 4;
    AddBuffer(&c.plan, "in", n, kerneleval::internal::BUFFER_ROLE_INPUT);
    AddBuffer(&c.plan, "out", n, kerneleval::internal::BUFFER_ROLE_OUTPUT);
    const uint64_t n4 = n / 4;
    AddLaunch(&c, {static_cast<uint32_t>((n4 + 255) / 256)}, {256}, {"in", "out"},
              static_cast<int64_t>(n4), 8);
    c.bytes = 2.0 * 4 * n;
    return c;
  };
  std::vector<Case> cases;
  cases.push_back(copy_case(copy_mib));
  {
    Case c;
    c.name = "sgemm";
    c.kernel = "sgemm_tiled16";
    const uint64_t n = static_cast<uint64_t>(gemm_n);
    AddBuffer(&c.plan, "a", n * n, kerneleval::internal::BUFFER_ROLE_INPUT);
    AddBuffer(&c.plan, "b", n * n, kerneleval::internal::BUFFER_ROLE_INPUT);
    AddBuffer(&c.plan, "c", n * n, kerneleval::internal::BUFFER_ROLE_OUTPUT);
    AddLaunch(&c, {static_cast<uint32_t>(n / 16), static_cast<uint32_t>(n / 16)}, {16, 16},
              {"a", "b", "c"}, gemm_n, 4);
    c.bytes = 3.0 * 4 * n * n;
    c.flops = 2.0 * n * n * n;
    cases.push_back(std::move(c));
  }

  nlohmann::json out;
  out["device"] = {
      {"name", info.name()},
      {"arch", (*backend)->target_arch()},
      {"sm_count", info.sm_count()},
      {"l2_bytes", info.l2_bytes()},
      {"sm_clock_mhz", info.sm_clock_mhz()},
      {"roofline_known", info.roofline_known()},
      {"peak_bandwidth_bytes_per_second", info.peaks().memory_bandwidth_bytes_per_second()},
      {"measured_bandwidth_bytes_per_second", info.measured_bandwidth_bytes_per_second()},
      {"measured_fp32_flops_per_second", info.measured_fp32_flops_per_second()}};
  out["source"] = kSource;
  out["cases"] = nlohmann::json::array();
  // Rewritten after each case: a crash or a kill keeps what was measured.
  auto write_json = [&] {
    if (json_path.empty()) return;
    const std::string partial = json_path + ".partial";
    {
      std::ofstream file(partial);
      file << out.dump(2) << "\n";
    }
    std::rename(partial.c_str(), json_path.c_str());
  };
  write_json();
  // One timing of `c` through the backend, exactly as an evaluation's.
  auto time_case = [&](const Case& c, double seconds, bool return_outputs) {
    kerneleval::internal::TimingRequest request;
    auto* timed = request.add_programs();
    timed->mutable_program()->set_label(c.name);
    timed->mutable_program()->mutable_compiled()->set_arch((*backend)->target_arch());
    timed->mutable_program()->mutable_compiled()->set_cubin(cubin);
    *timed->mutable_plan() = c.plan;
    for (const uint64_t seed : kInputSeeds) request.add_input_seeds(seed);
    *request.mutable_config() = kerneleval::timing::DefaultTimingConfig();
    request.mutable_config()->set_max_seconds(seconds);
    request.mutable_config()->set_input_sets(static_cast<uint32_t>(std::size(kInputSeeds)));
    request.set_return_outputs(return_outputs);
    return (*backend)->Time(request);
  };
  int failures = 0;
  std::printf("%-8s %12s %10s %8s %10s %12s %s\n", "case", "median[us]", "min[us]", "samples",
              "rel.err", "achieved", "converged");
  for (Case& c : cases) {
    // Not the outputs: 256 MiB x ~10 copies would exceed what the worker
    // sends back (the check below times a small copy for them).
    auto result = time_case(c, max_seconds, /*return_outputs=*/false);
    nlohmann::json entry = {{"name", c.name},     {"kernel", c.kernel},
                            {"launch", c.launch}, {"bytes", c.bytes},
                            {"flops", c.flops},   {"buffers", nlohmann::json::array()}};
    for (const BufferSpec& spec : c.plan.buffers()) {
      entry["buffers"].push_back(
          {{"name", spec.name()},
           {"dtype", "f32"},
           {"elements", spec.elements()},
           {"role", spec.role() == kerneleval::internal::BUFFER_ROLE_INPUT ? "input" : "output"}});
    }
    if (!result.ok() || result->has_failure()) {
      const std::string why =
          !result.ok() ? result.status().ToString() : result->failure().message();
      std::printf("%-8s FAILED: %s\n", c.name.c_str(), why.c_str());
      entry["error"] = why;
      ++failures;
      out["cases"].push_back(entry);
      write_json();
      continue;
    }
    const auto& samples = result->programs(0).samples_us();
    const kerneleval::timing::SampleStats stats =
        kerneleval::timing::Summarize(std::span<const double>(samples.data(), samples.size()));
    const double seconds = stats.median * 1e-6;
    const double achieved = c.flops > 0 ? c.flops / seconds : c.bytes / seconds;
    std::printf("%-8s %12.2f %10.2f %8u %10.5f %9.1f %s %s\n", c.name.c_str(), stats.median,
                stats.min, stats.samples, stats.rel_stderr_median,
                c.flops > 0 ? achieved * 1e-12 : achieved * 1e-9, c.flops > 0 ? "TF/s" : "GB/s",
                result->converged() ? "yes" : "no");
    entry["kerneleval"] = {
        {"median_us", stats.median},
        {"min_us", stats.min},
        {"mean_us", stats.mean},
        {"stdev_us", stats.stdev},
        {"samples", stats.samples},
        {"rel_stderr_median", stats.rel_stderr_median},
        {"converged", result->converged()},
        {"throttled", result->throttled()},
        {"sm_clock_mhz", result->sm_clock_mhz()},
        {"sm_clock_min_mhz", result->sm_clock_min_mhz()},
        {"notes", std::vector<std::string>(result->notes().begin(), result->notes().end())}};
    out["cases"].push_back(entry);
    write_json();
  }
  // The copy's output must equal its input (a sanity check of the path),
  // on a small copy whose outputs the worker sends back.
  {
    const Case c = copy_case(check_mib);
    auto result = time_case(c, std::min(max_seconds, 1.0), /*return_outputs=*/true);
    nlohmann::json check = {{"mib", check_mib}};
    if (!result.ok() || result->has_failure()) {
      const std::string why =
          !result.ok() ? result.status().ToString() : result->failure().message();
      std::printf("copy check FAILED: %s\n", why.c_str());
      check["verdict"] = "error";
      check["detail"] = why;
      ++failures;
    } else {
      const kerneleval::bench::CopyCheck verdict =
          kerneleval::bench::CheckCopyOutputs(result->programs(0), c.plan.buffers(0), kInputSeeds);
      std::printf("copy check (%llu MiB): %s: %s\n", static_cast<unsigned long long>(check_mib),
                  kerneleval::bench::VerdictName(verdict.verdict), verdict.detail.c_str());
      check["verdict"] = kerneleval::bench::VerdictName(verdict.verdict);
      check["detail"] = verdict.detail;
      // Not returned although asked for: the worker's bug, a failure too.
      if (verdict.verdict != kerneleval::bench::CopyCheck::kSame) ++failures;
    }
    out["copy_check"] = check;
    write_json();
  }
  if (calibrate) {
    std::printf("calibration: copy %.1f GB/s, fp32 %.1f TFLOP/s\n",
                info.measured_bandwidth_bytes_per_second() * 1e-9,
                info.measured_fp32_flops_per_second() * 1e-12);
  }
  return failures == 0 ? 0 : 1;
}
