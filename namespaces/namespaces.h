// Namespaces and the container's root filesystem.
// Pure translation (spec -> clone flags, mounts -> steps) is
// separate from the code that makes syscalls, which runs inside the
// container's init between clone and exec.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.h"
#include "base/judged.h"
#include "spec/mount_options.h"
#include "spec/spec.h"

namespace husk::ns {

// ---------- pure ----------

// A namespace type: its spec name, CLONE_NEW* flag and /proc/<pid>/ns/ file.
struct NamespaceKind {
  std::string_view type;
  int flag;
  std::string_view proc_file;
};
// Every type, in the order to join them (setns): user first, mount last.
std::span<const NamespaceKind> namespace_kinds();

// CLONE_NEW* flag for a spec namespace type ("pid", "network", ...); throws on unknown type.
int clone_flag(const std::string& type);
// Its file below /proc/<pid>/ns/ ("net" for "network"); throws on unknown type.
std::string proc_ns_file(const std::string& type);

struct NamespacePlan {
  int clone_flags = 0;  // namespaces to create (those without a path)
  struct Join {
    std::string type;
    std::string path;
    int flag;
    size_t index = 0;  // in linux.namespaces
    // The namespace file the runtime opened and judged (base::judge) before
    // the clone; the init joins it, never the path.
    int fd = -1;
  };
  std::vector<Join> joins;  // in the order to setns: user first, mount last
};
NamespacePlan plan_namespaces(const spec::Linux& linux_cfg);

// "0 1000 1\n..." for /proc/<pid>/uid_map
std::string id_map_text(const std::vector<spec::IdMapping>& maps);

// What the host and the init's namespaces mean for the mounts.
struct MountHost {
  bool cgroup_v1 = false;  // /sys/fs/cgroup holds the host's v1 hierarchies (v1 or hybrid host)
  bool cgroup_ns = false;  // the container has a cgroup namespace (new or joined)
  bool user_ns = false;    // the init is in a user namespace: a new one, or the runtime's own
  // False for a container husk gave no cgroup (rootless, nothing delegated):
  // it stays in its caller's, often the root of each tree.
  bool own_cgroup = true;
};

// How prepare_rootfs mounts one spec.mounts entry, decided without touching
// the system: tests check it without root.
struct MountStep {
  enum class Kind {
    Bind,        // a detached bind (open_tree) of `source`, attached on the destination
    Idmapped,    // the detached idmapped bind the runtime made (or, without a user namespace, made here)
    CgroupV1,    // "cgroup" on a v1/hybrid host: a tmpfs with a directory per host hierarchy
    Filesystem,  // mount(2) of `type` from `source` with options.data
  };
  Kind kind = Kind::Filesystem;
  size_t index = 0;
  std::string what;         // "mounts[2] (/dev)": the context of every error about it
  std::string destination;  // clean_path'ed: a relative one is relative to "/"
  std::string type;         // Filesystem: "cgroup" becomes "cgroup2" on a unified host
  std::string source;       // Bind/Idmapped: the host path; Filesystem: the spec's, or the type when empty
  spec::MountOptions options;  // spec::parse_mount_options; data is cleared for a cgroup2 made from "cgroup"
  bool real_directory = false;  // proc, sysfs: never on a symlink or file (CVE-2019-16884/19921)
  bool inherit_mode = false;    // tmpfs without mode=: the mode of the directory it covers, when there is one
  bool sysfs_fallback = false;  // sysfs in a user namespace: on EPERM, a bind of the host's /sys instead
  bool cgroup_fresh = false;    // CgroupV1: fresh hierarchy mounts (cgroup namespace), else binds of the own cgroup
};

// The step for spec.mounts[index]; throws naming it for an empty destination,
// a missing type, idmap on a non-bind mount or tmpcopyup on a non-tmpfs.
MountStep plan_mount(const spec::Mount& m, size_t index, const MountHost& host);
// "mounts[2] (/data)": how errors name spec.mounts[index] (MountStep::what).
std::string mount_what(size_t index, const spec::Mount& m);
// plan_mount for every spec.mounts entry, in order.
std::vector<MountStep> plan_mounts(const spec::Spec& spec, const MountHost& host);

// Propagation flag for linux.rootfsPropagation: "" -> MS_SLAVE|MS_REC (runc's
// default), "rshared" -> MS_SHARED|MS_REC, ...; throws on an unknown value.
// prepare_rootfs applies it to the container's copy of "/" before mounting
// anything (so host mounts keep flowing in) and makes the mount holding the
// rootfs private, so the container's own mounts never reach the host. When
// the value is set explicitly, finalize_rootfs applies it again to the new "/".
unsigned long rootfs_propagation_flag(const std::string& value);

// Lexically clean an absolute in-container path: collapse //, ., and .. (never above /).
std::string clean_path(const std::string& path);

// The namespace type ("network", "ipc", "uts") that isolates a sysctl key, or
// "" when the key is host-global.
std::string sysctl_namespace(const std::string& key);

// Reject linux.sysctl keys the container's namespaces do not isolate:
// net.* needs a network namespace; kernel.msg*/kernel.sem*/kernel.shm*/fs.mqueue.*
// an ipc one; kernel.hostname/kernel.domainname a uts one; everything else is
// host-global and refused. Keys must be dotted names without '/' or "..".
// A namespace joined by path counts as the container's own (the runtime should
// call check_sysctl_joined() too).
void check_sysctl(const spec::Spec& spec);

// Not pure: for sysctls whose namespace is joined by path, refuse when that
// namespace is the caller's own (call it from the runtime on the host).
// `judged`: linux.namespaces index -> the namespace file the runtime opened.
void check_sysctl_joined(const spec::Spec& spec, const std::map<size_t, int>& judged);

// ---------- syscalls (container init, in its new mount namespace) ----------

// setns into the namespace join.fd (opened by the runtime); errors name type and path.
void join_namespace(const NamespacePlan::Join& join);

// Write linux.timeOffsets to /proc/self/timens_offsets; call right after
// unshare(CLONE_NEWTIME), before any process enters the new time namespace.
void write_time_offsets(const std::map<std::string, spec::TimeOffset>& offsets);

// Bring up "lo" of a network namespace the container init just created
// (callers expect 127.0.0.1 to work, as under runc).
void loopback_up();

struct RootfsOptions {
  // root.path as the runtime judged it (base::judge): found again by its real
  // path in the container's mount namespace, the same device and inode.
  base::Identity rootfs;
  bool no_pivot = false;     // --no-pivot: MS_MOVE + chroot
  bool user_ns = false;      // inside a new user namespace: bind devices instead of mknod
  // No new one, but husk itself runs in a user namespace (rootless podman's):
  // devices are bound there too, and sysfs may be refused as in a new one.
  bool caller_user_ns = false;
  bool own_mount_ns = true;  // a mount namespace of the container (new or joined); false: the caller's, never mounted in
  bool own_cgroup = true;    // MountHost::own_cgroup
  // spec.mounts index -> fd from make_idmapped_mount (not closed by prepare_rootfs).
  std::map<size_t, int> idmapped;
  // spec.mounts index -> the bind source from open_bind_sources (not closed
  // by prepare_rootfs); a bind mount without one has its judged source
  // (judged_sources) found again here, or else its source opened here.
  std::map<size_t, int> sources;
  std::map<size_t, base::Identity> judged_sources;
  // spec.mounts index -> the judged overlay layers (overlay_layers' order),
  // found again here and given to the kernel as /proc/self/fd/N.
  std::map<size_t, std::vector<base::Identity>> judged_layers;
};

// Indexes of spec.mounts whose sources the runtime opens for the init
// (open_bind_sources): with a user namespace and a mount namespace, every bind
// mount that is not idmapped. The container's root is some unprivileged host
// uid, which cannot reach a source below e.g. a root-only directory. None
// when `init_is_runtime_user`: a runtime without root whose init mounts with
// the runtime's own uid and gid (rootless, the caller mapped to the
// namespace's root or to itself) reaches nothing the init cannot (its
// capabilities would be over the init's namespace), so the init opens them.
std::vector<size_t> runtime_opened_sources(const spec::Spec& spec, bool init_is_runtime_user);

// The init's user and mount namespaces and working directory, where
// open_bind_sources works. Opened from `pid` (the init, or the stage-1 helper
// it inherits them from) as soon as its maps are written: an unprivileged
// caller can open /proc/<pid>/ns only while the process is dumpable, and the
// init is not once it runs in its namespaces (CVE-2016-9962).
struct InitNamespaces {
  std::string proc;      // "/proc/<pid>/", for messages
  std::string mnt_path;  // its ns/mnt, or the namespace the spec joins
  base::Fd user, mnt;
  base::Fd cwd;  // empty for a joined namespace: setns() moves the init to its root, as it does the helper
};
// `joined_mnt`: the runtime's judged fd of the mount namespace the spec
// joins (duplicated, never opened by path again), -1 when it joins none.
InitNamespaces open_init_namespaces(const spec::Spec& spec, pid_t pid, int joined_mnt);

// On the host, with the caller's privileges: open (O_PATH) the source of
// each spec.mounts[i], i in `indexes` (its judged identity in `judged`, found
// again by real path; else symlinks followed), in the mount namespace
// of the init `at` (or the one the spec joins) and relative to its
// working directory, so each fd leads to the container's copy of the mount,
// locked flags and all (a tree cloned on the host would let the container
// clear them). A forked helper does it: the caller's own namespaces and cwd
// stay. Returns O_CLOEXEC fds in the order of `indexes`; throws naming the
// mount and its source.
// An idmapped mount among `indexes` comes back as its detached idmapped tree
// (make_idmapped_mount with `userns_fd`, built there for the same reason).
std::vector<int> open_bind_sources(const spec::Spec& spec, const std::vector<size_t>& indexes,
                                   const InitNamespaces& at, const std::map<size_t, base::Identity>& judged,
                                   int userns_fd = -1);

// Build the detached, idmapped bind mount for spec mount `m` (options
// "idmap"/"ridmap", or uidMappings/gidMappings). The kernel only allows this
// to a caller with CAP_SYS_ADMIN over the source filesystem, i.e. root outside
// the container's user namespace: with a user namespace the runtime builds it
// (open_bind_sources, as host root in the container's mount namespace) once
// the namespace exists and passes the fd to the init in RootfsOptions::idmapped. The mapping is m's uidMappings/gidMappings (a
// throwaway user namespace is made for them), else `userns_fd` (the
// container's, e.g. an open /proc/<init>/ns/user). Returns an O_CLOEXEC fd.
// Without a user namespace prepare_rootfs builds idmapped mounts itself.
int make_idmapped_mount(const spec::Mount& m, int userns_fd);

// Make / rslave (or rootfsPropagation), bind the rootfs on itself, mount
// spec.mounts in order (targets resolved inside the rootfs, never following a
// symlink out of it), create /dev nodes and symlinks and linux.devices.
// Bind sources are judged host objects (RootfsOptions::judged_sources), or
// host paths (relative ones against the current directory).
// "cgroup" mounts: on a unified host, cgroup2. On a v1 or hybrid host (as
// runc): a tmpfs (mode 0755, the mount's flags) holding a directory per
// hierarchy the host mounted below /sys/fs/cgroup ("memory", "cpu,cpuacct"
// plus symlinks "cpu" and "cpuacct", "systemd", "unified"). With a cgroup
// namespace in spec.linux.namespaces (already unshared or joined by the
// caller) each gets a fresh mount of its hierarchy, rooted at the container's
// cgroup by the namespace; without one, a bind of the container's own cgroup
// directory (from /proc/self/cgroup: the caller must already be in its
// cgroups). All nosuid,nodev,noexec; "ro" makes the tmpfs and each one read-only.
// After this the createContainer hooks may run; the old root is still visible.
// With !own_mount_ns nothing is mounted (that would change a namespace the
// container does not own): throws if the spec asks for mounts, devices,
// masked/readonly paths or a read-only root.
// Returns the rootfs for enter_rootfs: the bind of it on itself (the judged
// directory itself with !own_mount_ns).
base::Fd prepare_rootfs(const spec::Spec& spec, const RootfsOptions& opts);

// pivot_root into `root` from prepare_rootfs (or MS_MOVE + chroot with
// no_pivot) and chdir("/"). With !own_mount_ns only chroot + chdir("/").
// `goes_with_old_root`: a detached mount (open_private_procfs), or -1. After
// a pivot it is attached inside the old root just before that is detached,
// so its fd stays usable and its last close has nothing left to unmount: a
// detached mount closed on its own is unmounted then, and every unmount
// waits for an expedited RCU grace period (0.1-0.3 ms on the start's path).
void enter_rootfs(const RootfsOptions& opts, int root, int goes_with_old_root = -1);

// A procfs of the caller's pid namespace of its own, detached (nothing in
// the container sees it), read-only and showing processes only
// (subset=pid). Made before the pivot: in a user namespace the kernel grants
// a new procfs only while a whole one is visible in the mount namespace.
// Throws with the kernel's refusal.
base::Fd open_private_procfs();

// The caller's own fd directory (self/fd) on `procfs` from
// open_private_procfs, or (-1) on the container's /proc when that is a
// procfs; an fd reopened through it is checked by the caller. Throws naming
// /proc when there is neither, with `no_procfs`: why there is no procfs of
// the caller's own.
base::Fd open_own_fd_dir(int procfs, const std::string& no_procfs);

// After pivot: rootfsPropagation (when set) on the new "/", sysctl (only onto
// a real procfs at /proc), maskedPaths, readonlyPaths (recursively ro, nosuid,
// nodev, noexec), /dev read-only when its mount asked for "ro", root.readonly.
// No-op for the mount steps when !own_mount_ns (sysctl still written).
void finalize_rootfs(const spec::Spec& spec, const RootfsOptions& opts);

// sethostname/setdomainname when the spec sets them (needs a uts namespace).
void set_hostname(const spec::Spec& spec);

// A mount point at `path` inside `root_fd` (a directory, or a file when
// `as_file`), made with its missing parents without leaving the root, as
// the init makes them; `what` names it in errors. For restore: CRIU binds
// over mount points it expects there.
void make_mount_point(int root_fd, const std::string& path, bool as_file, const std::string& what);

// Open `path` (relative to `root_fd`) without leaving it: openat2 RESOLVE_IN_ROOT.
// Returns an O_CLOEXEC fd; throws Error naming the path.
int open_in_root(int root_fd, const std::string& path, int flags, unsigned mode = 0);

}  // namespace husk::ns
