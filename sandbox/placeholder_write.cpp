// A placeholder's directory the user took write permission from: given u+w
// back for the one step (placeholders.cpp), and what is left said.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/fd.h"
#include "base/printable.h"
#include "sandbox/internal.h"

namespace husk::rt {

bool with_owner_write(int dir, const std::function<int()>& step) {
  if (step() == 0) return true;
  if (errno != EACCES) return false;
  // As the user: only a directory of theirs, which they (and the command,
  // `chmod 555 .`) could make writable themselves; by the fd the
  // placeholder was made in, no name looked up again; its mode put back.
  base::Fd self(::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st;
  if (!self || ::fstat(self.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & S_IWUSR)) {
    errno = EACCES;
    return false;
  }
  if (::fchmod(self.get(), (st.st_mode & 07777) | S_IWUSR) != 0) return false;
  const bool done = step() == 0;
  const int err = errno;
  ::fchmod(self.get(), st.st_mode & 07777);
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
