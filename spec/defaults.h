// The configs husk writes itself: `husk spec` and the base of `husk sandbox`.
#pragma once

#include <nlohmann/json.hpp>

namespace husk::spec {

struct ConfigDefaults {
  // A user namespace mapping 0 to geteuid()/getegid() (size 1); no
  // linux.resources, cgroup mount or devpts gid=5 (none is the user's).
  bool rootless = false;
  // runc's template as it is, without default_seccomp() (`spec --permissive`).
  bool permissive = false;
};

// The `husk spec` template (ociVersion kOciVersionMax): runc's, with hostname
// "husk", a cgroup namespace and, unless permissive, default_seccomp(false).
nlohmann::ordered_json default_config(const ConfigDefaults& d);
// default_config() as `husk spec` writes it (tab-indented, newline-terminated).
std::string default_config_json(const ConfigDefaults& d);

// linux.seccomp of the secure defaults, for the native architecture only (a
// syscall of another ABI kills the process): an allowlist whose default is
// EPERM, so a syscall it does not name fails and one newer than its newest
// fails with ENOSYS (libc falls back). Denied beyond Docker's default:
// ptrace, process_vm_*, kcmp, pidfd_getfd, io_uring_*, userfaultfd, the
// NUMA placement calls, personality flags other than the 32-bit/uname ones,
// AF_VSOCK sockets (as Docker's).
// allow_nested: namespaces and mounts are allowed (clone/clone3 with
// CLONE_NEW*, unshare, setns, the mount API), for a sandbox or runtime run
// inside; they still need capabilities, which a new user namespace gives.
// The keyring calls fail with ENOSYS there instead of EPERM (runtimes skip
// their session keyring on ENOSYS).
nlohmann::ordered_json default_seccomp(bool allow_nested);

}  // namespace husk::spec
