#include "launch/util.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "base/error.h"
#include "base/file.h"

namespace husk::rt {

static void write_all(int fd, const std::string& data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw sys_error("write " + path);
    }
    off += static_cast<size_t>(n);
  }
}

void write_file(const std::string& path, const std::string& data) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) throw sys_error("open " + path);
  write_all(fd.get(), data, path);
}

void write_file_atomic(int dirfd, const std::string& name, const std::string& data, mode_t mode,
                       const std::string& shown) {
  // Random, so nobody can pre-create it; the leading dot hides it from `ls`.
  unsigned char rnd[8];
  if (::getrandom(rnd, sizeof rnd, 0) != sizeof rnd) throw sys_error("getrandom");
  char suffix[17];
  for (size_t i = 0; i < sizeof rnd; ++i) snprintf(suffix + 2 * i, 3, "%02x", rnd[i]);
  std::string tmp = "." + name + "." + suffix;
  Fd fd(::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (!fd) throw sys_error("create a temp file for " + shown);
  try {
    write_all(fd.get(), data, shown);
    // rename replaces a symlink at `name` itself, never what it points to.
    if (::renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) throw sys_error("rename a temp file to " + shown);
  } catch (...) {
    ::unlinkat(dirfd, tmp.c_str(), 0);
    throw;
  }
}

void write_file_atomic(const std::string& path, const std::string& data, mode_t mode) {
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") throw Error(path + ": not a file name");
  Fd dirfd(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dirfd) throw sys_error("open " + dir);
  write_file_atomic(dirfd.get(), name, data, mode, path);
}

void write_pid_file(const std::string& path, pid_t pid) {
  if (!path.empty()) write_file_atomic(path, std::to_string(pid), 0644);
}

void mkdir_all(const std::string& path, mode_t mode) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string part = path.substr(0, pos);
    if (::mkdir(part.c_str(), mode) != 0 && errno != EEXIST) throw sys_error("mkdir " + part);
  }
}

// Reads /proc/<pid>/stat; fields after the command name (which may hold spaces
// and parentheses) start after the last ')'.
static bool read_stat(pid_t pid, char& state, uint64_t& start_time) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  // Gone (ENOENT) is the usual answer at delete: not thrown, an exception
  // costs a start-up's worth of unwinder pages.
  std::optional<std::string> text;
  try {
    text = base::try_read_file(path);
  } catch (const Error&) {
    return false;  // e.g. ESRCH: it went away while we read
  }
  if (!text) return false;
  const std::string& s = *text;
  auto rp = s.rfind(')');
  if (rp == std::string::npos || rp + 2 >= s.size()) return false;
  state = s[rp + 2];
  // field 3 is state; start time is field 22 -> 19 more fields after state
  const char* p = s.c_str() + rp + 2;
  for (int field = 3; field < 22; ++field) {
    p = strchr(p, ' ');
    if (!p) return false;
    ++p;
  }
  start_time = strtoull(p, nullptr, 10);
  return true;
}

uint64_t process_start_time(pid_t pid) {
  char st;
  uint64_t t;
  return read_stat(pid, st, t) ? t : 0;
}

bool process_alive(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  char st;
  uint64_t t;
  if (!read_stat(pid, st, t)) return false;
  if (st == 'Z' || st == 'X') return false;
  return start_time == 0 || t == start_time;
}

std::string now_rfc3339() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  gmtime_r(&ts.tv_sec, &t);
  char buf[64];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &t);
  snprintf(buf + n, sizeof buf - n, ".%09ldZ", ts.tv_nsec);
  return buf;
}

}  // namespace husk::rt
