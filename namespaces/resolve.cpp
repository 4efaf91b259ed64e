// Paths inside the untrusted rootfs: resolved with openat2 RESOLVE_IN_ROOT,
// created component by component below fds already known to be inside it.
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "namespaces/internal.h"

namespace husk::ns {

namespace detail {

int raw_openat2(int dirfd, const std::string& path, uint64_t flags, uint64_t resolve, uint64_t mode) {
  struct open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = mode;
  how.resolve = resolve;
  int fd = -1;
  // A concurrent rename or mount makes RESOLVE_IN_ROOT answer EAGAIN: retry a few times.
  for (int tries = 0; tries < 32; ++tries) {
    fd = static_cast<int>(syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how));
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}

std::string rel(const std::string& container_path) {
  std::string c = clean_path(container_path);
  return c == "/" ? "." : c.substr(1);
}

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

struct stat fd_stat(int fd, const std::string& what) {
  struct stat st{};
  if (fstat(fd, &st) < 0) throw sys_error("stat " + what);
  return st;
}

std::string fd_link(int fd) {
  char buf[PATH_MAX];
  ssize_t n = readlink(fd_path(fd).c_str(), buf, sizeof buf - 1);
  if (n < 0) throw sys_error("readlink " + fd_path(fd));
  return std::string(buf, static_cast<size_t>(n));
}

std::string path_in_root(const std::string& root, int fd) {
  std::string p = fd_link(fd);
  if (root == "/") return p;
  if (p == root) return "/";
  if (p.compare(0, root.size() + 1, root + "/") == 0) return p.substr(root.size());
  throw Error(p + " is outside the rootfs " + root);
}

namespace {

// One walk of ensure_in_root over `r` (relative to the root). Returns the fd
// of the last component, or an empty Fd after replacing `r` with the path to
// walk instead: a dangling symlink was in the way. `known_missing`: `r`
// itself was just looked up and is not there (its lookup is not repeated).
Fd walk_creating(int root_fd, std::string& r, bool as_file, const std::string& what, bool known_missing) {
  Fd parent(raw_openat2(root_fd, ".", O_PATH | O_DIRECTORY, kInRoot));
  if (!parent) throw sys_error("open the rootfs");
  std::string prefix;
  for (size_t i = 0; i < r.size();) {
    size_t j = r.find('/', i);
    if (j == std::string::npos) j = r.size();
    std::string comp = r.substr(i, j - i);
    bool last = j == r.size();
    prefix += (prefix.empty() ? "" : "/") + comp;
    Fd cur;
    if (!(last && known_missing)) {
      cur = Fd(raw_openat2(root_fd, prefix, O_PATH, kInRoot));
      if (!cur && errno != ENOENT) throw sys_error("open /" + prefix + " in the rootfs for " + what);
    }
    if (!cur) {
      int rc;
      if (last && as_file) {
        rc = openat(parent.get(), comp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (rc >= 0) close(rc);
      } else {
        rc = mkdirat(parent.get(), comp.c_str(), 0755);
      }
      if (rc < 0 && errno != EEXIST) throw sys_error("create /" + prefix + " in the rootfs for " + what);
      cur = Fd(raw_openat2(root_fd, prefix, O_PATH, kInRoot));
      if (!cur && errno == ENOENT) {
        // A dangling symlink is in the way: splice its target into the path
        // (relative to the real location of its directory) and walk again.
        char target[PATH_MAX];
        ssize_t n = readlinkat(parent.get(), comp.c_str(), target, sizeof target - 1);
        if (n < 0) throw sys_error("open /" + prefix + " in the rootfs for " + what);
        std::string t(target, static_cast<size_t>(n));
        std::string base = t[0] == '/' ? "" : path_in_root(fd_link(root_fd), parent.get());
        r = rel(base + "/" + t + "/" + r.substr(std::min(j + 1, r.size())));
        return Fd();
      }
      if (!cur) throw sys_error("open /" + prefix + " in the rootfs for " + what);
    }
    if (!last && !S_ISDIR(fd_stat(cur.get(), what).st_mode))
      throw Error("open " + what + ": /" + prefix + " in the rootfs is not a directory", ENOTDIR);
    parent = std::move(cur);
    i = j + 1;
  }
  return parent;
}

}  // namespace

// A dangling symlink is followed (inside the root) and its target created, as
// runc does for images with e.g. /var/run -> /run and no /run.
Fd ensure_in_root(int root_fd, const std::string& path, bool as_file, const std::string& what) {
  std::string r = rel(path);
  int fd = raw_openat2(root_fd, r, O_PATH, kInRoot);
  if (fd >= 0) return Fd(fd);
  if (errno != ENOENT) throw sys_error("open " + what);
  for (int links = 0; links < 40; ++links)
    if (Fd found = walk_creating(root_fd, r, as_file, what, links == 0)) return found;
  throw Error("open " + what + ": too many levels of symbolic links", ELOOP);
}

// A symlink as the last component is refused even if it points inside the
// rootfs: LSM policies are written against the path /proc.
Fd real_dir_in_root(int root_fd, const std::string& dest, const std::string& type, const std::string& what) {
  size_t slash = dest.rfind('/');
  Fd parent = ensure_in_root(root_fd, dest.substr(0, slash), false, what);
  std::string base = dest.substr(slash + 1);
  if (base.empty()) return parent;
  if (mkdirat(parent.get(), base.c_str(), 0755) < 0 && errno != EEXIST) throw sys_error("create " + what);
  Fd self(openat(parent.get(), base.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!self) throw sys_error("open " + what);
  if (!S_ISDIR(fd_stat(self.get(), what).st_mode))
    throw Error(what + ": " + type + " must be mounted on a directory, not a symlink or file", ENOTDIR);
  return self;
}

Fd open_existing_in_root(int root_fd, const std::string& path, const std::string& what) {
  Fd fd(raw_openat2(root_fd, rel(path), O_PATH, kInRoot));
  if (!fd && errno != ENOENT && errno != ENOTDIR) throw sys_error(what);
  return fd;
}

bool on_procfs(int fd) {
  struct statfs sf{};
  return fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

}  // namespace detail

void make_mount_point(int root_fd, const std::string& path, bool as_file, const std::string& what) {
  detail::ensure_in_root(root_fd, path, as_file, what);
}

int open_in_root(int root_fd, const std::string& path, int flags, unsigned mode) {
  int fd = detail::raw_openat2(root_fd, detail::rel(path), static_cast<uint64_t>(flags), detail::kInRoot, mode);
  if (fd < 0) throw sys_error("open " + path + " in the container root");
  return fd;
}

}  // namespace husk::ns
