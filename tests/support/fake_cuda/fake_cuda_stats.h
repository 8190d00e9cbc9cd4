// What the test driver (fake_cuda.cc) holds on behalf of one process, so that
// a test can check that the CUDA worker gives back every driver resource it
// takes for a request. With KERNELEVAL_FAKE_CUDA_STATS_DIR set, cuInit
// creates the file DIR/<pid> holding kDriverStatCount int64 counters, mapped
// shared and updated by every call that takes or releases a resource, so a
// reader sees them live while the worker runs. Header-only: the driver writes
// the layout, tests read it.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

namespace kerneleval::fake_cuda {

enum DriverStat : int {
  kLiveDeviceAllocations,  // cuMemAlloc minus cuMemFree
  kLiveDeviceBytes,        // [bytes] of those
  kLiveHostAllocations,    // cuMemHostAlloc minus cuMemFreeHost
  kLiveModules,            // cuModuleLoad* minus cuModuleUnload
  kLiveStreams,            // cuStreamCreate minus cuStreamDestroy
  kLiveEvents,             // cuEventCreate minus cuEventDestroy
  kRetainedContexts,       // cuDevicePrimaryCtxRetain minus ...Release
  kStackLimitBytes,        // [bytes per thread] CU_LIMIT_STACK_SIZE now
  kModuleLoadsTotal,       // every successful module load
  kLaunchesTotal,          // every accepted cuLaunchKernel
  kStackLimitPeakBytes,    // [bytes per thread] the most CU_LIMIT_STACK_SIZE has been
  kDriverStatCount,
};

inline constexpr const char* kDriverStatNames[kDriverStatCount] = {"live device allocations",
                                                                   "live device bytes",
                                                                   "live host allocations",
                                                                   "live modules",
                                                                   "live streams",
                                                                   "live events",
                                                                   "retained contexts",
                                                                   "stack limit bytes",
                                                                   "module loads",
                                                                   "launches",
                                                                   "stack limit peak bytes"};

using DriverStats = std::array<int64_t, kDriverStatCount>;

inline std::string DriverStatsPath(const std::string& dir, pid_t pid) {
  return dir + "/" + std::to_string(pid);
}

// The counters of the process whose file is `path` as they are now; nullopt
// if the file is missing or short.
inline std::optional<DriverStats> ReadDriverStats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DriverStats stats{};
  if (!in.read(reinterpret_cast<char*>(stats.data()), sizeof(stats))) return std::nullopt;
  return stats;
}

}  // namespace kerneleval::fake_cuda
