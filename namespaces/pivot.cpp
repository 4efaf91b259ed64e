// Entering the rootfs: pivot_root, or with --no-pivot MS_MOVE + chroot, or
// (a mount namespace the container does not own) only chroot.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/mountinfo.h"
#include "namespaces/internal.h"

namespace husk::ns {

namespace detail {

Fd mount_root_of(int fd, const std::string& what) {
  const uint64_t id = mount_id(fd, what);
  Fd at(openat(fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!at) throw sys_error("open " + what);
  dev_t dev = 0;
  ino_t ino = 0;
  for (;;) {
    struct statx stx{};
    if (statx(at.get(), "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID | STATX_INO, &stx) < 0)
      throw sys_error("statx a directory above " + what);
    if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
      throw Error("find the mount holding " + what + ": the kernel does not say which directory is a mount's root");
    // ".." stays within a mount below its root, so only its root ends the walk.
    if (stx.stx_mnt_id != id) throw Error(what + ": left the mount holding it on the way up");
    if (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) return at;
    // ".." of the process's root is itself: that mount's root is out of reach.
    const dev_t d = makedev(stx.stx_dev_major, stx.stx_dev_minor);
    if (d == dev && stx.stx_ino == ino) throw Error("the root of the mount holding " + what + " is above this root");
    dev = d;
    ino = stx.stx_ino;
    at = Fd(openat(at.get(), "..", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!at) throw sys_error("open a directory above " + what);
  }
}

}  // namespace detail

namespace {

// --no-pivot leaves the old root underneath. While a fully visible host procfs
// or sysfs is anywhere in the mount namespace, the kernel lets the container
// mount a fresh, unmasked one; so detach those first (or cover them).
void hide_host_proc_sys(const std::string& rootfs) {
  auto infos = base::read_mountinfo();
  for (auto it = infos.rbegin(); it != infos.rend(); ++it) {  // children before parents
    const std::string& p = it->mount_point;
    if (it->fstype != "proc" && it->fstype != "sysfs") continue;
    if (p == rootfs || p.rfind(rootfs + "/", 0) == 0) continue;
    // The unmount must not propagate to the host.
    if (mount(nullptr, p.c_str(), nullptr, MS_SLAVE | MS_REC, nullptr) < 0) {
      if (errno == ENOENT || errno == EINVAL) continue;  // already gone with a parent
      throw sys_error("make " + p + " rslave");
    }
    if (umount2(p.c_str(), MNT_DETACH) == 0) continue;
    if (errno != EINVAL && errno != EPERM) throw sys_error("detach host " + it->fstype + " at " + p);
    // Locked under a user namespace: cover it with an empty tmpfs instead.
    if (mount("tmpfs", p.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0)
      throw sys_error("cover host " + it->fstype + " at " + p);
  }
}

}  // namespace

void enter_rootfs(const RootfsOptions& opts, int root, int goes_with_old_root) {
  const std::string& rootfs = opts.rootfs.real;
  if (fchdir(root) < 0) throw sys_error("chdir " + rootfs);
  if (!opts.own_mount_ns) {
    if (chroot(".") < 0) throw sys_error("chroot " + rootfs);
    if (chdir("/") < 0) throw sys_error("chdir / in the rootfs");
    return;
  }
  if (opts.no_pivot) {
    // --no-pivot (rootfs on a ramfs): the old root stays underneath, reachable
    // by a process with CAP_SYS_CHROOT; that is the documented cost of the option.
    hide_host_proc_sys(rootfs);
    // ".": the working directory is the rootfs's own mount.
    if (mount(".", "/", nullptr, MS_MOVE, nullptr) < 0) throw sys_error("move rootfs " + rootfs + " to /");
    if (chroot(".") < 0) throw sys_error("chroot " + rootfs);
    if (chdir("/") < 0) throw sys_error("chdir / in the rootfs");
    return;
  }
  // pivot_root(".", "."): the old root ends up stacked on top of the new one
  // at "/", where it can be detached without needing a directory for it.
  detail::Fd old_root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!old_root) throw sys_error("open the old root");
  if (syscall(SYS_pivot_root, ".", ".") < 0) throw sys_error("pivot_root into " + rootfs);
  // Step onto the old root explicitly: "." must name it, not the new root
  // below it, or the rslave below would also hit the container's own mounts
  // (and drop a "shared" bind mount's propagation).
  if (fchdir(old_root.get()) < 0) throw sys_error("chdir to the old root");
  // Unmounts of the old root must not propagate anywhere (it may be shared
  // with the host when rootfsPropagation asked for that).
  if (mount(nullptr, ".", nullptr, MS_SLAVE | MS_REC, nullptr) < 0) throw sys_error("make the old root rslave");
  // On a directory below the old root's top, not on "." itself: umount2
  // takes the topmost mount there. Without a /proc there it stays detached
  // (its close then pays the unmount).
  if (goes_with_old_root >= 0) {
    detail::Fd below(openat(old_root.get(), "proc", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (below) move_mount(goes_with_old_root, "", below.get(), "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
  }
  if (umount2(".", MNT_DETACH) < 0) throw sys_error("detach the old root");
  if (chdir("/") < 0) throw sys_error("chdir / in the rootfs");
}

}  // namespace husk::ns
