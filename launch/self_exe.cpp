#include "launch/self_exe.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/mount.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/error.h"
#include "base/fd.h"

extern char** environ;

namespace husk::rt {

using base::Fd;
namespace {

// Set across the re-exec only, so a copy that still is not protected (a
// kernel that lies about the mount) fails instead of re-executing forever.
constexpr const char* kReexecMarker = "_HUSK_PROTECTED_REEXEC";

bool cannot_be_written(int fd) {
  struct statvfs sv;
  if (::fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY)) return true;
  int seals = ::fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & F_SEAL_WRITE) && (seals & F_SEAL_SEAL);
}

// Only host root may write the file, and we are neither root nor hold (or
// may raise) a capability: no process of a container we start can write it
// either. Its capabilities are over a user namespace we made, which cannot
// map root (nor reach a file whose owner it does not map). Mode bits and
// ACLs decide only on local file systems (NFS, CIFS, FUSE ask a server);
// any ACL may grant more. Otherwise the binary is copied as before.
bool only_root_writes(int fd) {
  if (::geteuid() == 0) return false;
  __user_cap_header_struct head{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2]{};
  if (::syscall(SYS_capget, &head, caps) != 0 || caps[0].effective || caps[1].effective || caps[0].permitted ||
      caps[1].permitted)
    return false;
  struct statfs sf;
  if (::fstatfs(fd, &sf) != 0) return false;
  switch (sf.f_type) {
    case EXT4_SUPER_MAGIC: case XFS_SUPER_MAGIC: case BTRFS_SUPER_MAGIC: case F2FS_SUPER_MAGIC:
    case TMPFS_MAGIC: case OVERLAYFS_SUPER_MAGIC:
      break;
    default:
      return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) return false;
  return ::fgetxattr(fd, "system.posix_acl_access", nullptr, 0) < 0 &&
         (errno == ENODATA || errno == EOPNOTSUPP);
}

// One detached read-only overlay with `top` over `below`. "lowerdir" works
// on every kernel but takes ':' and ',' as separators; a path holding one
// goes through "lowerdir+" (Linux 6.8), which takes each path verbatim
// (older kernels pass the key on to the legacy option string, and only
// CMD_CREATE refuses it).
Fd mount_overlay(const std::string& top, const std::string& below) {
  Fd fs(static_cast<int>(::syscall(SYS_fsopen, "overlay", FSOPEN_CLOEXEC)));
  if (!fs) return Fd();
  auto set = [&](const char* key, const std::string& value) {
    return ::syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_STRING, key, value.c_str(), 0) == 0;
  };
  bool plain = (top + below).find_first_of(":,\\") == std::string::npos;
  if (plain ? !set("lowerdir", top + ":" + below) : !(set("lowerdir+", top) && set("lowerdir+", below)))
    return Fd();
  // Inode numbers are not needed, and xino's warnings would fill the kernel log.
  set("xino", "off");
  if (::syscall(SYS_fsconfig, fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) return Fd();
  return Fd(static_cast<int>(
      ::syscall(SYS_fsmount, fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOSUID)));
}

// The binary as seen through a detached read-only overlay of its directory:
// the mount is attached nowhere and disappears with the last process using it.
// Without an upper layer overlayfs wants two lower ones; the second is
// `below` (husk's own, root's only; what it holds does not matter: the
// binary's directory is above it). A detached tmpfs would need no directory,
// but overlayfs takes those only since Linux 6.8 (6.1 refuses them).
int open_through_overlay(const std::string& exe, const std::string& below) {
  auto slash = exe.rfind('/');
  if (slash == std::string::npos) return -1;
  std::string dir = slash == 0 ? "/" : exe.substr(0, slash), name = exe.substr(slash + 1);
  if (::mkdir(below.c_str(), 0700) != 0 && errno != EEXIST) return -1;
  // Through an fd: a symlink planted there is not followed.
  Fd below_fd(::open(below.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!below_fd) return -1;
  const std::string below_path = "/proc/self/fd/" + std::to_string(below_fd.get());
  Fd mnt = mount_overlay(dir, below_path);
  if (!mnt) return -1;
  return ::openat(mnt.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

// The copy ensure_protected_binary re-executes: a sealed memfd or a file on
// its detached overlay (a husk installed read-only runs from neither).
bool is_protected_copy(int fd) {
  struct statfs sf;
  if (::fstatfs(fd, &sf) == 0 && sf.f_type == OVERLAYFS_SUPER_MAGIC) return true;
  int seals = ::fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & F_SEAL_WRITE);
}

int sealed_memfd_copy(int src) {
  struct stat st;
  if (::fstat(src, &st) != 0) throw sys_error("stat /proc/self/exe");
  Fd mem(static_cast<int>(::syscall(SYS_memfd_create, "husk", MFD_CLOEXEC | MFD_ALLOW_SEALING)));
  if (!mem) throw sys_error("memfd_create for a sealed copy of husk");
  for (off_t off = 0; off < st.st_size;) {
    ssize_t n = ::sendfile(mem.get(), src, &off, static_cast<size_t>(st.st_size - off));
    if (n <= 0) throw sys_error("copy husk into a memfd");
  }
  if (::fcntl(mem.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    throw sys_error("seal the memfd copy of husk");
  return mem.release();
}

// The installed binary's path as the marker carried it across the re-exec
// (the protected copy's /proc/self/exe names the copy, not the install).
std::string& carried_path() {
  static std::string path;
  return path;
}

}  // namespace

std::string own_binary_path() {
  if (!carried_path().empty()) return carried_path();
  char path[4096];
  ssize_t len = ::readlink("/proc/self/exe", path, sizeof path - 1);
  return len > 0 ? std::string(path, static_cast<size_t>(len)) : "";
}

std::string companion_path(const std::string& name) {
  std::string self = own_binary_path();
  std::string dir = self.substr(0, self.rfind('/') + 1);
  std::string beside = dir + name, installed = dir + "../libexec/husk/" + name;
  return ::access(beside.c_str(), X_OK) != 0 && ::access(installed.c_str(), X_OK) == 0 ? installed : beside;
}

void ensure_protected_binary(char** argv, const std::string& scratch_dir) {
  const char* marker = std::getenv(kReexecMarker);
  bool reexeced = marker != nullptr;
  const std::string carried = marker ? marker : "";
  ::unsetenv(kReexecMarker);  // hooks inherit our environment
  Fd self(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  if (!self) throw sys_error("open /proc/self/exe");
  if (cannot_be_written(self.get()) || only_root_writes(self.get())) {
    // Believed from our own copy only: a husk installed read-only does not
    // re-execute, and would take from its caller's environment where
    // husk-systemd (run as root) is.
    if (reexeced && is_protected_copy(self.get())) carried_path() = carried;
    return;
  }
  if (reexeced) throw Error("re-executed husk from a protected copy, but /proc/self/exe is still writable");

  char path[4096];
  ssize_t len = ::readlink("/proc/self/exe", path, sizeof path - 1);
  Fd copy;
  // Without root no overlay can be mounted: straight to the copy.
  bool have_scratch = ::geteuid() == 0 && (::mkdir(scratch_dir.c_str(), 0700) == 0 || errno == EEXIST);
  if (len > 0 && path[0] == '/' && have_scratch)
    copy.reset(open_through_overlay(std::string(path, static_cast<size_t>(len)), scratch_dir + "/.exe-lower"));
  // The overlay finds the binary again by path: it must still be the file we
  // run (not one replaced meanwhile), else the copy is made from ours.
  struct stat mine, seen;
  if (copy && (::fstat(self.get(), &mine) != 0 || ::fstat(copy.get(), &seen) != 0 || mine.st_size != seen.st_size ||
               mine.st_mtim.tv_sec != seen.st_mtim.tv_sec || mine.st_mtim.tv_nsec != seen.st_mtim.tv_nsec))
    copy.reset();
  if (!copy || !cannot_be_written(copy.get())) copy.reset(sealed_memfd_copy(self.get()));
  ::setenv(kReexecMarker, len > 0 ? std::string(path, static_cast<size_t>(len)).c_str() : "", 1);
  ::syscall(SYS_execveat, copy.get(), "", argv, environ, AT_EMPTY_PATH);
  throw sys_error("re-execute husk from a protected copy");
}

}  // namespace husk::rt
