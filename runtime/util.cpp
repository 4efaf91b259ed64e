#include "runtime/util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "spec/error.h"

namespace husk::rt {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) reset(o.release());
  return *this;
}

Fd::~Fd() { reset(); }

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string read_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw sys_error("open " + path);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw sys_error("read " + path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

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

void write_file_atomic(const std::string& path, const std::string& data, mode_t mode) {
  std::string tmp = path + ".tmp";
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (!fd) throw sys_error("create " + tmp);
    write_all(fd.get(), data, tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw sys_error("rename " + tmp + " to " + path);
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
  std::string s;
  try {
    s = read_file(path);
  } catch (const Error&) {
    return false;
  }
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
