// Confinement of untrusted work (compiles, kernels run on the CPU) to what it
// needs: a file-system view (Landlock, else a private mount namespace) and a
// system-call profile (seccomp). Both are irrevocable and inherited by
// children. Nothing here ever falls back to "unrestricted": when no mechanism
// works the functions return an error and the caller must not run the work.
//
// Order: RestrictFilesystem first (the mount-namespace fallback needs mount(2)),
// then RestrictSyscalls (it drops capabilities and forbids mount(2)). Call both
// while the process is single-threaded: Landlock restricts the calling thread
// and its future children only, so RestrictFilesystem refuses to run when
// other threads exist.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kerneleval::sandbox {

struct FilesystemPolicy {
  std::vector<std::string> read_only;   // dirs or files readable (and executable)
  std::vector<std::string> read_write;  // dirs readable and writable
};

// Irrevocably restricts this process (and future children) to the policy.
// Landlock first; if unavailable, a private mount namespace (with a user
// namespace when not root) holding a read-only tmpfs root with bind mounts of
// the policy's paths; if nothing works: an error. Paths that do not exist are
// skipped (they grant nothing). Relative paths are refused.
absl::Status RestrictFilesystem(const FilesystemPolicy& policy);

enum class FilesystemMechanism {
  kAuto,            // Landlock, else kMountNamespace
  kLandlock,        // Landlock only; an error when the kernel lacks it
  kMountNamespace,  // tmpfs root + bind mounts + pivot_root only
  // Both where both work: the mount namespace makes everything outside the
  // policy nonexistent (stat, existence probes such as __has_include and the
  // errno in error messages show nothing), Landlock guards the view inside.
  // Falls back to whichever one works; an error when neither does.
  kLandlockAndMountNamespace,
};
const char* MechanismName(FilesystemMechanism mechanism);

// As RestrictFilesystem, with the mechanism chosen by the caller (tests use it
// to exercise the fallback on kernels that have Landlock). Returns the
// mechanism applied.
absl::StatusOr<FilesystemMechanism> RestrictFilesystemUsing(const FilesystemPolicy& policy,
                                                            FilesystemMechanism mechanism);

enum class SyscallProfile {
  kCompiler,  // may fork/exec (host compilers), no network, no ptrace, no mount/namespace changes
  kKernel,    // no fork/exec/clone of processes, no network sockets, no ptrace; file opens only as
              // Landlock allows
  // kKernel, and what only submitted code would want, for a process that
  // runs it (the CPU backend's runner): no memory outside its address space
  // (memfd_create, SysV shared memory, message queues, semaphores: held
  // past a reading of its resident size, or past its death, and a channel
  // to other programs), no way to have a signal sent to itself later
  // (timer_create, fcntl F_SETSIG/F_SETOWN/F_NOTIFY/F_SETLEASE: a SIGCONT
  // that resumes it while its worker holds it stopped between samples).
  kKernelCode,
};

// Installs a seccomp filter (libseccomp) on every thread of the process; sets
// no_new_privs and drops all capabilities first (a root worker keeps uid 0 but
// no privilege). Denied calls fail with EPERM where a library may probe them
// (socket, fork, mount, io_uring, ...) and kill the process where no honest
// program calls them (execve under kKernel, ptrace, process_vm_*, module and
// kexec loading, open_by_handle_at). See README.md for the full table.
absl::Status RestrictSyscalls(SyscallProfile profile);

// Adds a filter on top of RestrictSyscalls' (filters stack; the strictest
// answer wins): no thread can be started from now on (clone fails with
// EPERM). For a process whose own threads are all started, before it runs
// submitted code: a kernel's thread could otherwise work outside the runs
// that are measured, and thousands of them exhaust the host's pids.
absl::Status DenyNewThreads();

struct Capabilities {
  int landlock_abi = 0;          // 0: no Landlock
  bool seccomp = false;          // seccomp filter mode available
  bool user_namespaces = false;  // an unprivileged user namespace can be created
  bool root = false;             // effective uid 0
};
// Probes the running kernel (forks a short-lived child for the user-namespace
// check; starts no thread).
Capabilities Probe();
std::string DescribeCapabilities(const Capabilities& capabilities);

}  // namespace kerneleval::sandbox
