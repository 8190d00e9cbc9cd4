// RestrictSyscalls: a deny-list seccomp filter (libseccomp) per profile, after
// dropping every capability. A deny list (not an allow list) because NVRTC,
// ptxas and host compilers use a wide, version-dependent set of harmless
// calls; the dangerous families are few and stable.
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"
#include "evaluator/sandbox/sandbox.h"

namespace kerneleval::sandbox {
namespace {

struct FilterDeleter {
  void operator()(scmp_filter_ctx ctx) const noexcept { seccomp_release(ctx); }
};
using Filter = std::unique_ptr<void, FilterDeleter>;

// Drops all capabilities: bounding set (needs CAP_SETPCAP, i.e. root), ambient
// set, then effective/permitted/inheritable. A non-root process has none.
absl::Status DropCapabilities() {
  for (int cap = 0; cap <= 63; ++cap) {
    if (::prctl(PR_CAPBSET_READ, cap, 0, 0, 0) < 0) break;  // past CAP_LAST_CAP
    ::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);  // EPERM without CAP_SETPCAP: nothing to drop
  }
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capset, &header, data) != 0) {
    return absl::InternalError(absl::StrCat("capset: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Adds one rule; a syscall unknown to this libseccomp/kernel is skipped (it
// cannot be called by name either, and the bad-arch action covers others).
absl::Status Add(scmp_filter_ctx ctx, uint32_t action, const char* name,
                 std::initializer_list<scmp_arg_cmp> args = {}) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return absl::OkStatus();
  const int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(args.size()),
                                        args.size() ? args.begin() : nullptr);
  if (rc != 0 && rc != -EEXIST) {
    return absl::InternalError(absl::StrCat("seccomp_rule_add(", name, "): ", std::strerror(-rc)));
  }
  return absl::OkStatus();
}

#define KERNELEVAL_RETURN_IF_ERROR(expr)               \
  do {                                                 \
    if (absl::Status _s = (expr); !_s.ok()) return _s; \
  } while (0)

// What a call no honest caller makes gets: the whole process killed. Where
// the kernel cannot say that it supports that (gVisor answers seccomp's
// GET_ACTION_AVAIL with EINVAL, so libseccomp refuses SCMP_ACT_KILL_PROCESS
// and every filter failed to build there), SIGSYS: its default action ends
// the process too. The call is not made either way; kernel code may not set
// a SIGSYS handler (kKernelCode), but on gVisor, whose SIGSYS is not
// forced, a process that blocks it lives on.
uint32_t KillAction() { return seccomp_api_get() >= 3 ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_TRAP; }

absl::Status AddCommonRules(scmp_filter_ctx ctx) {
  const uint32_t kill = KillAction();
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  // Reading or writing another process, loading code into the kernel,
  // re-opening files by handle (escapes a mount namespace): no honest caller.
  for (const char* name :
       {"ptrace", "process_vm_readv", "process_vm_writev", "kexec_load", "kexec_file_load",
        "init_module", "finit_module", "delete_module", "open_by_handle_at", "pidfd_getfd",
        "reboot", "swapon", "swapoff", "iopl", "ioperm", "uselib"}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, kill, name));
  }
  // Network: no socket of any family (the worker's channel is inherited).
  for (const char* name : {"socket", "socketpair"})
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, name));
  // Mount table and namespaces: the file-system sandbox must stay as built.
  for (const char* name :
       {"mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree", "move_mount",
        "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "name_to_handle_at"}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, name));
  }
  // Kernel attack surface that compilers and kernels never need. io_uring
  // could also perform operations this filter would otherwise see.
  for (const char* name : {"bpf",
                           "perf_event_open",
                           "userfaultfd",
                           "keyctl",
                           "add_key",
                           "request_key",
                           "io_uring_setup",
                           "io_uring_enter",
                           "io_uring_register",
                           "acct",
                           "quotactl",
                           "quotactl_fd",
                           "settimeofday",
                           "clock_settime",
                           "clock_adjtime",
                           "adjtimex",
                           "sethostname",
                           "setdomainname",
                           "syslog",
                           "personality",
                           "lookup_dcookie",
                           "fanotify_init",
                           "capset",
                           "pidfd_open",
                           "pidfd_send_signal",
                           "kcmp",
                           "landlock_create_ruleset"}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, name));
  }
  // prlimit64(pid 0 = self) is how glibc's setrlimit works (NVRTC raises its
  // soft stack limit); other processes' limits are out of reach. Hard limits
  // cannot be raised once the capabilities are dropped.
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "prlimit64", {SCMP_A0(SCMP_CMP_NE, 0)}));
  // No new namespace through clone(2) either (unshare is denied above).
  for (const scmp_datum_t flag : {CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                  CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWCGROUP}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag)}));
  }
  // clone3 passes its flags in memory the filter cannot read; ENOSYS makes
  // glibc fall back to clone(2), whose flags the filter checks.
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3"));
  return absl::OkStatus();
}

absl::Status AddKernelRules(scmp_filter_ctx ctx) {
  const uint32_t kill = KillAction();
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  // No new program: killed (nothing legitimate in a kernel worker execs).
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, kill, "execve"));
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, kill, "execveat"));
  // No new process: fork/vfork fail; clone only for threads.
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "fork"));
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "vfork"));
  KERNELEVAL_RETURN_IF_ERROR(
      Add(ctx, eperm, "clone", {SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)}));
  // Signals and limits only for this process: it has no children, and the
  // engine and other workers (same uid) are out of reach.
  const auto self = static_cast<scmp_datum_t>(::getpid());
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "kill", {SCMP_A0(SCMP_CMP_NE, self)}));
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "tgkill", {SCMP_A0(SCMP_CMP_NE, self)}));
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "rt_sigqueueinfo", {SCMP_A0(SCMP_CMP_NE, self)}));
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "rt_tgsigqueueinfo", {SCMP_A0(SCMP_CMP_NE, self)}));
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "tkill"));
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "setpgid"));
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "setsid"));
  return absl::OkStatus();
}

// An int argument equal to `value`. The kernel reads such arguments as 32-bit
// ints, the filter sees 64-bit registers: an exact 64-bit comparison would let
// kill(self, SIGSTOP | 1L << 32) through. (A "not equal" rule on a full
// register is safe: it denies more.)
scmp_arg_cmp IntArgEquals(unsigned arg, scmp_datum_t value) {
  return scmp_arg_cmp{arg, SCMP_CMP_MASKED_EQ, 0xffffffffu, value & 0xffffffffu};
}

// Debian 12's libseccomp (2.5.4-1+deb12u1) names calls up to fchmodat2
// (452), upstream 2.5.4 up to set_mempolicy_home_node (450); from 451 on
// (cachestat) calls are numbered alike on every architecture.
constexpr int kFirstNumberUnknownToOldSeccomp = 451;
constexpr int kNewSyscallsDenied = 128;  // through 578, far past the newest (~470 in 6.18)

absl::Status AddKernelCodeRules(scmp_filter_ctx ctx) {
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  // Memory that no reading of the process's resident size sees (an
  // unmapped memfd, shared anonymous pages dropped from the page tables
  // with MADV_DONTNEED but kept by their shmem object), or that outlives it
  // (a SysV segment stays after its creator's death), and channels between
  // programs.
  for (const char* name :
       {"memfd_create", "memfd_secret", "shmget",          "shmat",     "shmctl",
        "shmdt",        "msgget",       "msgsnd",          "msgrcv",    "msgctl",
        "semget",       "semop",        "semtimedop",      "semctl",    "mq_open",
        "mq_unlink",    "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, name));
  }
  // MAP_SHARED_VALIDATE includes MAP_SHARED's bit. The runner's own shared
  // mappings are of descriptors, not anonymous.
  constexpr scmp_datum_t kSharedAnonymous = MAP_SHARED | MAP_ANONYMOUS;
  KERNELEVAL_RETURN_IF_ERROR(
      Add(ctx, eperm, "mmap", {SCMP_A3(SCMP_CMP_MASKED_EQ, kSharedAnonymous, kSharedAnonymous)}));
  // A signal delivered later without this process running: a POSIX timer's,
  // or the kernel's on I/O (F_SETSIG/F_SETOWN with O_ASYNC, dnotify,
  // leases). SIGCONT sent so resumes the process while its worker holds it
  // stopped between samples, and its work escapes the measurement.
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "timer_create"));
  // A handler of its own for SIGSYS: where "kill" is SIGSYS (KillAction),
  // kernel code that caught it lived on after a forbidden call (not made
  // either way) instead of ending with "a system call the sandbox forbids"
  // (red team rt13 #4).
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "rt_sigaction", {IntArgEquals(0, SIGSYS)}));
  for (const scmp_datum_t command : {F_SETSIG, F_SETOWN, F_SETOWN_EX, F_NOTIFY, F_SETLEASE}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "fcntl", {IntArgEquals(1, command)}));
  }
  // State kept by a shared inode, which any process holding it sees: the
  // runners' stdio is the host's /dev/null and programs of the same source
  // load one shared object. Group members passed finished answers through
  // read locks on /dev/null (the lock's offset carried the data, F_GETLK
  // read another's: reward 3.3 each in a group of 4), and root owns those
  // files, so mode, owner, times and extended attributes were writable too.
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "flock"));
  for (const scmp_datum_t command :
       {F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_GETLEASE}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "fcntl", {IntArgEquals(1, command)}));
  }
  for (const char* name :
       {"chmod",      "fchmod",      "fchmodat",      "fchmodat2",    "chown",
        "fchown",     "lchown",      "fchownat",      "utime",        "utimes",
        "futimesat",  "utimensat",   "setxattr",      "lsetxattr",    "fsetxattr",
        "getxattr",   "lgetxattr",   "fgetxattr",     "listxattr",    "llistxattr",
        "flistxattr", "removexattr", "lremovexattr",  "fremovexattr", "setxattrat",
        "getxattrat", "listxattrat", "removexattrat", "file_getattr", "file_setattr"}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, name));
  }
  // System calls newer than a libseccomp may know by name (numbered from
  // 451 on: fchmodat2, the *xattrat family, file_setattr, listmount,
  // open_tree_attr, ...; numbered alike on every architecture since 424) are
  // unknown to Add, not to the kernel: kernel code could call them by number.
  // All of them, whatever a newer libseccomp knows: ENOSYS, as on an older
  // kernel (glibc falls back). Kernel code needs none.
  for (int number = kFirstNumberUnknownToOldSeccomp;
       number < kFirstNumberUnknownToOldSeccomp + kNewSyscallsDenied; ++number) {
    const int rc = seccomp_rule_add_exact(ctx, SCMP_ACT_ERRNO(ENOSYS), number, 0);
    if (rc != 0 && rc != -EEXIST) {
      return absl::InternalError(
          absl::StrCat("seccomp_rule_add(", number, "): ", std::strerror(-rc)));
    }
  }
  // Other processes, even to read about them: success or ESRCH told which
  // pids exist, and PRIO_USER/PRIO_PGRP with who = 0 reniced every process
  // of the uid (for good: raising nice back needs CAP_SYS_NICE). Only
  // PRIO_PROCESS of itself, and its own scheduling by pid 0, stay (a thread
  // naming itself by its thread id, as pthread_getattr_np does, is refused
  // too: the filter cannot know the ids of threads started after it).
  for (const char* name : {"getpriority", "setpriority"}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, name, {SCMP_A0(SCMP_CMP_NE, PRIO_PROCESS)}));
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, name, {SCMP_A1(SCMP_CMP_NE, 0)}));
  }
  for (const char* name :
       {"sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_setparam",
        "sched_getscheduler", "sched_setscheduler", "sched_getattr", "sched_setattr",
        "sched_rr_get_interval", "getpgid", "getsid", "get_robust_list"}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, name, {SCMP_A0(SCMP_CMP_NE, 0)}));
  }
  // sysinfo: the host's free memory and process count, which other
  // evaluations move (a side channel between them); glibc's callers
  // (sysconf(_SC_PHYS_PAGES), qsort's buffer sizing) handle its failure.
  for (const char* name :
       {"ioprio_get", "ioprio_set", "capget", "migrate_pages", "move_pages", "sysinfo"}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, name));
  }
  // Priority-inheritance futexes name a pid in the futex word: ESRCH or not
  // told which pids exist. (The command is the low 7 bits of the op.)
  for (const scmp_datum_t op :
       {6 /* LOCK_PI */, 7 /* UNLOCK_PI */, 8 /* TRYLOCK_PI */, 11 /* WAIT_REQUEUE_PI */,
        12 /* CMP_REQUEUE_PI */, 13 /* LOCK_PI2 */}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "futex", {SCMP_A1(SCMP_CMP_MASKED_EQ, 0x7f, op)}));
  }
  // ioctl's ways to F_SETOWN and O_ASYNC (signals sent on I/O, to an owner).
  for (const scmp_datum_t request : {FIOSETOWN, SIOCSPGRP, FIOASYNC}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "ioctl", {IntArgEquals(1, request)}));
  }
  // Stopping itself: a sample would then last until the timing deadline
  // (24 s held on the device) instead of failing.
  for (const scmp_datum_t signal : {SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU}) {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "kill", {IntArgEquals(1, signal)}));
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "tgkill", {IntArgEquals(2, signal)}));
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "rt_sigqueueinfo", {IntArgEquals(1, signal)}));
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, eperm, "rt_tgsigqueueinfo", {IntArgEquals(2, signal)}));
  }
  return absl::OkStatus();
}

absl::Status AddCompilerRules(scmp_filter_ctx ctx) {
  // Host compilers fork and exec their passes and may signal their children,
  // so kill(2) stays open except for "every process of this uid" (-1, as the
  // kernel reads the int). Other same-uid processes remain reachable by pid on
  // kernels without Landlock ABI 6 signal scoping (see README).
  KERNELEVAL_RETURN_IF_ERROR(Add(ctx, SCMP_ACT_ERRNO(EPERM), "kill",
                                 {SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, 0xffffffffu)}));
  return absl::OkStatus();
}

}  // namespace

namespace {

absl::Status SetNoNewPrivs() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    return absl::InternalError(absl::StrCat("prctl(PR_SET_NO_NEW_PRIVS): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Loads a filter that allows every call but those `add_rules` adds, on
// every thread of the process (filters stack: the strictest answer wins).
absl::Status LoadFilter(const std::function<absl::Status(scmp_filter_ctx)>& add_rules) {
  Filter filter(seccomp_init(SCMP_ACT_ALLOW));
  if (!filter) return absl::InternalError("seccomp_init failed");
  scmp_filter_ctx ctx = filter.get();
  // A 32-bit (int 0x80) or x32 system call would bypass a filter written for
  // x86-64 numbers: kill instead.
  if (int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, KillAction()); rc != 0) {
    return absl::InternalError(
        absl::StrCat("seccomp bad-architecture action: ", std::strerror(-rc)));
  }
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
  // A binary tree over the syscall numbers instead of a list: the kernel-code
  // filter has ~200 rules and runs on every call a runner makes. Where the
  // library cannot, the list is as correct.
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
  // Every thread gets the filter, not only the caller.
  if (int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1); rc != 0) {
    return absl::InternalError(absl::StrCat("seccomp TSYNC: ", std::strerror(-rc)));
  }
  KERNELEVAL_RETURN_IF_ERROR(add_rules(ctx));
  if (int rc = seccomp_load(ctx); rc != 0) {
    return absl::InternalError(absl::StrCat("seccomp_load: ", std::strerror(-rc)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RestrictSyscalls(SyscallProfile profile) {
  KERNELEVAL_RETURN_IF_ERROR(SetNoNewPrivs());
  KERNELEVAL_RETURN_IF_ERROR(DropCapabilities());
  return LoadFilter([profile](scmp_filter_ctx ctx) -> absl::Status {
    KERNELEVAL_RETURN_IF_ERROR(AddCommonRules(ctx));
    switch (profile) {
      case SyscallProfile::kCompiler:
        return AddCompilerRules(ctx);
      case SyscallProfile::kKernelCode:
        KERNELEVAL_RETURN_IF_ERROR(AddKernelCodeRules(ctx));
        [[fallthrough]];
      case SyscallProfile::kKernel:
        return AddKernelRules(ctx);
    }
    return absl::OkStatus();
  });
}

absl::Status DenyNewThreads() {
  // RestrictSyscalls set no_new_privs, which a filter needs when the
  // process lacks CAP_SYS_ADMIN; set here too so this works on its own.
  KERNELEVAL_RETURN_IF_ERROR(SetNoNewPrivs());
  return LoadFilter([](scmp_filter_ctx ctx) -> absl::Status {
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, SCMP_ACT_ERRNO(EPERM), "clone"));
    // ENOSYS would make glibc fall back to clone(2), which fails too.
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3"));
    KERNELEVAL_RETURN_IF_ERROR(Add(ctx, SCMP_ACT_ERRNO(EPERM), "fork"));
    return Add(ctx, SCMP_ACT_ERRNO(EPERM), "vfork");
  });
}

}  // namespace kerneleval::sandbox
