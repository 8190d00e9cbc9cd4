// RestrictFilesystem: Landlock (raw system calls), else a private mount
// namespace whose root is a read-only tmpfs holding bind mounts of the policy.
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "evaluator/sandbox/sandbox.h"

// <linux/landlock.h> of older distributions stops at ABI 1-3; the values below
// are the kernel's UAPI (stable by definition).
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif

namespace kerneleval::sandbox {
namespace {

// The newest ruleset layout (ABI 6); older kernels get a prefix of it.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};

constexpr int kRulePathBeneath = 1;  // LANDLOCK_RULE_PATH_BENEATH

// Closes a file descriptor on scope exit.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ScopedFd(ScopedFd&&) = delete;
  ScopedFd& operator=(ScopedFd&&) = delete;
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  [[nodiscard]] int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

int LandlockAbi() {
  const long abi =
      ::syscall(__NR_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

// Number of threads of this process; -1 when /proc cannot tell.
int ThreadCount() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return -1;
}

struct PolicyPath {
  std::string given;      // as in the policy
  std::string canonical;  // symlinks resolved
  bool is_directory = false;
  bool writable = false;
};

// Resolves and checks the policy's paths. Missing paths are dropped: they
// would grant nothing.
absl::StatusOr<std::vector<PolicyPath>> ResolvePolicy(const FilesystemPolicy& policy) {
  std::vector<PolicyPath> paths;
  auto add = [&](const std::string& path, bool writable) -> absl::Status {
    if (path.empty() || path[0] != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("sandbox policy paths must be absolute, got \"", path, "\""));
    }
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) == nullptr) return absl::OkStatus();
    struct stat st {};
    if (::stat(resolved, &st) != 0) return absl::OkStatus();
    if (writable && !S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("sandbox read_write entries must be directories, got \"", path, "\""));
    }
    paths.push_back({path, resolved, S_ISDIR(st.st_mode), writable});
    return absl::OkStatus();
  };
  for (const auto& p : policy.read_only) {
    if (absl::Status s = add(p, false); !s.ok()) return s;
  }
  for (const auto& p : policy.read_write) {
    if (absl::Status s = add(p, true); !s.ok()) return s;
  }
  return paths;
}

// ----------------------------------------------------------------- Landlock

absl::Status ApplyLandlock(const std::vector<PolicyPath>& paths, int abi) {
  uint64_t all_fs =
      LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
      LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
      LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
      LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
      LANDLOCK_ACCESS_FS_MAKE_SYM;
  if (abi >= 2) all_fs |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) all_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) all_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  // Rights that make sense on a regular file (the kernel refuses others).
  const uint64_t file_rights =
      all_fs &
      (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
       LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV);
  const uint64_t read_rights =
      LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;

  RulesetAttr attr{};
  attr.handled_access_fs = all_fs;
  size_t attr_size = sizeof(uint64_t);
  if (abi >= 4) {
    // No TCP bind/connect rule is added: all TCP is denied.
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    attr_size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    // No abstract unix sockets or signals to processes outside the sandbox.
    attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    attr_size = sizeof(RulesetAttr);
  }
  ScopedFd ruleset(static_cast<int>(::syscall(__NR_landlock_create_ruleset, &attr, attr_size, 0)));
  if (ruleset.get() < 0) return Errno("landlock_create_ruleset");

  for (const PolicyPath& path : paths) {
    ScopedFd fd(::open(path.canonical.c_str(), O_PATH | O_CLOEXEC));
    if (fd.get() < 0) return Errno(absl::StrCat("open ", path.canonical));
    PathBeneathAttr rule{};
    rule.allowed_access = path.writable ? all_fs : read_rights;
    if (!path.is_directory) rule.allowed_access &= file_rights;
    rule.parent_fd = fd.get();
    if (::syscall(__NR_landlock_add_rule, ruleset.get(), kRulePathBeneath, &rule, 0) != 0) {
      return Errno(absl::StrCat("landlock_add_rule ", path.canonical));
    }
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Errno("prctl(PR_SET_NO_NEW_PRIVS)");
  if (::syscall(__NR_landlock_restrict_self, ruleset.get(), 0) != 0) {
    return Errno("landlock_restrict_self");
  }
  return absl::OkStatus();
}

// ------------------------------------------------------- mount namespace

absl::Status WriteFile(const std::string& path, const std::string& content) {
  ScopedFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd.get() < 0) return Errno(absl::StrCat("open ", path));
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    return Errno(absl::StrCat("write ", path));
  }
  return absl::OkStatus();
}

absl::Status MakeDirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return absl::InternalError(absl::StrCat("mkdir ", path, ": ", ec.message()));
  return absl::OkStatus();
}

// Flags a read-only bind remount must keep: inside a user namespace the
// kernel refuses to clear the locked ones (nosuid, nodev, noexec, atime).
unsigned long LockedMountFlags(const std::string& path) {
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) return 0;
  unsigned long flags = 0;
  if (vfs.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (vfs.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (vfs.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (vfs.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (vfs.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (vfs.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

absl::Status EnterMountNamespace() {
  const uid_t uid = ::geteuid();
  const gid_t gid = ::getegid();
  // As root, a mount namespace alone; otherwise (or if root lacks
  // CAP_SYS_ADMIN, as in many containers) a user namespace too.
  if (uid == 0 && ::unshare(CLONE_NEWNS) == 0) return absl::OkStatus();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
    return Errno("unshare(CLONE_NEWUSER|CLONE_NEWNS)");
  }
  // Keep the same ids inside (files keep their owners' view).
  if (absl::Status s = WriteFile("/proc/self/setgroups", "deny"); !s.ok() && errno != ENOENT) {
    return s;
  }
  if (absl::Status s = WriteFile("/proc/self/uid_map", absl::StrCat(uid, " ", uid, " 1\n"));
      !s.ok()) {
    return s;
  }
  return WriteFile("/proc/self/gid_map", absl::StrCat(gid, " ", gid, " 1\n"));
}

absl::Status ApplyMountNamespace(const std::vector<PolicyPath>& paths) {
  if (absl::Status s = EnterMountNamespace(); !s.ok()) return s;
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Errno("mount --make-rprivate /");
  }
  // A scratch tmpfs becomes the root first, so that the old root stays
  // reachable at /oldroot while the new one is populated (as bubblewrap does).
  std::string base;
  for (const char* candidate : {"/tmp", "/mnt", "/run", "/var/tmp", "/dev"}) {
    struct stat st {};
    if (::stat(candidate, &st) == 0 && S_ISDIR(st.st_mode)) {
      base = candidate;
      break;
    }
  }
  if (base.empty()) return absl::FailedPreconditionError("no directory to mount a tmpfs on");
  if (::mount("tmpfs", base.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
    return Errno(absl::StrCat("mount tmpfs on ", base));
  }
  if (::chdir(base.c_str()) != 0) return Errno("chdir");
  if (::mkdir("newroot", 0755) != 0 || ::mkdir("oldroot", 0755) != 0) return Errno("mkdir");
  if (::syscall(SYS_pivot_root, base.c_str(), "oldroot") != 0) return Errno("pivot_root");
  if (::chdir("/") != 0) return Errno("chdir /");
  if (::mount("tmpfs", "/newroot", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
    return Errno("mount tmpfs on /newroot");
  }

  for (const PolicyPath& path : paths) {
    const std::string source = "/oldroot" + path.canonical;
    const std::string target = "/newroot" + path.canonical;
    if (path.is_directory) {
      if (absl::Status s = MakeDirs(target); !s.ok()) return s;
    } else {
      if (absl::Status s = MakeDirs(std::filesystem::path(target).parent_path()); !s.ok()) {
        return s;
      }
      ScopedFd file(::open(target.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
      if (file.get() < 0) return Errno(absl::StrCat("create ", target));
    }
    if (::mount(source.c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      return Errno(absl::StrCat("bind mount ", path.canonical));
    }
    const unsigned long keep = LockedMountFlags(target) | MS_NOSUID | MS_NODEV;
    const unsigned long remount =
        MS_BIND | MS_REMOUNT | keep | (path.writable ? 0 : static_cast<unsigned long>(MS_RDONLY));
    if (::mount(nullptr, target.c_str(), nullptr, remount, nullptr) != 0) {
      return Errno(absl::StrCat("remount ", path.canonical, path.writable ? "" : " read-only"));
    }
  }
  // The policy may name a path through a symlink (/usr/local/cuda ->
  // cuda-13.0): recreate the link so that both spellings work.
  for (const PolicyPath& path : paths) {
    if (path.given == path.canonical) continue;
    const std::string link =
        "/newroot" + std::filesystem::path(path.given).lexically_normal().string();
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::symlink_status(link, ec))) continue;
    if (!MakeDirs(std::filesystem::path(link).parent_path()).ok()) continue;
    std::filesystem::create_symlink(path.canonical, link, ec);  // best effort
  }

  if (::umount2("/oldroot", MNT_DETACH) != 0) return Errno("umount /oldroot");
  if (::chdir("/newroot") != 0) return Errno("chdir /newroot");
  if (::syscall(SYS_pivot_root, ".", ".") != 0) return Errno("pivot_root .");
  if (::umount2(".", MNT_DETACH) != 0) return Errno("umount old root");
  if (::chdir("/") != 0) return Errno("chdir /");
  if (::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return Errno("remount / read-only");
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Errno("prctl(PR_SET_NO_NEW_PRIVS)");
  return absl::OkStatus();
}

}  // namespace

const char* MechanismName(FilesystemMechanism mechanism) {
  switch (mechanism) {
    case FilesystemMechanism::kAuto:
      return "auto";
    case FilesystemMechanism::kLandlock:
      return "landlock";
    case FilesystemMechanism::kMountNamespace:
      return "mount-namespace";
    case FilesystemMechanism::kLandlockAndMountNamespace:
      return "landlock+mount-namespace";
  }
  return "?";
}

absl::StatusOr<FilesystemMechanism> RestrictFilesystemUsing(const FilesystemPolicy& policy,
                                                            FilesystemMechanism mechanism) {
  absl::StatusOr<std::vector<PolicyPath>> paths = ResolvePolicy(policy);
  if (!paths.ok()) return paths.status();
  if (const int threads = ThreadCount(); threads > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("RestrictFilesystem must run before any thread is started (this process has ",
                     threads, " threads; the others would stay unrestricted)"));
  }
  std::vector<std::string> failures;
  if (mechanism == FilesystemMechanism::kLandlockAndMountNamespace) {
    // The namespace first (it needs mount(2), and its paths are what
    // Landlock's rules then refer to), then Landlock over it.
    absl::Status hidden = ApplyMountNamespace(*paths);
    const int abi = LandlockAbi();
    absl::Status guarded = abi > 0 ? ApplyLandlock(*paths, abi)
                                   : absl::UnavailableError("not supported by this kernel");
    if (hidden.ok() && guarded.ok()) return FilesystemMechanism::kLandlockAndMountNamespace;
    if (hidden.ok()) return FilesystemMechanism::kMountNamespace;
    if (guarded.ok()) return FilesystemMechanism::kLandlock;
    return absl::FailedPreconditionError(
        absl::StrCat("no file-system sandbox could be applied (mount namespace: ", hidden.message(),
                     "; landlock: ", guarded.message(), ")"));
  }
  if (mechanism != FilesystemMechanism::kMountNamespace) {
    if (const int abi = LandlockAbi(); abi > 0) {
      absl::Status s = ApplyLandlock(*paths, abi);
      if (s.ok()) return FilesystemMechanism::kLandlock;
      failures.push_back(absl::StrCat("landlock: ", s.message()));
    } else {
      failures.push_back("landlock: not supported by this kernel");
    }
  }
  if (mechanism != FilesystemMechanism::kLandlock) {
    // Runs in this process: a failure half-way leaves it in an odd namespace,
    // which is why the caller must treat any error as fatal for the work.
    absl::Status s = ApplyMountNamespace(*paths);
    if (s.ok()) return FilesystemMechanism::kMountNamespace;
    failures.push_back(absl::StrCat("mount namespace: ", s.message()));
  }
  return absl::FailedPreconditionError(absl::StrCat("no file-system sandbox could be applied (",
                                                    absl::StrJoin(failures, "; "), ")"));
}

absl::Status RestrictFilesystem(const FilesystemPolicy& policy) {
  return RestrictFilesystemUsing(policy, FilesystemMechanism::kAuto).status();
}

}  // namespace kerneleval::sandbox
