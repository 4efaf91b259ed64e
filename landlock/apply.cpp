// Landlock's ruleset made and enforced: the syscalls.
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "base/dir.h"
#include "base/error.h"
#include "base/path.h"
#include "landlock/landlock.h"

namespace husk::landlock {
namespace {

using base::Fd;

// The kernel's structures, as uapi linux/landlock.h has them.
struct RulesetAttr {
  uint64_t handled_access_fs, handled_access_net, scoped;
};
struct __attribute__((packed)) PathBeneathAttr {
  uint64_t allowed_access;
  int32_t parent_fd;
};
struct NetPortAttr {
  uint64_t allowed_access, port;
};
constexpr unsigned kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1, kRuleNetPort = 2;

// The attribute's size the ABI knows: a kernel refuses fields it lacks.
size_t attr_size(int abi) {
  if (abi < 4) return offsetof(RulesetAttr, handled_access_net);
  if (abi < 6) return offsetof(RulesetAttr, scoped);
  return sizeof(RulesetAttr);
}

// `path` (absolute, or a name relative to `at`) as O_PATH, no symlink on
// the way or at the end: the rule is on what was looked at. Empty when it
// does not exist or is a symlink; `dir` says whether it is a directory.
Fd open_path(int at, const std::string& path, bool& dir) {
  open_how how{};
  how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  Fd fd(static_cast<int>(::syscall(SYS_openat2, at, path.c_str(), &how, sizeof how)));
  if (!fd && errno != ENOENT && errno != ELOOP) throw sys_error("landlock: open " + path);
  struct stat st;
  if (fd && ::fstat(fd.get(), &st) != 0) throw sys_error("landlock: stat " + path);
  if (fd && S_ISLNK(st.st_mode)) return Fd();
  dir = fd && S_ISDIR(st.st_mode);
  return fd;
}

class Builder {
 public:
  Builder(int ruleset, const Rights& r, std::vector<std::string>& notes) : ruleset_(ruleset), r_(r), notes_(notes) {}

  void tree(const Tree& t) {
    const uint64_t rights = t.write ? r_.write : r_.read;
    std::vector<std::string> inside;
    for (const auto& h : r_.hidden)
      if (base::is_within(h, t.path)) inside.push_back(h);
    if (std::find(inside.begin(), inside.end(), t.path) != inside.end()) return;
    bool dir = false;
    Fd fd = open_path(AT_FDCWD, t.path, dir);
    if (!fd) return;
    if (inside.empty()) return add(fd.get(), dir, rights, t.path);
    walk(fd.get(), t.path, rights, inside);
  }

  void port(uint16_t p) {
    NetPortAttr attr{kConnectTcp, p};
    if (::syscall(SYS_landlock_add_rule, ruleset_, kRuleNetPort, &attr, 0) != 0)
      throw sys_error("landlock: add rule for TCP port " + std::to_string(p));
  }

 private:
  // A file gets the rights a file can have.
  void add(int fd, bool dir, uint64_t rights, const std::string& path) {
    PathBeneathAttr attr{dir ? rights : rights & kFileRights, fd};
    if (::syscall(SYS_landlock_add_rule, ruleset_, kRulePathBeneath, &attr, 0) != 0)
      throw sys_error("landlock: add rule for " + path);
    ++rules_;
  }

  // `dir`, whose entries cannot be granted one by one: whole, what is hidden
  // below it left to the mount view; without one, listing only (nothing
  // below it is reached but the trees the plan names there).
  void whole(int dir, const std::string& path, uint64_t rights, const char* why) {
    notes_.push_back("Landlock: " + path + " " + why +
                     (r_.mount_view ? ": granted whole, what is hidden below it is left to the mount view"
                                    : ": nothing below it is reached but the trees named there"));
    add(dir, true, r_.mount_view ? rights : r_.route, path);
  }

  // `dir` has hidden paths below it: it may be listed, each entry not on the
  // way to one gets `rights`, the way down is walked. Bounded by kMaxRules:
  // past it see whole().
  void walk(int dir, const std::string& path, uint64_t rights, const std::vector<std::string>& inside) {
    base::Dir d = base::open_dir(dir);
    if (!d && errno == EACCES) return whole(dir, path, rights, "cannot be listed");
    if (!d) throw sys_error("landlock: list " + path);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d.get()))
      if (std::string n = e->d_name; n != "." && n != "..") names.push_back(n);
    if (rules_ + names.size() > kMaxRules) return whole(dir, path, rights, "has too many entries to grant one by one");
    add(dir, true, r_.route, path);
    for (const auto& n : names) {
      const std::string child = (path == "/" ? "" : path) + "/" + n;
      if (std::find(inside.begin(), inside.end(), child) != inside.end()) continue;
      bool is_dir = false;
      Fd fd = open_path(dir, n, is_dir);
      if (!fd) continue;
      std::vector<std::string> below;
      for (const auto& h : inside)
        if (base::is_within(h, child)) below.push_back(h);
      if (below.empty()) add(fd.get(), is_dir, rights, child);
      else if (is_dir) walk(fd.get(), child, rights, below);
    }
  }

  int ruleset_;
  const Rights& r_;
  std::vector<std::string>& notes_;
  size_t rules_ = 0;
};

}  // namespace

int abi() {
  long v = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return v < 0 ? 0 : static_cast<int>(v);
}

Fd build(const Plan& plan, const Rights& r, std::vector<std::string>& notes) {
  RulesetAttr attr{r.handled_fs, r.handled_net, r.scoped};
  Fd ruleset(static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, attr_size(r.abi), 0)));
  if (!ruleset) throw sys_error("landlock: create ruleset (ABI " + std::to_string(r.abi) + ")");
  Builder b(ruleset.get(), r, notes);
  if (r.handled_fs)
    for (const auto& t : plan.trees) b.tree(t);
  if (r.handled_net)
    for (uint16_t p : plan.connect_ports) b.port(p);
  return ruleset;
}

Fd ruleset_for(const Plan& plan, int lowest, std::vector<std::string>& notes) {
  const Rights r = rights(plan, abi());
  if (r.abi < 1 || !(r.handled_fs || r.handled_net || r.scoped)) return Fd();
  Fd built = build(plan, r, notes);
  Fd fd(::fcntl(built.get(), F_DUPFD_CLOEXEC, lowest));
  if (!fd) throw sys_error("landlock: keep the ruleset");
  return fd;
}

void restrict_self(int ruleset_fd) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) throw sys_error("landlock: set no_new_privs");
  if (::syscall(SYS_landlock_restrict_self, ruleset_fd, 0) != 0) throw sys_error("landlock: restrict self");
}

}  // namespace husk::landlock
