#include "base/file.h"

#include <fcntl.h>
#include <unistd.h>

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

}  // namespace husk::base
