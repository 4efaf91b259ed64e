// What the rootfs files of husk_namespaces share; not part of the library's
// interface (that is namespaces.h).
//
// The rootfs is untrusted: any path inside it may be a symlink meant to make us
// mount over a host path. So every target is resolved with openat2
// RESOLVE_IN_ROOT to an O_PATH fd, created component by component relative to
// an already-verified parent fd, and mounts are attached to that fd (via the
// new mount API or /proc/self/fd/N), never to a path string re-resolved later.
#pragma once

#include <linux/openat2.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "namespaces/namespaces.h"

namespace husk::ns::detail {

using base::Fd;

// ---------- resolve.cpp: paths inside the rootfs ----------

constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;

// openat2 (O_CLOEXEC added) without throwing: returns -1 with errno set.
int raw_openat2(int dirfd, const std::string& path, uint64_t flags, uint64_t resolve, uint64_t mode = 0);

// "/a/b" -> "a/b"; "/" -> "." (openat2 needs a non-empty path).
std::string rel(const std::string& container_path);

std::string fd_path(int fd);  // "/proc/self/fd/<fd>"
struct stat fd_stat(int fd, const std::string& what);

// What /proc/self/fd/<fd> names: where `fd` is in our mount namespace.
std::string fd_link(int fd);
// Where `fd` is, as a path inside the root whose fd_link is `root` ("/" for
// the root itself).
std::string path_in_root(const std::string& root, int fd);

// Resolve `path` inside the root, creating what is missing: directories for
// the parents, and for the last component a directory or (as_file) an empty
// file. A symlink can only redirect us to somewhere else inside the root.
Fd ensure_in_root(int root_fd, const std::string& path, bool as_file, const std::string& what);

// For proc and sysfs (CVE-2019-16884, CVE-2019-19921): like ensure_in_root,
// but the last component must be a real directory, not a symlink.
Fd real_dir_in_root(int root_fd, const std::string& dest, const std::string& type, const std::string& what);

// `path` inside the root, or an empty Fd when it (or a parent) does not exist.
Fd open_existing_in_root(int root_fd, const std::string& path, const std::string& what);

bool on_procfs(int fd);

// ---------- mount_api.cpp: the fd-based mount API ----------

uint64_t mount_id(int fd, const std::string& what);
void setattr(int fd, unsigned flags, uint64_t set, uint64_t clr, uint64_t propagation, const std::string& what);
// mo's recursive attributes (rro, rnosuid, ...) on the mount `fd` and all below it.
void set_recursive_attrs(int fd, const spec::MountOptions& mo, const std::string& what);
// mo's propagation on the attached mount `fd` (detached ones do not take it).
void set_propagation(int fd, const spec::MountOptions& mo, const std::string& what);
// Attach the detached mount `tree` on top of `target` (both fds).
void attach(int tree, int target, const std::string& what);
// MS_* per-mount flags -> MOUNT_ATTR_* {set, clear}.
std::pair<uint64_t, uint64_t> attrs_of_flags(unsigned long flags);

// A bind source, symlinks followed: sources are host paths the caller chose.
Fd open_source(const std::string& source, const std::string& what);
// A detached bind of `source_fd` (named `source`) with mo's flags and
// recursive attributes already set.
Fd bind_tree(int source_fd, const std::string& source, const spec::MountOptions& mo, const std::string& what);
// attach, then mo's propagation.
void attach_tree(int tree, int target, const spec::MountOptions& mo, const std::string& what);
// bind_tree + attach_tree; returns the attached mount.
Fd bind_mount(int source_fd, const std::string& source, int target, const spec::MountOptions& mo,
              const std::string& what);
// A new detached mount of `fstype` from `source` with `options` ("key=value"
// or a flag) and the MOUNT_ATTR_* `attrs`: fsopen, fsconfig, fsmount. Empty
// on failure, errno set and `failed` naming the step.
Fd try_fs_mount(const std::string& fstype, const std::string& source, const std::vector<std::string>& options,
                uint64_t attrs, std::string* failed = nullptr);
// try_fs_mount from `fstype` itself; throws naming `what` and the step.
Fd new_fs_mount(const std::string& fstype, const std::vector<std::string>& options, uint64_t attrs,
                const std::string& what);

// ---------- idmap.cpp ----------

// A user namespace holding only m's uidMappings/gidMappings, mapped by
// write_id_maps; `what` as mount_what says (its "mounts[N]" names the fields).
Fd userns_with_mappings(const spec::Mount& m, const std::string& what);
// The detached idmapped bind of m.source (see make_idmapped_mount), or of
// the `judged` source found again by its real path.
Fd idmapped_tree(const spec::Mount& m, int userns_fd, const std::string& what,
                 const base::Identity* judged = nullptr);

// ---------- cgroup_v1.cpp ----------

// One cgroup hierarchy mounted by the host directly below /sys/fs/cgroup.
struct HostHierarchy {
  std::string name;                  // "memory", "cpu,cpuacct", "systemd", "unified"
  std::string mount_point, root;     // on the host; root is the mount's root in the hierarchy
  bool v2 = false;
  std::vector<std::string> options;  // v1 super options naming it: {"memory"}, {"name=systemd"}
};

// The hierarchies of a cgroup v1 or hybrid host, in mount order; empty on a
// unified host.
std::vector<HostHierarchy> host_v1_hierarchies();

// A "cgroup" mount on a v1/hybrid host (MountStep::Kind::CgroupV1) on `target`.
void mount_cgroup_v1(int target, const std::vector<HostHierarchy>& hierarchies, const MountStep& step);

// ---------- tmpcopyup.cpp ----------

// Copy the tree under the directory `from` into the directory `to` (a new
// tmpfs), never following a symlink.
void copy_tree(int from, int to, const std::string& where, int depth = 0);

// ---------- dev.cpp ----------

// The mount at /dev, if spec.mounts has one; *is_bind says whether it is a bind
// mount (its devices are then the host's and left alone, as runc does).
const spec::Mount* dev_mount(const spec::Spec& spec, bool* is_bind);

// The default devices, the /dev symlinks, linux.devices and /dev/ptmx.
void setup_dev(int root_fd, const spec::Spec& spec, const RootfsOptions& opts);

// ---------- pivot.cpp ----------

// The root of the mount holding `fd` (named `what`): up through ".." from
// it to the directory statx calls a mount's root (no mount table read, no
// path looked up by name).
Fd mount_root_of(int fd, const std::string& what);

}  // namespace husk::ns::detail
