// Probe: which sandboxing primitives this kernel and this process have.
#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "evaluator/sandbox/sandbox.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

namespace kerneleval::sandbox {
namespace {

bool SeccompFilterAvailable() {
  // SECCOMP_GET_ACTION_AVAIL succeeds only where filter mode is compiled in.
  uint32_t action = SECCOMP_RET_KILL_PROCESS;
  if (::syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0) return true;
  // gVisor answers that with EINVAL but has filter mode: installing a filter
  // from a null program fails there, as anywhere filters exist, with EFAULT
  // (and installs nothing).
  return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, nullptr) != 0 && errno == EFAULT;
}

bool UserNamespacesAvailable() {
  // In a child: unshare(CLONE_NEWUSER) is irrevocable for the caller.
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) ::_exit(::unshare(CLONE_NEWUSER) == 0 ? 0 : 1);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

Capabilities Probe() {
  Capabilities capabilities;
  const long abi =
      ::syscall(__NR_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  capabilities.landlock_abi = abi < 0 ? 0 : static_cast<int>(abi);
  capabilities.seccomp = SeccompFilterAvailable();
  capabilities.user_namespaces = UserNamespacesAvailable();
  capabilities.root = ::geteuid() == 0;
  return capabilities;
}

std::string DescribeCapabilities(const Capabilities& c) {
  std::string landlock =
      c.landlock_abi > 0 ? absl::StrCat("landlock ABI ", c.landlock_abi) : "no landlock";
  const char* filesystem = c.landlock_abi > 0              ? "landlock"
                           : (c.root || c.user_namespaces) ? "mount namespace"
                                                           : "none (refuses to run)";
  return absl::StrCat(landlock, ", ", c.seccomp ? "seccomp" : "no seccomp", ", ",
                      c.user_namespaces ? "user namespaces" : "no user namespaces", ", ",
                      c.root ? "root" : "not root", "; file-system sandbox: ", filesystem);
}

}  // namespace kerneleval::sandbox
