#include "checkpoint/image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "checkpoint/plan.h"
#include "spec/spec.h"

namespace husk::ckpt {

using base::Fd;

namespace {

std::string absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  if (!::getcwd(cwd, sizeof cwd)) throw sys_error("getcwd");
  return std::string(cwd) + "/" + path;
}

// `abs` opened as a directory, following a symlink on the way only where
// root alone could have made it: owned by root in a directory nobody else
// can write (containerd's bundle/work link into its root). Any other
// symlink is refused, as a user could swap it between check and use.
// With `create`, a missing component is made (0700) in the directory
// walked so far, never through a name looked up again.
Fd open_following_root_links(const std::string& abs, const std::string& flag, const std::string& shown,
                             bool create) {
  std::vector<std::string> todo;  // components still to walk, the next at the back
  auto push = [&todo](const std::string& path) {
    std::vector<std::string> parts;
    for (size_t b = 0, e; b < path.size(); b = e + 1) {
      e = path.find('/', b);
      if (e == std::string::npos) e = path.size();
      if (e > b && path.compare(b, e - b, ".") != 0) parts.push_back(path.substr(b, e - b));
    }
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  };
  Fd dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) throw sys_error(flag + " " + shown + ": open /");
  push(abs);
  for (int links = 0; !todo.empty();) {
    const std::string name = todo.back();
    todo.pop_back();
    Fd next(::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next && errno == ENOENT && create) {
      if (::mkdirat(dir.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
        throw sys_error(flag + " " + shown + ": mkdir " + name);
      next.reset(::openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    }
    struct stat st {}, parent {};
    if (!next || ::fstat(next.get(), &st) != 0) throw sys_error(flag + " " + shown + ": open " + name);
    if (!S_ISLNK(st.st_mode)) {
      dir = std::move(next);
      continue;
    }
    if (++links > 40 || ::fstat(dir.get(), &parent) != 0 || st.st_uid != 0 || parent.st_uid != 0 ||
        (parent.st_mode & 022) != 0)
      throw Error(flag + " " + shown + ": a symlink on the way (" + name +
                      ") that root alone could not have made; give the real path", ELOOP);
    char target[4096];
    const ssize_t n = ::readlinkat(next.get(), "", target, sizeof target - 1);
    if (n <= 0) throw sys_error(flag + " " + shown + ": readlink " + name);
    const std::string t(target, static_cast<size_t>(n));
    if (t[0] == '/') {
      dir = Fd(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!dir) throw sys_error(flag + " " + shown + ": open /");
    }
    push(t);
  }
  Fd fd(::openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw sys_error(flag + " " + shown);
  return fd;
}

}  // namespace

Fd open_image_dir(const std::string& path, const std::string& flag, bool create) {
  if (path.empty()) throw Error(flag + ": an empty path");
  const std::string abs = absolute(path);
  Fd fd = open_following_root_links(abs, flag, path, create);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw sys_error(flag + " " + path + ": fstat");
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    throw Error(flag + " " + path + ": owned by uid " + std::to_string(st.st_uid) + ", mode " + mode +
                ": CRIU runs as root and may use only a directory nobody else can write");
  }
  return fd;
}

void write_image_files(int dirfd, const ImageFiles& files, const std::string& shown) {
  base::write_file_atomic(dirfd, kImageConfig, files.config_text, 0600, shown + "/" + kImageConfig);
  base::write_file_atomic(dirfd, kDescriptors, nlohmann::json(files.descriptors).dump(), 0600,
                          shown + "/" + kDescriptors);
}

ImageFiles read_image_files(int dirfd, const std::string& shown) {
  if (::faccessat(dirfd, "inventory.img", F_OK, AT_SYMLINK_NOFOLLOW) != 0)
    throw Error("--image-path " + shown + ": not a checkpoint image (no inventory.img)");
  if (::faccessat(dirfd, kImageConfig, F_OK, AT_SYMLINK_NOFOLLOW) != 0)
    throw Error("--image-path " + shown + ": not made by husk checkpoint (no " + kImageConfig + ")");
  ImageFiles f;
  f.config_text = spec::read_json_file_at(dirfd, kImageConfig, shown + "/" + kImageConfig);
  const std::string text = spec::read_json_file_at(dirfd, kDescriptors, shown + "/" + kDescriptors);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) throw Error(shown + "/" + kDescriptors + ": a JSON array of strings expected");
  for (const auto& d : j) {
    if (!d.is_string()) throw Error(shown + "/" + kDescriptors + ": a JSON array of strings expected");
    f.descriptors.push_back(d.get<std::string>());
  }
  return f;
}

}  // namespace husk::ckpt
