// Entering the rootfs: pivot_root, or with --no-pivot MS_MOVE + chroot, or
// (a mount namespace the container does not own) only chroot.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/mountinfo.h"
#include "namespaces/internal.h"

namespace husk::ns {

namespace detail {

Fd mount_root_of(int fd, const std::string& what) {
  uint64_t id = mount_id(fd, what);
  for (const auto& mi : base::read_mountinfo()) {
    if (mi.id != id) continue;
    // Found by name, so only taken when it is that very mount.
    Fd root(raw_openat2(AT_FDCWD, mi.mount_point, O_PATH | O_DIRECTORY, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
    if (!root) throw sys_error("open " + mi.mount_point + ", the mount holding " + what);
    if (mount_id(root.get(), mi.mount_point) != id)
      throw Error(mi.mount_point + ": not the mount holding " + what + " any more");
    return root;
  }
  throw Error("find the mount holding " + what + " in /proc/self/mountinfo");
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

void enter_rootfs(const RootfsOptions& opts, int root) {
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
  if (umount2(".", MNT_DETACH) < 0) throw sys_error("detach the old root");
  if (chdir("/") < 0) throw sys_error("chdir / in the rootfs");
}

}  // namespace husk::ns
