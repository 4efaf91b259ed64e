// Reading a bundle's config.json.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace husk::spec {

namespace {

std::string read_bounded(int dirfd, const std::string& name, const std::string& shown, int extra_flags) {
  int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | extra_flags);
  if (fd < 0) {
    if (errno == ELOOP && (extra_flags & O_NOFOLLOW)) throw Error(shown + ": is a symlink, refusing to follow it");
    throw sys_error("open " + shown);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw sys_error("stat " + shown, err);
  }
  if (!S_ISREG(st.st_mode) || st.st_size > static_cast<off_t>(kMaxJsonSize)) {
    ::close(fd);
    throw Error(shown + (S_ISREG(st.st_mode) ? ": larger than 64 MiB" : ": not a regular file"));
  }
  std::string out;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw sys_error("read " + shown, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxJsonSize) {
      ::close(fd);
      throw Error(shown + ": larger than 64 MiB");
    }
  }
  ::close(fd);
  return out;
}

}  // namespace

std::string read_json_file(const std::string& path) { return read_bounded(AT_FDCWD, path, path, 0); }

std::string read_json_file_at(int dirfd, const std::string& name, const std::string& shown) {
  return read_bounded(dirfd, name, shown, O_NOFOLLOW);
}

Spec load_bundle(const std::string& bundle_dir, std::string* config_text) {
  std::string dir = bundle_dir.empty() ? "." : bundle_dir;
  if (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::string text = read_json_file(dir == "/" ? "/config.json" : dir + "/config.json");
  try {
    Spec s = parse(text);
    validate(s, true);
    if (config_text) *config_text = std::move(text);
    return s;
  } catch (const Error& e) {
    rethrow_with("config.json", e);
  }
}

}  // namespace husk::spec
