#include "evaluator/compile/toolkit.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kerneleval::compile {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_directory(path, ec);
}

std::string Canonical(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::canonical(path, ec);
  return ec ? path : canonical.string();
}

bool HasCudaHeaders(const std::string& include_dir) {
  std::error_code ec;
  return IsDirectory(include_dir) && fs::exists(include_dir + "/cuda_runtime.h", ec);
}

// <toolkit>/bin/nvcc from the PATH, resolved through symlinks; "" if none.
std::string ToolkitRootFromNvcc() {
  const std::string path = Env("PATH");
  for (size_t begin = 0; begin <= path.size();) {
    const size_t end = std::min(path.find(':', begin), path.size());
    const std::string dir = path.substr(begin, end - begin);
    begin = end + 1;
    if (dir.empty()) continue;
    std::error_code ec;
    const fs::path nvcc = fs::path(dir) / "nvcc";
    if (fs::exists(nvcc, ec)) return fs::path(Canonical(nvcc.string())).parent_path().parent_path();
  }
  return {};
}

}  // namespace

absl::StatusOr<ToolkitPaths> FindToolkit() {
  ToolkitPaths paths;
  // The library actually loaded, wherever the dynamic linker found it.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname) {
    paths.library_dir = fs::path(Canonical(info.dli_fname)).parent_path().string();
  }
  // The headers: KERNELEVAL_CUDA_HOME if set (and only it); else the
  // toolkit CMake found at build time; else beside the loaded libnvrtc
  // (<root>/lib64/.. or <root>/targets/<arch>/lib/..); else nvcc's on the
  // PATH. A machine other than the build machine usually takes a later one.
  std::vector<std::string> include_candidates;
  if (std::string home = Env("KERNELEVAL_CUDA_HOME"); !home.empty()) {
    include_candidates.push_back(home + "/include");
  } else {
#ifdef KERNELEVAL_CUDA_INCLUDE_DIR
    include_candidates.push_back(KERNELEVAL_CUDA_INCLUDE_DIR);
#endif
    if (!paths.library_dir.empty()) {
      include_candidates.push_back(paths.library_dir + "/../include");
      include_candidates.push_back(paths.library_dir + "/../../include");
    }
    if (std::string root = ToolkitRootFromNvcc(); !root.empty()) {
      include_candidates.push_back(root + "/include");
    }
  }
  for (const std::string& candidate : include_candidates) {
    if (HasCudaHeaders(candidate)) {
      paths.include_dir = Canonical(candidate);
      break;
    }
  }
  if (paths.include_dir.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA headers (cuda_runtime.h) at ", absl::StrJoin(include_candidates, ", "),
        " (set KERNELEVAL_CUDA_HOME to the CUDA toolkit's root)"));
  }
  if (IsDirectory(paths.include_dir + "/cccl"))
    paths.cccl_include_dir = paths.include_dir + "/cccl";

  std::vector<std::string> candidates;
  if (std::string dir = Env("KERNELEVAL_INCLUDE_DIR"); !dir.empty()) {
    candidates.push_back(dir);
  } else {
#ifdef KERNELEVAL_COMPILE_INCLUDE_DIR
    candidates.push_back(KERNELEVAL_COMPILE_INCLUDE_DIR);
#endif
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) candidates.push_back((self.parent_path() / "../share/kerneleval/include").string());
  }
  for (const std::string& dir : candidates) {
    if (fs::exists(dir + "/kerneleval/prelude.cuh")) {
      paths.kerneleval_include_dir = Canonical(dir);
      paths.prelude = paths.kerneleval_include_dir + "/kerneleval/prelude.cuh";
      return paths;
    }
  }
  return absl::FailedPreconditionError(
      "kerneleval's NVRTC headers (kerneleval/prelude.cuh) not found; set KERNELEVAL_INCLUDE_DIR");
}

std::string NvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return absl::StrCat(major, ".", minor);
}

}  // namespace kerneleval::compile
