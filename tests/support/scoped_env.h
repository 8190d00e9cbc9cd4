// Sets (or, with nullptr, unsets) an environment variable for one scope and
// puts back what was there. Tests only: setenv is not thread-safe, so set
// variables before the threads that read them start.
#ifndef KERNELEVAL_TESTS_SUPPORT_SCOPED_ENV_H_
#define KERNELEVAL_TESTS_SUPPORT_SCOPED_ENV_H_

#include <cstdlib>
#include <optional>
#include <string>

namespace kerneleval::test_support {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace kerneleval::test_support

#endif  // KERNELEVAL_TESTS_SUPPORT_SCOPED_ENV_H_
