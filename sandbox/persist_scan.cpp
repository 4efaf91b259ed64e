// The walk of a writable directory for persistence files (persist.h), and
// the placeholders that stand in for missing ones on the host.
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <set>

#include "base/error.h"
#include "base/path.h"
#include "namespaces/namespaces.h"
#include "sandbox/gitconfig.h"
#include "sandbox/internal.h"
#include "sandbox/persist.h"

namespace husk::rt {
namespace {

using base::Fd;

// The walk's bounds: the directories at most kMaxDepth below the writable
// one are listed (packages/NAME/.vscode, libs/NAME/.git), at most
// kMaxEntries names read in all, breadth first (then it stops: what it did
// not reach is not protected). Its cost, measured on a loaded 2-core host:
// a small repository 10 us, an empty directory 2 us, this checkout with its
// build trees 0.3 ms, /usr/share 0.8-1 ms (the budget spent); depth 3 and
// 4096 names cost 0.5-3 ms.
constexpr size_t kMaxDepth = 2;
constexpr size_t kMaxEntries = 1024;

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
// opened (a mount point, a symlink swapped in, no permission). getdents64
// into a buffer on the stack: no stream, no allocation per directory.
std::vector<Entry> list(int root, const std::string& rel, size_t& budget, bool all) {
  std::vector<Entry> out;
  Fd fd(open_below(root, rel));
  if (!fd) return out;
  alignas(8) char buf[16384];
  long n;
  while (budget > 0 && (n = ::syscall(SYS_getdents64, fd.get(), buf, sizeof buf)) > 0)
    for (long at = 0; at < n && budget > 0;) {
      // glibc's dirent64 has the kernel's layout.
      const auto* e = reinterpret_cast<const dirent64*>(buf + at);
      at += e->d_reclen;
      const char* name = e->d_name;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
      --budget;
      unsigned char type = e->d_type;
      struct stat st;
      if (type == DT_UNKNOWN && ::fstatat(fd.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0)
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
      // Only what the walk uses (a git directory's entries, else dot-names
      // and directories to enter).
      if (all || name[0] == '.' || type == DT_DIR) out.push_back({name, type});
    }
  return out;
}

std::string join(const std::string& rel, const std::string& name) { return rel.empty() ? name : rel + "/" + name; }

// What `target` names from the directory `dir`, followed as git follows
// it (symlinks too, as the user: the walk's file access), relative to the
// walk's root `real` when it is below it (its real path read back from the
// fd). Outside, it is read-only where the sandbox shows it.
std::optional<std::string> real_below(int dir, const std::string& target, const std::string& real, bool& is_dir) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_NO_MAGICLINKS;
  Fd fd(static_cast<int>(::syscall(SYS_openat2, dir, target.c_str(), &how, sizeof how)));
  char path[4096];
  struct stat st;
  const ssize_t len =
      fd ? ::readlink(("/proc/self/fd/" + std::to_string(fd.get())).c_str(), path, sizeof path - 1) : -1;
  if (len <= 0 || ::fstat(fd.get(), &st) != 0) return std::nullopt;
  const std::string at(path, static_cast<size_t>(len));
  if (at == real || !base::is_within(at, real)) return std::nullopt;
  is_dir = S_ISDIR(st.st_mode);
  return at.substr(real.size() + (real == "/" ? 0 : 1));
}

// A git directory's entries, and those of the git directories in its
// modules/ and worktrees/ (a submodule's own modules/ too, `levels` deep).
// A symlinked config or hooks: what it names below the root `real` is
// protected as a path the config names.
void scan_gitdir(int root, const std::string& real, const std::string& rel, int levels, size_t& budget,
                 std::vector<PersistFound>& out) {
  for (const auto& e : list(root, rel, budget, true)) {
    const std::string path = join(rel, e.name);
    out.push_back({path, e.type == DT_DIR, e.type == DT_LNK});
    if (e.type == DT_LNK && (e.name == "config" || e.name == "hooks" || e.name == "config.worktree")) {
      Fd dir(open_below(root, rel));
      bool is_dir = false;
      if (auto at = dir ? real_below(dir.get(), e.name, real, is_dir) : std::nullopt)
        out.push_back({*at, is_dir, false, false, true});
    }
    if (e.type != DT_DIR || (e.name != "modules" && e.name != "worktrees") || levels == 0) continue;
    for (const auto& sub : list(root, path, budget, true)) {
      out.push_back({join(path, sub.name), sub.type == DT_DIR, sub.type == DT_LNK});
      if (sub.type == DT_DIR) scan_gitdir(root, real, join(path, sub.name), levels - 1, budget, out);
    }
  }
}

// The git directory a `.git` file ("gitdir: PATH", relative to its
// directory) or symlink in `rel` names, relative to the walk's root `real`,
// when it is below it. Followed as git follows it (symlinks too, as the
// user: the walk's file access); its real path is read back from the fd.
std::optional<std::string> named_gitdir(int root, const std::string& real, const std::string& rel, bool link) {
  Fd dir(open_below(root, rel));
  if (!dir) return std::nullopt;
  std::string target = ".git";
  if (!link) {
    // O_NONBLOCK: a FIFO put in its place would block the walk.
    Fd file(::openat(dir.get(), ".git", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    char buf[4096];
    const ssize_t n = file ? ::read(file.get(), buf, sizeof buf) : -1;
    if (n <= 8 || std::strncmp(buf, "gitdir: ", 8) != 0) return std::nullopt;
    target.assign(buf + 8, static_cast<size_t>(n) - 8);
    while (!target.empty() && std::isspace(static_cast<unsigned char>(target.back()))) target.pop_back();
    if (target.empty() || target.find('\0') != std::string::npos) return std::nullopt;
  }
  bool is_dir = false;
  auto at = real_below(dir.get(), target, real, is_dir);
  return at && is_dir ? at : std::nullopt;
}

// A path a git config names (`value`, relative to `base`), when it is
// below the root `real`: as it is (a symlink too: not covered), or its
// first missing component. Not followed through a symlink or a mount.
// Returns the path of a regular file that is there (an include to read).
std::optional<std::string> named_path(int root, const std::string& real, const std::string& base,
                                      const std::string& value, bool file, std::vector<PersistFound>& out) {
  if (value[0] == '~') return std::nullopt;  // the home's: protected where the home is shown writable
  const std::string at = ns::clean_path(value[0] == '/' ? value : base + "/" + value);
  if (at == real || !base::is_within(at, real)) return std::nullopt;
  const std::string rel = at.substr(real.size() + (real == "/" ? 0 : 1));
  for (size_t slash = 0;; ++slash) {
    slash = rel.find('/', slash);
    const std::string part = rel.substr(0, slash);
    open_how how{};
    how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
    Fd fd(static_cast<int>(::syscall(SYS_openat2, root, part.c_str(), &how, sizeof how)));
    struct stat st;
    if (!fd && errno == ENOENT) out.push_back({part, false, false, false, true, true, file && slash == std::string::npos});
    if (!fd || ::fstat(fd.get(), &st) != 0) return std::nullopt;
    if (slash == std::string::npos) {
      out.push_back({rel, S_ISDIR(st.st_mode), S_ISLNK(st.st_mode), false, true});
      return S_ISREG(st.st_mode) ? std::optional<std::string>(rel) : std::nullopt;
    }
  }
}

// What the config file `rel` of the work tree `tree` names below the root:
// core.hooksPath, relative to the work tree, and include.path /
// includeIf.*.path, relative to the file's directory; and what the files
// it includes name, `depth` includes deep (a loop ends there too).
void config_paths(int root, const std::string& real, const std::string& rel, const std::string& tree,
                  std::vector<PersistFound>& out, int depth = 3) {
  const size_t slash = rel.rfind('/');
  const std::string dir_rel = slash == std::string::npos ? "" : rel.substr(0, slash);
  Fd dir(open_below(root, dir_rel));
  Fd file(dir ? ::openat(dir.get(), rel.c_str() + dir_rel.size() + (dir_rel.empty() ? 0 : 1),
                         O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
              : -1);
  std::string text(65536, '\0');  // git's own config is a few hundred bytes
  const ssize_t n = file ? ::read(file.get(), text.data(), text.size()) : -1;
  if (n <= 0) return;
  text.resize(static_cast<size_t>(n));
  const GitConfigPaths paths = git_config_paths(text);
  for (const auto& h : paths.hooks) named_path(root, real, join(real, tree), h, false, out);
  for (const auto& i : paths.includes)
    if (auto inc = named_path(root, real, join(real, dir_rel), i, true, out); inc && depth > 0)
      config_paths(root, real, *inc, tree, out, depth - 1);
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
  std::set<std::string> top_seen, named_seen;
  // One entry: a dot-name is reported, a git directory or a home's .config
  // looked into; true for another directory (entered if worth it).
  auto found = [&](const std::string& rel, const Entry& e) {
    const std::string path = join(rel, e.name);
    if (rel.empty()) top_seen.insert(e.name);
    if (e.name[0] == '.') out.push_back({path, e.type == DT_DIR, e.type == DT_LNK});
    if (e.name == ".git" && e.type != DT_DIR)
      if (auto named = named_gitdir(top.get(), root, rel, e.type == DT_LNK); named && named_seen.insert(*named).second) {
        out.push_back({*named, true, false, true});
        scan_gitdir(top.get(), root, *named, 2, budget, out);
        config_paths(top.get(), root, join(*named, "config"), rel, out);
      }
    if (e.type != DT_DIR || skipped.count(path)) return false;
    if (e.name == ".git") {
      scan_gitdir(top.get(), root, path, 2, budget, out);
      config_paths(top.get(), root, join(path, "config"), rel, out);
      return false;
    }
    // A home's .config and Claude Code's settings: what runs from there (persist.cpp).
    if (path == ".config" || e.name == ".claude")
      for (const auto& c : list(top.get(), path, budget, e.name == ".claude"))
        out.push_back({join(path, c.name), c.type == DT_DIR, c.type == DT_LNK});
    if (path == ".local")  // a home's systemd units, two levels down
      for (const char* n : {".local/share", ".local/share/systemd"}) {
        struct stat st;
        if (::fstatat(top.get(), n, &st, AT_SYMLINK_NOFOLLOW) == 0)
          out.push_back({n, S_ISDIR(st.st_mode), S_ISLNK(st.st_mode)});
      }
    return true;
  };
  // Breadth first: with the budget spent, what is missed is the deepest.
  std::deque<std::pair<std::string, size_t>> dirs = {{"", 0}};
  while (!dirs.empty() && budget > 0) {
    auto [rel, depth] = dirs.front();
    dirs.pop_front();
    for (const auto& e : list(top.get(), rel, budget, false))
      if (found(rel, e) && depth < kMaxDepth && worth_entering(e.name.c_str()))
        dirs.push_back({join(rel, e.name), depth + 1});
  }
  // A top directory with more names than the budget (one the command
  // filled, to hide .git past it): its own protected names are looked up.
  const bool spent = budget == 0;
  if (spent) {
    budget = kMaxEntries;
    std::vector<std::string> names = protected_names();
    for (const char* looked_into : {".config", ".claude", ".local"}) names.push_back(looked_into);
    for (const auto& n : names) {
      struct stat st;
      if (n.find('/') != std::string::npos || top_seen.count(n) ||
          ::fstatat(top.get(), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      found("", {n, static_cast<unsigned char>(S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG)});
    }
  }
  if (spent) out.push_back({});
  return out;
}

}  // namespace husk::rt
