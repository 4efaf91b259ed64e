// The fd-based mount API (open_tree, move_mount, mount_setattr, fsopen):
// mounts are built detached, with their flags set before anything in the
// container can see them, and attached to an fd, never to a path.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "namespaces/internal.h"

namespace husk::ns::detail {

uint64_t mount_id(int fd, const std::string& what) {
  struct statx stx{};
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0)
    throw sys_error("statx " + what);
  return stx.stx_mnt_id;
}

void setattr(int fd, unsigned flags, uint64_t set, uint64_t clr, uint64_t propagation,
             const std::string& what) {
  struct mount_attr a{};
  a.attr_set = set;
  a.attr_clr = clr;
  a.propagation = propagation;
  if (mount_setattr(fd, "", AT_EMPTY_PATH | flags, &a, sizeof a) < 0)
    throw sys_error("set mount attributes on " + what);
}

void set_recursive_attrs(int fd, const spec::MountOptions& mo, const std::string& what) {
  if (mo.attr_set || mo.attr_clr) setattr(fd, AT_RECURSIVE, mo.attr_set, mo.attr_clr, 0, what);
}

void set_propagation(int fd, const spec::MountOptions& mo, const std::string& what) {
  if (mo.propagation)
    setattr(fd, (mo.propagation & MS_REC) ? AT_RECURSIVE : 0, 0, 0, mo.propagation & ~MS_REC, what);
}

void attach(int tree, int target, const std::string& what) {
  if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    throw sys_error("mount on " + what);
}

std::pair<uint64_t, uint64_t> attrs_of_flags(unsigned long f) {
  uint64_t set = 0, clr = 0;
  if (f & MS_RDONLY) set |= MOUNT_ATTR_RDONLY;
  if (f & MS_NOSUID) set |= MOUNT_ATTR_NOSUID;
  if (f & MS_NODEV) set |= MOUNT_ATTR_NODEV;
  if (f & MS_NOEXEC) set |= MOUNT_ATTR_NOEXEC;
  if (f & MS_NODIRATIME) set |= MOUNT_ATTR_NODIRATIME;
  if (f & MS_NOSYMFOLLOW) set |= MOUNT_ATTR_NOSYMFOLLOW;
  if (f & (MS_NOATIME | MS_STRICTATIME | MS_RELATIME)) {
    clr |= MOUNT_ATTR__ATIME;
    set |= (f & MS_NOATIME) ? MOUNT_ATTR_NOATIME
           : (f & MS_STRICTATIME) ? MOUNT_ATTR_STRICTATIME
                                  : MOUNT_ATTR_RELATIME;
  }
  return {set, clr};
}

Fd open_source(const std::string& source, const std::string& what) {
  Fd fd(open(source.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) throw sys_error(what + ": open bind source " + source);
  return fd;
}

// Built detached so that its flags, recursive attributes (and idmapping) are
// set before anything in the container can see it, and without remounting
// (which could clear locked flags).
Fd bind_tree(int source_fd, const std::string& source, const spec::MountOptions& mo, const std::string& what) {
  unsigned ot = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (mo.recursive_bind ? AT_RECURSIVE : 0);
  Fd tree(open_tree(source_fd, "", ot));
  if (!tree) throw sys_error(what + ": clone bind source " + source);
  // Only attributes are set here, never cleared: "rw" on a bind of a
  // read-only mount keeps it read-only, like a plain MS_BIND does.
  auto [set, clr] = attrs_of_flags(mo.flags);
  if (set || clr) setattr(tree.get(), 0, set, clr, 0, what);
  set_recursive_attrs(tree.get(), mo, what);
  return tree;
}

// The kernel does not take propagation changes on a detached mount: they
// follow the attach.
void attach_tree(int tree, int target, const spec::MountOptions& mo, const std::string& what) {
  attach(tree, target, what);
  set_propagation(tree, mo, what);
}

Fd bind_mount(int source_fd, const std::string& source, int target, const spec::MountOptions& mo,
              const std::string& what) {
  Fd tree = bind_tree(source_fd, source, mo, what);
  attach_tree(tree.get(), target, mo, what);
  return tree;
}

Fd try_fs_mount(const std::string& fstype, const std::string& source, const std::vector<std::string>& options,
                uint64_t attrs, std::string* failed) {
  auto fail = [&](const std::string& step) {
    const int err = errno;
    if (failed) *failed = step;
    errno = err;
    return Fd();
  };
  Fd fs(fsopen(fstype.c_str(), FSOPEN_CLOEXEC));
  if (!fs) return fail("fsopen " + fstype);
  if (fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", source.c_str(), 0) < 0)
    return fail("set the source of " + fstype);
  for (const auto& o : options) {
    size_t eq = o.find('=');
    int rc = eq == std::string::npos
                 ? fsconfig(fs.get(), FSCONFIG_SET_FLAG, o.c_str(), nullptr, 0)
                 : fsconfig(fs.get(), FSCONFIG_SET_STRING, o.substr(0, eq).c_str(), o.substr(eq + 1).c_str(), 0);
    if (rc < 0) return fail(fstype + " option " + o);
  }
  if (fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) return fail("create " + fstype);
  Fd mnt(fsmount(fs.get(), FSMOUNT_CLOEXEC, static_cast<unsigned>(attrs)));
  if (!mnt) return fail("fsmount " + fstype);
  return mnt;
}

Fd new_fs_mount(const std::string& fstype, const std::vector<std::string>& options, uint64_t attrs,
                const std::string& what) {
  std::string failed;
  Fd mnt = try_fs_mount(fstype, fstype, options, attrs, &failed);
  if (!mnt) throw sys_error(what + ": " + failed);
  return mnt;
}

}  // namespace husk::ns::detail

namespace husk::ns {

using detail::Fd;

base::Fd open_private_procfs() {
  // Read-only: a container that mounts its /proc "ro" must not get a
  // writable one through the init's fd.
  return detail::new_fs_mount("proc", {"subset=pid"},
                              MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                              "a procfs of the init's own");
}

base::Fd open_own_fd_dir(int procfs, const std::string& no_procfs) {
  if (procfs >= 0) {
    Fd fds(::openat(procfs, "self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!fds) throw sys_error("open self/fd in the init's own procfs");
    return fds;
  }
  const std::string why = " (the init has no procfs of its own: " + no_procfs + ")";
  // "self" is procfs' own symlink to our pid: followed only inside a procfs.
  Fd proc(::open("/proc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!proc || !detail::on_procfs(proc.get())) throw Error("/proc in the container is not a procfs" + why);
  Fd fds(::openat(proc.get(), "self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fds) throw sys_error("open /proc/self/fd in the container" + why);
  if (!detail::on_procfs(fds.get())) throw Error("/proc/self/fd in the container is not on a procfs" + why);
  return fds;
}

}  // namespace husk::ns
