// The walk of a writable directory for persistence files (persist.h), and
// the placeholders that stand in for missing ones on the host.
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <set>

#include "base/error.h"
#include "base/path.h"
#include "sandbox/internal.h"
#include "sandbox/persist.h"

namespace husk::rt {
namespace {

using base::Fd;

// The walk's bounds: directories at most kMaxDepth below the writable one
// (a monorepo's packages/NAME/sub), at most kMaxEntries names read in all
// (then it stops: what it did not reach is not protected). Measured on a
// kernel checkout (80k files) and /usr/share: 4 ms at these bounds
// ...see the commit for the numbers.
constexpr size_t kMaxDepth = 3;
constexpr size_t kMaxEntries = 4096;

// Never entered: a package tree has thousands of directories and no
// project settings of its own, dot-directories are caches and settings
// (~/.cache, ~/.local), not sub-projects.
bool worth_entering(const char* name) { return name[0] != '.' && std::strcmp(name, "node_modules") != 0; }

// `rel` below `root`: no symlink, no other mount crossed.
int open_below(int root, const std::string& rel) {
  open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return static_cast<int>(::syscall(SYS_openat2, root, rel.empty() ? "." : rel.c_str(), &how, sizeof how));
}

struct Entry {
  std::string name;
  unsigned char type;
};

// The names in `rel`, each with its type (DT_*); none when it cannot be
// opened (a mount point, a symlink swapped in, no permission).
std::vector<Entry> list(int root, const std::string& rel, size_t& budget) {
  std::vector<Entry> out;
  int fd = open_below(root, rel);
  if (fd < 0) return out;
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return out;
  }
  while (dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    if (budget == 0) break;
    --budget;
    unsigned char type = e->d_type;
    struct stat st;
    if (type == DT_UNKNOWN && ::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
    out.push_back({e->d_name, type});
  }
  ::closedir(d);
  return out;
}

std::string join(const std::string& rel, const std::string& name) { return rel.empty() ? name : rel + "/" + name; }

// A git directory's entries, and those of the git directories in its
// modules/ and worktrees/ (a submodule's own modules/ too, `levels` deep).
void scan_gitdir(int root, const std::string& rel, int levels, size_t& budget, std::vector<PersistFound>& out) {
  for (const auto& e : list(root, rel, budget)) {
    const std::string path = join(rel, e.name);
    out.push_back({path, e.type == DT_DIR, e.type == DT_LNK});
    if (e.type != DT_DIR || (e.name != "modules" && e.name != "worktrees") || levels == 0) continue;
    for (const auto& sub : list(root, path, budget)) {
      out.push_back({join(path, sub.name), sub.type == DT_DIR, sub.type == DT_LNK});
      if (sub.type == DT_DIR) scan_gitdir(root, join(path, sub.name), levels - 1, budget, out);
    }
  }
}

}  // namespace

std::vector<PersistFound> scan_persist(const std::string& root, const std::vector<std::string>& skip) {
  std::vector<PersistFound> out;
  Fd top(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top) return out;
  std::set<std::string> skipped;
  for (const auto& s : skip)
    if (s != root && base::is_within(s, root)) skipped.insert(s.substr(root.size() + (root == "/" ? 0 : 1)));
  size_t budget = kMaxEntries;
  // Breadth first: with the budget spent, what is missed is the deepest.
  std::deque<std::pair<std::string, size_t>> dirs = {{"", 0}};
  while (!dirs.empty() && budget > 0) {
    auto [rel, depth] = dirs.front();
    dirs.pop_front();
    for (const auto& e : list(top.get(), rel, budget)) {
      const std::string path = join(rel, e.name);
      if (e.name[0] == '.') out.push_back({path, e.type == DT_DIR, e.type == DT_LNK});
      if (e.type != DT_DIR || skipped.count(path)) continue;
      if (e.name == ".git") scan_gitdir(top.get(), path, 2, budget, out);
      else if (depth < kMaxDepth && worth_entering(e.name.c_str())) dirs.push_back({path, depth + 1});
    }
  }
  return out;
}

}  // namespace husk::rt
