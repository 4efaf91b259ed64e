#include "base/file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/error.h"
#include "base/fd.h"

namespace husk::base {

std::optional<std::string> try_read_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::nullopt;
    throw sys_error("open " + path);
  }
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

std::string read_file(const std::string& path) {
  auto s = try_read_file(path);
  if (!s) throw sys_error("open " + path, ENOENT);
  return *s;
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

}  // namespace husk::base
