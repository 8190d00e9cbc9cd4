// A seccomp filter that answers some system calls the way gVisor (runsc, the
// runtime of about half the lent GPU machines) does, so that code meant to
// run there can be tried on an ordinary kernel:
//   - seccomp(2): only SECCOMP_SET_MODE_FILTER with flags within
//     SECCOMP_FILTER_FLAG_TSYNC; STRICT, GET_ACTION_AVAIL, GET_NOTIF_SIZES
//     and other flags get EINVAL (google/gvisor#14627), so libseccomp takes
//     SCMP_ACT_KILL_PROCESS for unavailable;
//   - landlock_create_ruleset, landlock_add_rule, landlock_restrict_self:
//     ENOSYS (no Landlock, google/gvisor#13439);
//   - execveat(fd, "", ..., AT_EMPTY_PATH): EACCES (an O_PATH descriptor
//     cannot be executed).
// Header-only; tests and tests/support/gvisor_like/gvisor_like_shim.cc use it.
#pragma once

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <iterator>

namespace kerneleval::testing {

// Loads the filter on the calling thread (inherited by its children and by
// any program it executes); false (errno set) when the kernel refuses it.
inline bool LoadGvisorLikeFilter() {
  constexpr unsigned kLandlockFirst = 444, kLandlockLast = 446;  // x86-64 numbers
  constexpr unsigned kAtEmptyPath = 0x1000;
  auto ret_errno = [](unsigned error) {
    const sock_filter ret =
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (error & SECCOMP_RET_DATA));
    return ret;
  };
  const sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  const sock_filter load_nr = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      allow,
      load_nr,
      // landlock_*: ENOSYS.
      BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, kLandlockFirst, 0, 2),
      BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, kLandlockLast, 1, 0),
      ret_errno(ENOSYS),
      // execveat with AT_EMPTY_PATH: EACCES.
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execveat, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[4])),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, kAtEmptyPath, 0, 1),
      ret_errno(EACCES),
      load_nr,
      // seccomp: SET_MODE_FILTER with flags within TSYNC only.
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, 0, 6),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_SET_MODE_FILTER, 1, 0),
      ret_errno(EINVAL),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[1])),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, ~static_cast<unsigned>(SECCOMP_FILTER_FLAG_TSYNC), 0, 1),
      ret_errno(EINVAL),
      allow,
  };
  const sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
  return ::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0;
}

}  // namespace kerneleval::testing
