// A new, empty directory under the system's temp directory for one scope,
// removed with everything in it when the scope ends. Tests only.
#ifndef KERNELEVAL_TESTS_SUPPORT_SCOPED_TEMP_DIR_H_
#define KERNELEVAL_TESTS_SUPPORT_SCOPED_TEMP_DIR_H_

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace kerneleval::test_support {

class ScopedTempDir {
 public:
  // `prefix` names the directory (prefix-XXXXXX) so that one a crashed test
  // left behind says whose it was. path() is empty where mkdtemp failed:
  // check ok() before using it.
  explicit ScopedTempDir(const std::string& prefix) {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = std::move(pattern);
  }
  ~ScopedTempDir() {
    if (path_.empty()) return;
    std::error_code ec;  // a destructor never throws
    std::filesystem::remove_all(path_, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  [[nodiscard]] bool ok() const { return !path_.empty(); }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace kerneleval::test_support

#endif  // KERNELEVAL_TESTS_SUPPORT_SCOPED_TEMP_DIR_H_
