// After the pivot: rootfsPropagation again, sysctls, maskedPaths,
// readonlyPaths and the read-only /dev and root.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "namespaces/internal.h"

namespace husk::ns {

using namespace detail;

namespace {

void write_sysctls(const spec::Spec& spec, int root_fd) {
  if (!spec.linux_ || spec.linux_->sysctl.empty()) return;
  check_sysctl(spec);
  constexpr uint64_t kStrict = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  // The container's /proc is whatever it mounted there: use it only if it is procfs.
  Fd procsys(raw_openat2(root_fd, "proc/sys", O_PATH | O_DIRECTORY, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
  if (!procsys) throw sys_error("linux.sysctl: open /proc/sys in the container");
  if (!on_procfs(procsys.get())) throw Error("linux.sysctl: /proc/sys in the container is not procfs");
  for (const auto& [key, value] : spec.linux_->sysctl) {
    std::string path = key;
    for (auto& c : path)
      if (c == '.') c = '/';
    Fd fd(raw_openat2(procsys.get(), path, O_WRONLY | O_NOFOLLOW, kStrict));
    if (!fd) throw sys_error("linux.sysctl: open /proc/sys/" + path);
    if (!on_procfs(fd.get())) throw Error("linux.sysctl: /proc/sys/" + path + " is not on procfs");
    ssize_t n = write(fd.get(), value.data(), value.size());
    if (n < 0) throw sys_error("linux.sysctl: write \"" + value + "\" to " + key);
    if (static_cast<size_t>(n) != value.size()) throw Error("linux.sysctl: short write to " + key);
  }
}

// maskedPaths: files get /dev/null over them, directories an empty read-only tmpfs.
void mask_paths(const std::vector<std::string>& paths, int root_fd) {
  Fd null_fd;
  for (const auto& p : paths) {
    std::string what = "maskedPaths: " + p;
    Fd target = open_existing_in_root(root_fd, p, what);
    if (!target) continue;
    if (S_ISDIR(fd_stat(target.get(), what).st_mode)) {
      Fd fs(fsopen("tmpfs", FSOPEN_CLOEXEC));
      if (!fs) throw sys_error(what + ": fsopen tmpfs");
      if (fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) throw sys_error(what + ": create tmpfs");
      Fd mnt(fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
      if (!mnt) throw sys_error(what + ": fsmount tmpfs");
      attach(mnt.get(), target.get(), what);
      continue;
    }
    if (!null_fd) {
      // CVE-2025-31133: the container's /dev/null could be a symlink or bind
      // of something else, which would then be exposed instead of hidden.
      null_fd = Fd(raw_openat2(root_fd, "dev/null", O_PATH | O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
      if (!null_fd) throw sys_error("maskedPaths: open /dev/null in the container");
      struct stat st = fd_stat(null_fd.get(), "/dev/null");
      if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
        throw Error("maskedPaths: /dev/null in the container is not the null device (1:3)");
    }
    Fd tree(open_tree(null_fd.get(), "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (!tree) throw sys_error(what + ": clone /dev/null");
    attach(tree.get(), target.get(), what);
  }
}

void readonly_paths(const std::vector<std::string>& paths, int root_fd) {
  for (const auto& p : paths) {
    std::string what = "readonlyPaths: " + p;
    Fd target = open_existing_in_root(root_fd, p, what);
    if (!target) continue;
    Fd tree(open_tree(target.get(), "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
    if (!tree) throw sys_error(what + ": clone");
    setattr(tree.get(), AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0, 0, what);
    attach(tree.get(), target.get(), what);
  }
}

}  // namespace

void finalize_rootfs(const spec::Spec& spec, const RootfsOptions& opts) {
  Fd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) throw sys_error("open / of the container");
  if (!opts.own_mount_ns) {
    write_sysctls(spec, root.get());
    return;
  }
  if (spec.linux_ && !spec.linux_->rootfs_propagation.empty())
    if (mount(nullptr, "/", nullptr, rootfs_propagation_flag(spec.linux_->rootfs_propagation), nullptr) < 0)
      throw sys_error("linux.rootfsPropagation: set propagation of /");
  write_sysctls(spec, root.get());
  if (spec.linux_) {
    mask_paths(spec.linux_->masked_paths, root.get());
    readonly_paths(spec.linux_->readonly_paths, root.get());
  }
  bool dev_is_bind = false;
  const spec::Mount* dev = dev_mount(spec, &dev_is_bind);
  if (dev && !dev_is_bind && (spec::parse_mount_options(dev->options).flags & MS_RDONLY)) {
    Fd d(raw_openat2(root.get(), "dev", O_PATH | O_DIRECTORY, kInRoot));
    if (!d) throw sys_error("open /dev to make it read-only");
    setattr(d.get(), 0, MOUNT_ATTR_RDONLY, 0, 0, "/dev");
  }
  if (spec.root && spec.root->readonly) setattr(root.get(), 0, MOUNT_ATTR_RDONLY, 0, 0, "/ (root.readonly)");
}

}  // namespace husk::ns
