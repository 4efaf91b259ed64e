// `husk spec` and the base of `husk sandbox`: runc's template, made safe by default.
#include "spec/defaults.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <utility>

#include "spec/spec.h"

namespace husk::spec {
namespace {

using ojson = nlohmann::ordered_json;

// Every syscall a program without privileges needs, as libseccomp names them
// (its unknown names are skipped: the profile also runs where they are not
// defined). Left out on purpose (denied): the keyring, bpf, perf, module and
// kexec loading, the mount API, namespaces (see kNamespaceFlags), ptrace and
// every call reading another process's memory or fds, io_uring, userfaultfd,
// clock/time setting, swap, reboot, quotas, handle-based opens, NUMA placement,
// and the obsolete ones.
const char* const kAllowed[] = {
      "accept", "accept4", "access", "alarm", "arch_prctl", "bind", "brk", "cachestat", "capget", "capset",
      "chdir", "chmod", "chown", "clock_getres", "clock_gettime", "clock_nanosleep", "close", "close_range",
      "connect", "copy_file_range", "creat", "dup", "dup2", "dup3", "epoll_create", "epoll_create1",
      "epoll_ctl", "epoll_pwait", "epoll_pwait2", "epoll_wait", "eventfd", "eventfd2", "execve", "execveat",
      "exit", "exit_group", "faccessat", "faccessat2", "fadvise64", "fallocate", "fanotify_mark", "fchdir",
      "fchmod", "fchmodat", "fchmodat2", "fchown", "fchownat", "fcntl", "fdatasync", "fgetxattr",
      "flistxattr", "flock", "fork", "fremovexattr", "fsetxattr", "fstat", "fstatfs", "fsync", "ftruncate",
      "futex", "futex_requeue", "futex_wait", "futex_waitv", "futex_wake", "futimesat", "get_mempolicy",
      "get_robust_list", "get_thread_area", "getcpu", "getcwd", "getdents", "getdents64", "getegid",
      "geteuid", "getgid", "getgroups", "getitimer", "getpeername", "getpgid", "getpgrp", "getpid", "getppid",
      "getpriority", "getrandom", "getresgid", "getresuid", "getrlimit", "getrusage", "getsid", "getsockname",
      "getsockopt", "gettid", "gettimeofday", "getuid", "getxattr", "inotify_add_watch", "inotify_init",
      "inotify_init1", "inotify_rm_watch", "io_cancel", "io_destroy", "io_getevents", "io_pgetevents",
      "io_setup", "io_submit", "ioctl", "ioprio_get", "ioprio_set", "kill", "landlock_add_rule",
      "landlock_create_ruleset", "landlock_restrict_self", "lchown", "lgetxattr", "link", "linkat", "listen",
      "listxattr", "llistxattr", "lremovexattr", "lseek", "lsetxattr", "lstat", "madvise", "map_shadow_stack",
      "membarrier", "memfd_create", "memfd_secret", "mincore", "mkdir", "mkdirat", "mknod", "mknodat",
      "mlock", "mlock2", "mlockall", "mmap", "mprotect", "mq_getsetattr", "mq_notify", "mq_open",
      "mq_timedreceive", "mq_timedsend", "mq_unlink", "mremap", "msgctl", "msgget", "msgrcv", "msgsnd",
      "msync", "munlock", "munlockall", "munmap", "nanosleep", "newfstatat", "open", "openat", "openat2",
      "pause", "pidfd_open", "pidfd_send_signal", "pipe", "pipe2", "pkey_alloc", "pkey_free", "pkey_mprotect",
      "poll", "ppoll", "prctl", "pread64", "preadv", "preadv2", "prlimit64", "pselect6", "pwrite64",
      "pwritev", "pwritev2", "read", "readahead", "readlink", "readlinkat", "readv", "recvfrom", "recvmmsg",
      "recvmsg", "removexattr", "rename", "renameat", "renameat2", "restart_syscall", "rmdir", "rseq",
      "rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigqueueinfo", "rt_sigreturn", "rt_sigsuspend",
      "rt_sigtimedwait", "rt_tgsigqueueinfo", "sched_get_priority_max", "sched_get_priority_min",
      "sched_getaffinity", "sched_getattr", "sched_getparam", "sched_getscheduler", "sched_rr_get_interval",
      "sched_setaffinity", "sched_setattr", "sched_setparam", "sched_setscheduler", "sched_yield", "seccomp",
      "select", "semctl", "semget", "semop", "semtimedop", "sendfile", "sendmmsg", "sendmsg", "sendto",
      "set_robust_list", "set_thread_area", "set_tid_address", "setdomainname", "setfsgid", "setfsuid",
      "setgid", "setgroups", "sethostname", "setitimer", "setpgid", "setpriority", "setregid", "setresgid",
      "setresuid", "setreuid", "setrlimit", "setsid", "setsockopt", "setuid", "setxattr", "shmat", "shmctl",
      "shmdt", "shmget", "shutdown", "sigaltstack", "signalfd", "signalfd4", "socketpair", "splice",
      "stat", "statfs", "statx", "symlink", "symlinkat", "sync", "sync_file_range", "syncfs", "sysinfo",
      "tee", "tgkill", "time", "timer_create", "timer_delete", "timer_getoverrun", "timer_gettime",
      "timer_settime", "timerfd_create", "timerfd_gettime", "timerfd_settime", "times", "tkill", "truncate",
      "umask", "uname", "unlink", "unlinkat", "utime", "utimensat", "utimes", "vfork", "vmsplice", "wait4",
      "waitid", "write", "writev",
};

// clone/unshare flags that make namespaces: refused unless nested sandboxes
// are allowed (a new user namespace gives all capabilities back inside it).
constexpr uint64_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                     CLONE_NEWPID | CLONE_NEWNET | 0x80 /* CLONE_NEWTIME */;

const char* const kNestedOnly[] = {"unshare", "setns", "mount", "umount2", "pivot_root", "mount_setattr",
                                   "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick"};

// personality(2) values programs use: Linux, 32-bit Linux, 2.6-style uname,
// and the query (0xffffffff); ADDR_NO_RANDOMIZE and the rest stay denied.
const uint64_t kPersonalities[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};

ojson names(std::initializer_list<const char*> list) {
  ojson a = ojson::array();
  for (const char* n : list) a.push_back(n);
  return a;
}

}  // namespace

// Built with moves, not copies: every copy of the ~300 names is ~300
// allocations, and `husk sandbox` builds this at each start.
ojson default_seccomp(bool allow_nested) {
  ojson all = ojson::array();
  all.get_ref<ojson::array_t&>().reserve(std::size(kAllowed) + std::size(kNestedOnly));
  for (const char* n : kAllowed) all.push_back(n);
  if (allow_nested)
    for (const char* n : kNestedOnly) all.push_back(n);
  ojson syscalls = ojson::array();
  syscalls.push_back({{"names", std::move(all)}, {"action", "SCMP_ACT_ALLOW"}});
  // AF_VSOCK (40) reaches the hypervisor and other VMs past any network
  // namespace. The kernel reads the family as an int, seccomp sees 64 bits:
  // "!= 40" would pass (1 << 32) | 40. So the families allowed are compared
  // whole: below 40, and 41 (AF_KCM) to 45 (AF_MCTP, the last one Linux has);
  // a newer one gets EPERM. Small numbers only: tools that edit config.json
  // (jq) turn integers above 2^53 into floats.
  syscalls.push_back({{"names", names({"socket"})},
                      {"action", "SCMP_ACT_ALLOW"},
                      {"args", {{{"index", 0}, {"value", 40}, {"op", "SCMP_CMP_LT"}}}}});
  for (uint64_t family = 41; family <= 45; ++family)
    syscalls.push_back({{"names", names({"socket"})},
                        {"action", "SCMP_ACT_ALLOW"},
                        {"args", {{{"index", 0}, {"value", family}, {"op", "SCMP_CMP_EQ"}}}}});
  for (uint64_t p : kPersonalities)
    syscalls.push_back({{"names", names({"personality"})},
                        {"action", "SCMP_ACT_ALLOW"},
                        {"args", {{{"index", 0}, {"value", p}, {"op", "SCMP_CMP_EQ"}}}}});
  if (allow_nested) {
    syscalls.push_back({{"names", names({"clone", "clone3"})}, {"action", "SCMP_ACT_ALLOW"}});
    // The keyring stays denied, as ENOSYS: a runtime inside (husk, runc,
    // crun) then skips its own session keyring instead of failing, and its
    // commands, under this filter too, cannot reach the one they inherit.
    syscalls.push_back({{"names", names({"keyctl", "add_key", "request_key"})},
                        {"action", "SCMP_ACT_ERRNO"},
                        {"errnoRet", ENOSYS}});
  } else {
    // clone's flags are its first argument on every architecture husk builds
    // for but s390x (second there): a masked compare there would test the stack.
    const ojson no_namespaces = {{{"index", 0}, {"value", kNamespaceFlags}, {"valueTwo", 0}, {"op", "SCMP_CMP_MASKED_EQ"}}};
    syscalls.push_back({{"names", names({"clone", "unshare"})}, {"action", "SCMP_ACT_ALLOW"}, {"args", no_namespaces}});
    // clone3's flags are behind a pointer seccomp cannot read: ENOSYS makes
    // libc fall back to clone, whose flags it can.
    syscalls.push_back({{"names", names({"clone3"})}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", ENOSYS}});
  }
  return {{"defaultAction", "SCMP_ACT_ERRNO"}, {"defaultErrnoRet", EPERM}, {"syscalls", std::move(syscalls)}};
}

ojson default_config(const ConfigDefaults& d) {
  const ojson caps = {"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"};

  ojson process = {
      {"terminal", true},
      {"user", {{"uid", 0}, {"gid", 0}}},
      {"args", {"sh"}},
      {"env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"}},
      {"cwd", "/"},
      {"capabilities", {{"bounding", caps}, {"effective", caps}, {"permitted", caps}}},
      {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}}},
      {"noNewPrivileges", true},
  };

  auto mount = [](const char* dest, const char* type, const char* source, std::vector<std::string> options) {
    ojson m = {{"destination", dest}, {"type", type}, {"source", source}};
    if (!options.empty()) m["options"] = options;
    return m;
  };
  // Rootless: the devpts gid=5 (tty) is not mapped; sysfs mounts fresh in
  // the container's own network namespace (unlike an rbind of the host's
  // /sys it has no cgroup mounts below, so /sys/fs/cgroup stays read-only)
  // and no cgroup is mounted: the host's hierarchy is not the user's.
  ojson mounts = ojson::array();
  mounts.push_back(mount("/proc", "proc", "proc", {}));
  mounts.push_back(mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}));
  std::vector<std::string> devpts = {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"};
  if (!d.rootless) devpts.push_back("gid=5");
  mounts.push_back(mount("/dev/pts", "devpts", "devpts", devpts));
  mounts.push_back(mount("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}));
  mounts.push_back(mount("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}));
  mounts.push_back(mount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}));
  if (!d.rootless)
    mounts.push_back(mount("/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", "ro"}));

  ojson namespaces = ojson::array();
  for (const char* t : {"pid", "network", "ipc", "uts", "mount", "cgroup"}) namespaces.push_back({{"type", t}});

  ojson linux_cfg = ojson::object();
  if (d.rootless) {
    namespaces.push_back({{"type", "user"}});
    linux_cfg["uidMappings"] = {{{"containerID", 0}, {"hostID", ::geteuid()}, {"size", 1}}};
    linux_cfg["gidMappings"] = {{{"containerID", 0}, {"hostID", ::getegid()}, {"size", 1}}};
  } else {
    linux_cfg["resources"] = {{"devices", {{{"allow", false}, {"access", "rwm"}}}}};
  }
  linux_cfg["namespaces"] = namespaces;
  linux_cfg["maskedPaths"] = {"/proc/acpi",        "/proc/asound",      "/proc/kcore",        "/proc/keys",
                              "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
                              "/sys/firmware",     "/proc/scsi"};
  linux_cfg["readonlyPaths"] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
  if (!d.permissive) linux_cfg["seccomp"] = default_seccomp(false);

  return {
      {"ociVersion", kOciVersionMax},
      {"process", std::move(process)},
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"hostname", "husk"},
      {"mounts", std::move(mounts)},
      {"linux", std::move(linux_cfg)},
  };
}

std::string default_config_json(const ConfigDefaults& d) { return default_config(d).dump(1, '\t') + "\n"; }

}  // namespace husk::spec
