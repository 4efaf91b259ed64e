// The walk that finds a glob's matches on the host (glob.h), apart from the
// matching: breadth first, bounded, no symlink followed.
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <deque>

#include "base/fd.h"
#include "sandbox/glob.h"

namespace husk::rt {

namespace {

using base::Fd;

// `rel` below the walk's root: a symlink swapped in meanwhile is not
// followed out of it.
int open_dir_below(int root, const std::string& rel) {
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, root, rel.empty() ? "." : rel.c_str(), &how, sizeof how));
}

std::string joined(const std::vector<std::string>& rel) {
  std::string out;
  for (const auto& c : rel) out += (out.empty() ? "" : "/") + c;
  return out;
}

}  // namespace

GlobFound walk_glob(const Glob& g, const std::string& root) {
  GlobFound out;
  Fd top(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!top) return out;  // missing, or not a directory the user may list: nothing there to hide
  auto path_of = [&](const std::vector<std::string>& rel) {
    return rel.empty() ? root : (root == "/" ? "" : root) + "/" + joined(rel);
  };
  if (glob_hit(g, {}) == GlobHit::match) {
    out.paths.push_back(root);
    return out;
  }
  size_t budget = kGlobMaxNames;
  std::deque<std::vector<std::string>> todo{{}};
  while (!todo.empty()) {
    std::vector<std::string> dir = std::move(todo.front());
    todo.pop_front();
    Fd fd(open_dir_below(top.get(), joined(dir)));
    DIR* d = fd ? ::fdopendir(fd.get()) : nullptr;
    if (!d) continue;  // swapped for a symlink, or closed to the user
    fd.release();
    while (const dirent* e = ::readdir(d)) {
      const char* name = e->d_name;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
      if (budget-- == 0) {
        out.stopped = true;
        ::closedir(d);
        return out;
      }
      unsigned char type = e->d_type;
      struct stat st;
      if (type == DT_UNKNOWN && ::fstatat(::dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
      std::vector<std::string> rel = dir;
      rel.push_back(name);
      const GlobHit hit = glob_hit(g, rel);
      // A symlink matched names its target: "**/secrets/**" hides a link named secrets as it hides the directory.
      if (hit == GlobHit::match && (!g.dirs_only || type == DT_DIR || type == DT_LNK)) out.paths.push_back(path_of(rel));
      else if (hit != GlobHit::none && type == DT_DIR) {
        if (rel.size() > kGlobMaxDepth) out.stopped = true;
        else todo.push_back(std::move(rel));
      }
    }
    ::closedir(d);
  }
  return out;
}

}  // namespace husk::rt
