// bench_compile: compile times of a fixed kernel set, side by side in one run:
//   nvcc -cubin            (the toolchain KernelBench-style evaluators use)
//   kerneleval cold        (CompileService, result cache off, no PCH)
//   kerneleval header-PCH  (result cache off, NVRTC automatic PCH warmed)
//   kerneleval cached      (an in-process cache hit)
// Medians and spread (min..max) over --repeat compiles each, and the ratios.
// Targets (issue "Compile service"): simple kernels >= 8x faster than nvcc;
// a cache hit < 1 ms; the CUB kernel with the header cache < 250 ms.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "evaluator/compile/compile_service.h"

extern char** environ;

namespace kerneleval::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Kernel {
  const char* name;
  bool simple;  // counts toward the ">= 8x faster than nvcc" target
  const char* source;
};

const Kernel kKernels[] = {
    {"elementwise", true,
     R"(__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}
)"},
    {"softmax (smem+shfl)", true,
     R"(__device__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
  return v;
}
__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffff, v, o);
  return v;
}
__global__ void softmax(const float* in, float* out, int cols) {
  __shared__ float partial[32];
  const float* row = in + (size_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
  m = warp_max(m);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = m;
  __syncthreads();
  m = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : -INFINITY;
  m = warp_max(m);
  __syncthreads();
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += __expf(row[c] - m);
  s = warp_sum(s);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  s = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
  s = warp_sum(s);
  for (int c = threadIdx.x; c < cols; c += blockDim.x)
    out[(size_t)blockIdx.x * cols + c] = __expf(row[c] - m) / s;
}
)"},
    {"fp16/bf16", true,
     R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
__global__ void mixed(const __half2* a, const __nv_bfloat162* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __half2 h = __hmul2(a[i], a[i]);
    float2 f = __bfloat1622float2(b[i]);
    out[i] = __low2float(h) + __high2float(h) + f.x * f.y;
  }
}
)"},
    {"CUB block reduce", false,
     R"(#include <cub/block/block_reduce.cuh>
__global__ void reduce(const float* in, float* out, int n) {
  using BlockReduce = cub::BlockReduce<float, 256>;
  __shared__ typename BlockReduce::TempStorage storage;
  int i = blockIdx.x * 256 + threadIdx.x;
  float sum = BlockReduce(storage).Sum(i < n ? in[i] : 0.f);
  if (threadIdx.x == 0) atomicAdd(out, sum);
}
)"},
};

struct Stats {
  double median = 0, min = 0, max = 0;  // [s]
};

Stats Summarize(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  Stats s;
  if (seconds.empty()) return s;
  const size_t n = seconds.size();
  s.median = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
  s.min = seconds.front();
  s.max = seconds.back();
  return s;
}

std::string Ms(const Stats& s) {
  if (s.median == 0) return "-";
  if (s.median < 1e-3) {
    return absl::StrFormat("%.1f us (%.0f..%.0f)", s.median * 1e6, s.min * 1e6, s.max * 1e6);
  }
  return absl::StrFormat("%.1f ms (%.0f..%.0f)", s.median * 1e3, s.min * 1e3, s.max * 1e3);
}

// nvcc -cubin, timed as a whole process (what an evaluator that shells out pays).
double TimeNvcc(const std::string& nvcc, const std::string& source_path,
                const std::string& cubin_path, const std::string& arch) {
  std::vector<std::string> args = {nvcc, "-cubin", "-arch=" + arch, "-o", cubin_path, source_path};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto start = Clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, nvcc.c_str(), nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? seconds : -1;
}

std::unique_ptr<compile::CompileService> MakeService(bool cache, bool pch,
                                                     const std::string& arch) {
  compile::CompileServiceOptions options;
  options.workers = 1;  // one worker: every compile sees the same PCH directory
  options.cache = cache;
  options.precompiled_headers = pch;
  options.default_arch = arch;
  absl::StatusOr<std::unique_ptr<compile::CompileService>> service =
      compile::CompileService::Create(options);
  if (!service.ok()) {
    std::fprintf(stderr, "bench_compile: %s\n", service.status().ToString().c_str());
    std::exit(2);
  }
  return *std::move(service);
}

double TimeCompile(compile::CompileService& service, const std::string& source) {
  compile::CompileJob job;
  job.source = source;
  job.want_cubin = true;
  const auto start = Clock::now();
  absl::StatusOr<v1::CompileResult> result = service.Compile(job);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!result.ok() || !result->success()) {
    std::fprintf(stderr, "bench_compile: compile failed: %s\n",
                 result.ok() ? result->log().c_str() : result.status().ToString().c_str());
    std::exit(1);
  }
  return seconds;
}

int Main(int argc, char** argv) {
  int repeat = 7;
  std::string arch = "sm_90";
  std::string nvcc = KERNELEVAL_NVCC;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--repeat=", 0) == 0) repeat = std::max(1, std::atoi(arg.c_str() + 9));
    if (arg.rfind("--arch=", 0) == 0) arch = arg.substr(7);
    if (arg.rfind("--nvcc=", 0) == 0) nvcc = arg.substr(7);
    if (arg == "--help" || arg == "-h") {
      std::printf("usage: bench_compile [--repeat=N] [--arch=sm_90] [--nvcc=PATH]\n");
      return 0;
    }
  }
  char dir_pattern[] = "/tmp/kerneleval-bench-compile-XXXXXX";
  if (!mkdtemp(dir_pattern)) return 2;
  const std::string dir = dir_pattern;

  auto cold = MakeService(/*cache=*/false, /*pch=*/false, arch);
  auto pch = MakeService(/*cache=*/false, /*pch=*/true, arch);
  auto cached = MakeService(/*cache=*/true, /*pch=*/true, arch);
  std::printf("bench_compile: %d compiles per cell, arch %s, NVRTC %s, sandbox %s, nvcc %s\n\n",
              repeat, arch.c_str(), cold->toolkit_version().c_str(),
              cold->sandbox_description().c_str(), nvcc.c_str());
  std::printf("%-20s | %-24s | %-24s | %-24s | %-22s | %8s | %8s\n", "kernel", "nvcc -cubin",
              "kerneleval cold", "kerneleval header-PCH", "kerneleval cached", "nvcc/cold",
              "nvcc/PCH");
  std::printf("%s\n", std::string(150, '-').c_str());

  bool simple_ok = true, hit_ok = true, cub_ok = true;
  for (const Kernel& kernel : kKernels) {
    const std::string path = dir + "/kernel.cu";
    std::ofstream(path) << kernel.source;
    std::vector<double> t_nvcc, t_cold, t_pch, t_hit;
    for (int r = 0; r < repeat; ++r) {
      const double s = TimeNvcc(nvcc, path, dir + "/kernel.cubin", arch);
      if (s < 0) {
        std::fprintf(stderr, "bench_compile: nvcc failed on %s\n", kernel.name);
        break;
      }
      t_nvcc.push_back(s);
    }
    for (int r = 0; r < repeat; ++r) t_cold.push_back(TimeCompile(*cold, kernel.source));
    TimeCompile(*pch, kernel.source);  // creates the PCH
    for (int r = 0; r < repeat; ++r) t_pch.push_back(TimeCompile(*pch, kernel.source));
    TimeCompile(*cached, kernel.source);  // fills the cache
    for (int r = 0; r < std::max(repeat, 100); ++r)
      t_hit.push_back(TimeCompile(*cached, kernel.source));

    const Stats nv = Summarize(t_nvcc), co = Summarize(t_cold), pc = Summarize(t_pch),
                hi = Summarize(t_hit);
    std::printf("%-20s | %-24s | %-24s | %-24s | %-22s | %7.1fx | %7.1fx\n", kernel.name,
                Ms(nv).c_str(), Ms(co).c_str(), Ms(pc).c_str(), Ms(hi).c_str(),
                nv.median > 0 ? nv.median / co.median : 0.0,
                nv.median > 0 ? nv.median / pc.median : 0.0);
    if (kernel.simple && nv.median > 0 && nv.median / co.median < 8) simple_ok = false;
    if (hi.median >= 1e-3) hit_ok = false;
    if (!kernel.simple && pc.median >= 0.250) cub_ok = false;
  }
  std::printf(
      "\ntargets: simple kernels >= 8x faster than nvcc (cold): %s; cache hit < 1 ms: %s; "
      "CUB with the header cache < 250 ms: %s\n",
      simple_ok ? "met" : "MISSED", hit_ok ? "met" : "MISSED", cub_ok ? "met" : "MISSED");
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return 0;
}

}  // namespace
}  // namespace kerneleval::bench

int main(int argc, char** argv) { return kerneleval::bench::Main(argc, argv); }
