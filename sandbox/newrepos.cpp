// Git repositories the command made in the writable directories
// (internal.h say_new_repositories): said at exit, not moved.
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <iostream>

#include "base/error.h"
#include "sandbox/internal.h"

namespace husk::rt {
namespace {

// At most this many directories below each writable one are looked into.
constexpr int kMaxLooked = 256;

bool born_since(int dir, const char* name, const timespec& start) {
  struct statx sx;
  if (::statx(dir, name, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &sx) != 0 || !(sx.stx_mask & STATX_BTIME)) return false;
  return sx.stx_btime.tv_sec > start.tv_sec ||
         (sx.stx_btime.tv_sec == start.tv_sec && sx.stx_btime.tv_nsec >= static_cast<uint32_t>(start.tv_nsec));
}

bool there(int dir, const char* name) {
  struct stat st;
  return ::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// A .git, or a bare repository's layout (HEAD, objects, refs: git takes the
// directory itself for one), made since `start` in `dir`.
bool new_repository(int dir, const timespec& start) {
  return born_since(dir, ".git", start) ||
         (born_since(dir, "objects", start) && there(dir, "HEAD") && there(dir, "refs"));
}

void look(const std::string& path, const timespec& start, std::vector<std::string>& made) {
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  base::Fd top(static_cast<int>(::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how)));
  if (!top) return;
  if (new_repository(top.get(), start)) made.push_back(path);
  alignas(8) char buf[16384];
  long n;
  int looked = 0;
  while (looked < kMaxLooked && (n = ::syscall(SYS_getdents64, top.get(), buf, sizeof buf)) > 0)
    for (long at = 0; at < n && looked < kMaxLooked;) {
      const auto* e = reinterpret_cast<const dirent64*>(buf + at);
      at += e->d_reclen;
      if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
      ++looked;
      base::Fd sub(::openat(top.get(), e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (sub && new_repository(sub.get(), start)) made.push_back(path + "/" + e->d_name);
    }
}

}  // namespace

void say_new_repositories(uint32_t uid, uint32_t gid, const std::vector<std::string>& writable,
                          const timespec& start) {
  if (writable.empty()) return;
  try {
    // As the user: root does not list what another user may change.
    as_user(uid, gid, [&] {
      std::vector<std::string> made;
      for (const auto& w : writable) look(w, start, made);
      for (const auto& m : made)
        std::cerr << "husk sandbox: the command made a git repository in " << m
                  << ": its config and hooks run at your next git there (not protected: look before using git in it)"
                  << std::endl;
    });
  } catch (const Error&) {
    // Nothing to say then: it is a warning, not a wall.
  }
}

}  // namespace husk::rt
