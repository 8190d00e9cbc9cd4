#include "evaluator/compile/toolkit.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"

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

}  // namespace

absl::StatusOr<ToolkitPaths> FindToolkit() {
  ToolkitPaths paths;
  if (std::string home = Env("KERNELEVAL_CUDA_HOME"); !home.empty()) {
    paths.include_dir = home + "/include";
  } else {
#ifdef KERNELEVAL_CUDA_INCLUDE_DIR
    paths.include_dir = KERNELEVAL_CUDA_INCLUDE_DIR;
#endif
  }
  if (!IsDirectory(paths.include_dir) || !fs::exists(paths.include_dir + "/cuda_runtime.h")) {
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA headers at \"", paths.include_dir,
                     "\" (set KERNELEVAL_CUDA_HOME to the CUDA toolkit's root)"));
  }
  paths.include_dir = Canonical(paths.include_dir);
  if (IsDirectory(paths.include_dir + "/cccl"))
    paths.cccl_include_dir = paths.include_dir + "/cccl";

  // The library actually loaded, wherever the dynamic linker found it.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) != 0 && info.dli_fname) {
    paths.library_dir = fs::path(Canonical(info.dli_fname)).parent_path().string();
  }

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
