// The names git reads config or hooks from that were missing at start, in
// the protected git directories (internal.h NewFiles): moved aside at exit.
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "base/error.h"
#include "base/fdpass.h"
#include "sandbox/internal.h"

namespace husk::rt {

using base::Fd;

namespace {

// Why a name made there matters, for the message.
std::string why(const std::string& name) {
  if (name == "commondir") return "which would give git another config and hooks";
  if (name == "gitdir") return "which would point git at another git directory";
  if (name == "config.worktree") return "which git would read as config";
  return "which the repository's config includes";
}

}  // namespace

void NewFiles::watch(const std::vector<std::string>& paths, const std::function<void(const One&)>& opened) {
  std::string last;
  int dir = -1;
  for (const auto& p : paths) {
    const std::string parent = p.substr(0, p.rfind('/')), name = p.substr(p.rfind('/') + 1);
    if (parent != last) {
      open_how how{};
      how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
      how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
      Fd fd(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, parent.c_str(), &how, sizeof how)));
      last = parent;
      dir = fd.get();
      if (fd) dirs_.push_back(std::move(fd));
    }
    struct stat st;
    // There already (made since the walk): not the command's.
    if (dir < 0 || ::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) continue;
    watched_.push_back({dir, p});
    opened(watched_.back());
  }
}

void NewFiles::send(int sock, const One& one) {
  const std::string msg = "W" + one.path;
  if (base::send_with_fd(sock, msg.data(), msg.size(), one.dir) < 0)
    throw sys_error("husk sandbox: tell the guardian of " + one.path);
}

void NewFiles::add(Fd dir, const std::string& path) {
  watched_.push_back({dir.get(), path});
  dirs_.push_back(std::move(dir));
}

void NewFiles::move_aside() {
  for (const auto& w : watched_) {
    const std::string name = w.path.substr(w.path.rfind('/') + 1);
    const std::string aside = name + ".husk-sandbox-" + std::to_string(::getpid());
    struct stat st;
    if (::fstatat(w.dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    std::string error;
    try {
      // renameat2 moves the name itself: a symlink is not followed.
      as_user(uid_, gid_, [&] {
        if (::renameat2(w.dir, name.c_str(), w.dir, aside.c_str(), RENAME_NOREPLACE) != 0)
          throw sys_error("rename " + w.path + " to " + aside);
      });
    } catch (const Error& e) {
      error = e.what();
    }
    std::cerr << "husk sandbox: the command made " << w.path << ", " << why(name)
              << (error.empty() ? ": moved to " + aside : ": could not move it aside (" + error + "): remove it")
              << std::endl;
  }
  watched_.clear();
}

}  // namespace husk::rt
