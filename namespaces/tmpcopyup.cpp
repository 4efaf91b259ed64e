// tmpcopyup: a tmpfs mounted over a directory of the image starts with a copy
// of what the image has there.
#include <dirent.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dir.h"
#include "namespaces/internal.h"

namespace husk::ns::detail {

// `from` is the image's content at a tmpfs destination, `to` the new tmpfs.
// Everything is done relative to the two directory fds and no symlink is
// followed: they are copied as links.
void copy_tree(int from, int to, const std::string& where, int depth) {
  if (depth > 128) throw Error("tmpcopyup " + where + ": directory tree too deep", ELOOP);
  base::Dir dir = base::open_dir(from);
  if (!dir) throw sys_error("tmpcopyup: read " + where);
  while (dirent* e = readdir(dir.get())) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = where + "/" + name;
    struct stat st{};
    if (fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) throw sys_error("tmpcopyup: stat " + path);
    if (S_ISDIR(st.st_mode)) {
      if (mkdirat(to, name.c_str(), 0700) < 0) throw sys_error("tmpcopyup: mkdir " + path);
      Fd sub_from(openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      Fd sub_to(openat(to, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub_from || !sub_to) throw sys_error("tmpcopyup: open " + path);
      copy_tree(sub_from.get(), sub_to.get(), path, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      Fd in(openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      Fd out(openat(to, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!in || !out) throw sys_error("tmpcopyup: open " + path);
      for (off_t left = st.st_size; left > 0;) {
        ssize_t n = sendfile(out.get(), in.get(), nullptr, static_cast<size_t>(left));
        if (n < 0) throw sys_error("tmpcopyup: copy " + path);
        if (n == 0) break;  // the file shrank meanwhile
        left -= n;
      }
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = readlinkat(from, name.c_str(), target.data(), target.size());
      if (n < 0) throw sys_error("tmpcopyup: readlink " + path);
      target.resize(static_cast<size_t>(n));
      if (symlinkat(target.c_str(), to, name.c_str()) < 0) throw sys_error("tmpcopyup: symlink " + path);
    } else if (S_ISSOCK(st.st_mode)) {
      continue;  // a socket file is meaningless without its listener
    } else if (mknodat(to, name.c_str(), st.st_mode, st.st_rdev) < 0) {
      throw sys_error("tmpcopyup: mknod " + path);
    }
    if (fchownat(to, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
      throw sys_error("tmpcopyup: chown " + path);
    // After chown, which clears set-id bits; symlinks have no mode of their own.
    if (!S_ISLNK(st.st_mode) && fchmodat(to, name.c_str(), st.st_mode & 07777, 0) < 0)
      throw sys_error("tmpcopyup: chmod " + path);
    timespec times[2] = {st.st_atim, st.st_mtim};
    if (utimensat(to, name.c_str(), times, AT_SYMLINK_NOFOLLOW) < 0) throw sys_error("tmpcopyup: utimes " + path);
  }
}

}  // namespace husk::ns::detail
