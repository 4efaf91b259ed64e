#include "checkpoint/image.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
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

}  // namespace

Fd open_image_dir(const std::string& path, const std::string& flag, bool create) {
  if (path.empty()) throw Error(flag + ": an empty path");
  const std::string abs = absolute(path);
  if (create) base::mkdir_all(abs, 0700);
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  Fd fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, abs.c_str(), &how, sizeof how)));
  if (!fd) {
    if (errno == ELOOP) throw Error(flag + " " + path + ": a symlink on the way; give the real path", ELOOP);
    throw sys_error(flag + " " + path);
  }
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
