#include "base/judged.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>

#include "base/error.h"

namespace husk::base {

bool same_object(const struct stat& st, const Identity& id) { return st.st_dev == id.dev && st.st_ino == id.ino; }

namespace {

// Absolute, and no empty, "." or ".." component: the kernel's name for
// what it opens without crossing a symlink.
bool plain_absolute(const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  if (path == "/") return true;
  for (size_t i = 1; i <= path.size();) {
    const size_t end = std::min(path.find('/', i), path.size());
    const std::string_view comp(path.data() + i, end - i);
    if (comp.empty() || comp == "." || comp == "..") return false;
    i = end + 1;
  }
  return true;
}

}  // namespace

Judged judge(const std::string& path, int flags, const std::string& field) {
  Judged j;
  j.field = field;
  j.opened = path;
  // Opened without following a symlink or a magic link, a plain path is
  // the object's real path: /proc/self/fd/N would say the same (a readlink
  // through /proc for each bind source, where the sandbox has dozens).
  if (plain_absolute(path)) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    j.fd = Fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how)));
    struct stat st;
    if (j.fd && ::fstat(j.fd.get(), &st) == 0) {
      j.id = {path, st.st_dev, st.st_ino};
      return j;
    }
  }
  // A symlink on the way (or an error, said below): the kernel names it.
  j.fd = Fd(::open(path.c_str(), flags | O_CLOEXEC));
  if (!j.fd) throw sys_error(field + ": open " + path);
  struct stat st;
  if (::fstat(j.fd.get(), &st) != 0) throw sys_error(field + ": stat " + path);
  char buf[PATH_MAX];
  const std::string link = "/proc/self/fd/" + std::to_string(j.fd.get());
  ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
  if (n < 0) throw sys_error(field + ": read " + link + " (" + path + ")");
  j.id = {std::string(buf, static_cast<size_t>(n)), st.st_dev, st.st_ino};
  return j;
}

Fd reopen_judged(const Identity& id, int flags, const std::string& field) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, id.real.c_str(), &how, sizeof how));
  // ENOENT, ELOOP (a symlink now), EXDEV: something was moved since.
  if (fd < 0 && (errno == ENOENT || errno == ELOOP || errno == ENOTDIR || errno == EXDEV))
    throw Error(field + ": changed since it was checked (" + id.real + " is gone)", errno);
  if (fd < 0) throw sys_error(field + ": open " + id.real + " again");
  Fd out(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) throw sys_error(field + ": stat " + id.real);
  if (!same_object(st, id)) throw Error(field + ": changed since it was checked (" + id.real + " is another file)");
  return out;
}

}  // namespace husk::base
