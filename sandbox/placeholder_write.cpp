// A placeholder's directory the user took write permission from: given u+w
// back for the one step (placeholders.cpp), and what is left said.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/printable.h"
#include "sandbox/internal.h"

namespace husk::rt {

bool with_owner_write(int dir, const std::function<int()>& step) {
  if (step() == 0) return true;
  if (errno != EACCES) return false;
  // As the user: only a directory of theirs, which they (and the command,
  // `chmod 555 .`, `chmod 0 .git`) could open again themselves. Changed
  // through the fd the placeholder was made by (its /proc link, an O_PATH
  // fd has no fchmod), no name looked up again; its mode put back.
  const std::string self = "/proc/self/fd/" + std::to_string(dir);
  struct stat st;
  constexpr mode_t kNeeded = S_IWUSR | S_IXUSR;
  if (::fstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & kNeeded) == kNeeded) {
    errno = EACCES;
    return false;
  }
  if (::chmod(self.c_str(), (st.st_mode & 07777) | kNeeded) != 0) return false;
  const bool done = step() == 0;
  const int err = errno;
  ::chmod(self.c_str(), st.st_mode & 07777);
  errno = err;
  return done;
}

std::string placeholder_path(int dir, const std::string& name) {
  char buf[4096];
  const ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(dir)).c_str(), buf, sizeof buf);
  const std::string where = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
  return base::printable(where + (where == "/" ? "" : "/") + name);
}

std::string left_reason(int err) {
  if (err == EACCES || err == EPERM) return "its directory is not writable and not the user's own";
  if (err == ENOTEMPTY || err == EEXIST) return "not empty";
  return std::strerror(err);
}

}  // namespace husk::rt
