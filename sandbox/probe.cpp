// probe_sandbox_host: who runs the command, and what of the host the config is built from.
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "base/dir.h"
#include "base/error.h"
#include "base/file.h"
#include "base/mountinfo.h"
#include "cgroups/cgroups.h"
#include "container/args.h"
#include "launch/self_exe.h"
#include "namespaces/namespaces.h"
#include "sandbox/internal.h"
#include "sandbox/settings.h"

extern char** environ;

namespace husk::rt {
namespace {

struct PasswdEntry {
  std::string name, home, shell;
};

// /etc/passwd read directly (no NSS in a static binary): uid's entry and every home.
std::optional<PasswdEntry> read_passwd(uint32_t uid, std::vector<std::string>& homes) {
  std::optional<PasswdEntry> mine;
  const std::string text = base::try_read_file("/etc/passwd").value_or("");
  const std::string id = std::to_string(uid);
  // Split by hand: a stream per line (its locale set up each time) cost
  // more than the rest of the probe's parsing.
  std::vector<std::string_view> f;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + at, end - at);
    at = end + 1;
    f.clear();
    for (size_t c = 0;;) {
      const size_t colon = line.find(':', c);
      f.push_back(line.substr(c, colon == std::string_view::npos ? colon : colon - c));
      if (colon == std::string_view::npos) break;
      c = colon + 1;
    }
    // getline drops an empty last field ("...:/home/u:"): no shell, one field short.
    if (!f.empty() && f.back().empty()) f.pop_back();
    if (f.size() < 7 || f[5].empty() || f[5][0] != '/') continue;
    homes.emplace_back(f[5]);
    if (!mine && f[2] == id) mine = PasswdEntry{std::string(f[0]), std::string(f[5]), std::string(f[6])};
  }
  return mine;
}

// What the credential lookup knows of a directory (see probe_sandbox_host).
struct DirSummary {
  bool missing = false;  // or not to be entered: nothing below it is reached
  std::optional<std::vector<std::string>> dot_names;  // sorted; listed when it is one block
};

// Hashed as a string_view: the lookups of each path's directories make no copies.
struct ByView {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

DirSummary look_at(const std::string& dir) {
  DirSummary d;
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    d.missing = errno == ENOENT || errno == ENOTDIR;
    return d;
  }
  // One we may not enter (another user's 0700 home, husk run by a user):
  // nothing below it can be reached, by us or by the command. Root enters
  // every one and looks.
  if (S_ISDIR(st.st_mode) && ::faccessat(AT_FDCWD, dir.c_str(), X_OK, AT_EACCESS) != 0 && errno == EACCES) {
    d.missing = true;
    return d;
  }
  if (!S_ISDIR(st.st_mode) || st.st_size > 4096) return d;
  base::Dir ds(::opendir(dir.c_str()));
  if (!ds) return d;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(ds.get()))
    if (e->d_name[0] == '.') names.emplace_back(e->d_name);
  std::sort(names.begin(), names.end());
  d.dot_names = std::move(names);
  return d;
}

// The entries of "/" that are directories, symlinks followed, but those
// only their owner, not `uid`, may enter (/lost+found): nothing in them
// can be read, and crun cannot open them to make them read-only; sorted.
std::vector<std::string> root_dirs(uint32_t uid) {
  std::vector<std::string> dirs;
  if (base::Dir d{::opendir("/")}) {
    while (dirent* e = ::readdir(d.get())) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || (e->d_type != DT_DIR && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN))
        continue;
      struct stat st;
      if (::stat(("/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
          (st.st_uid == uid || (st.st_mode & (S_IXGRP | S_IXOTH))))
        dirs.push_back(name);
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// Who runs the command: the caller; as root, --user or sudo's user.
void choose_user(const SandboxOptions& o, SandboxHost& h) {
  if (::geteuid() != 0) {
    if (!o.user.empty()) throw Error("--user: only root chooses the sandbox's user; it runs as you");
    h.uid = ::getuid();
    h.gid = ::getgid();
    return;
  }
  if (!o.user.empty()) {
    UserArg u = parse_user(o.user);
    h.uid = u.uid;
    h.gid = u.gid.value_or(u.uid);
    return;
  }
  const char* sudo_uid = std::getenv("SUDO_UID");
  const char* sudo_gid = std::getenv("SUDO_GID");
  if (!sudo_uid || !sudo_gid)
    throw Error("sandbox as root: name the user the command runs as with --user UID[:GID] (under sudo, sudo's user "
                "is taken)");
  h.uid = static_cast<uint32_t>(parse_decimal(sudo_uid, kMaxId, "SUDO_UID"));
  h.gid = static_cast<uint32_t>(parse_decimal(sudo_gid, kMaxId, "SUDO_GID"));
  // root's own sudo: running as root takes --user 0, said on purpose.
  if (h.uid == 0) throw Error("sandbox as root: SUDO_UID is 0; name the user with --user UID[:GID] (--user 0 for root)");
}

// A transient scope of the user's systemd manager, which enables the
// controllers it needs itself (its user@.service delegates memory, pids
// and cpu), when husk runs in that manager's tree (a desktop's terminal,
// `systemd-run --user --scope`): the manager may move husk's child only
// within the tree (the kernel's rule for cgroup.procs), never from a login
// session's scope. Also a cgroup v2 host, husk-systemd installed, and a
// socket of the user's where sd_bus_open_user looks.
bool in_user_manager(const cgroups::RootlessHost& rh, const SandboxHost& h) {
  const std::string manager = "/user@" + std::to_string(h.uid) + ".service/";
  if (rh.mode != cgroups::Mode::unified || rh.own.find(manager) == std::string::npos) return false;
  if (::access(companion_path("husk-systemd").c_str(), X_OK) != 0) return false;
  std::string bus;
  if (auto it = h.env.find("DBUS_SESSION_BUS_ADDRESS"); it != h.env.end()) {
    if (it->second.rfind("unix:path=", 0) != 0) return false;
    bus = it->second.substr(10, it->second.find(',') - 10);
  } else if (auto dir = h.env.find("XDG_RUNTIME_DIR"); dir != h.env.end() && !dir->second.empty()) {
    bus = dir->second + "/bus";
  }
  struct stat st;
  return !bus.empty() && ::lstat(bus.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == h.uid;
}

// A delegated subtree serves when its leaf can have the controllers the
// limits need: those of the leaf's parent (husk enables them in its
// subtree_control). One delegated without them gets rlimits, as none would.
bool delegates(const SandboxOptions& o, const std::string& leaf) {
  const std::string parent = leaf.substr(0, leaf.rfind('/'));
  std::istringstream text(
      base::try_read_file(cgroups::host_hierarchies().unified + parent + "/cgroup.controllers").value_or(""));
  std::set<std::string> have{std::istream_iterator<std::string>(text), std::istream_iterator<std::string>()};
  return (!o.pids || have.count("pids")) && (o.memory.empty() || have.count("memory")) &&
         (o.cpus.empty() || have.count("cpu"));
}

// Where the limits go (asked only when there are some): as root a cgroup of
// its own where the hierarchies are there; rootless a scope of the user's
// manager in its tree (not a cgroup made there behind its back), a
// delegated subtree, or none.
void choose_cgroup(const SandboxOptions& o, SandboxHost& h) {
  if (::geteuid() == 0) {
    h.cgroup = root_has_cgroups(o, cgroups::host_hierarchies(),
                                [](const std::string& dir) { return ::access(dir.c_str(), W_OK) == 0; });
    return;
  }
  const cgroups::RootlessHost rh = cgroups::rootless_host();
  h.systemd_scope = in_user_manager(rh, h);
  if (h.systemd_scope) {
    h.cgroup = true;
    return;
  }
  const std::string leaf = cgroups::choose_rootless(rh, std::nullopt, "sandbox").path;
  h.cgroup = !leaf.empty() && delegates(o, leaf);
}

}  // namespace

bool root_has_cgroups(const SandboxOptions& o, const cgroups::Hierarchies& hh,
                      const std::function<bool(const std::string&)>& writable) {
  if (hh.mode == cgroups::Mode::unified) return writable(hh.unified);
  std::vector<const char*> needed = {"devices"};
  if (o.pids) needed.push_back("pids");
  if (!o.memory.empty()) needed.push_back("memory");
  if (!o.cpus.empty()) needed.push_back("cpu");
  return std::all_of(needed.begin(), needed.end(), [&](const char* c) {
    auto it = hh.v1.find(c);
    return it != hh.v1.end() && writable(it->second);
  });
}

std::optional<std::string> real_path(const std::string& p) {
  // Most asked-for paths (credentials in every home) do not exist: one
  // lstat says so, where realpath would read every component's link.
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return std::nullopt;
  // An entry of "/" that is no symlink is its own real path (the root's
  // directories are all asked for).
  if (!S_ISLNK(st.st_mode) && p.size() > 1 && p.rfind('/') == 0 && p != "/." && p != "/..") return p;
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return std::nullopt;
  return std::string(buf);
}

namespace {

// No empty, "." or ".." component: the text before its last slash is its directory.
bool plain(std::string_view p) {
  if (p.empty() || p[0] != '/') return false;
  for (size_t i = 1;;) {
    const size_t j = p.find('/', i);
    const std::string_view c = p.substr(i, j == std::string_view::npos ? j : j - i);
    if (c.empty() || c == "." || c == "..") return false;
    if (j == std::string_view::npos) return true;
    i = j + 1;
  }
}

// real_path, each path resolved once: the config asks for the same ones
// from several places (the home and the working directory five times).
// Below a directory resolved already, a name that is no symlink costs one
// lstat, where realpath would read every component's link again.
class RealPaths {
 public:
  std::optional<std::string> operator()(const std::string& p) {
    if (auto it = known_.find(p); it != known_.end()) return it->second;
    std::optional<std::string> r = resolve(p);
    known_.emplace(p, r);
    return r;
  }

 private:
  std::optional<std::string> resolve(const std::string& p) {
    const size_t slash = p.rfind('/');
    if (slash == 0 || !plain(p)) return real_path(p);
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return std::nullopt;
    if (S_ISLNK(st.st_mode)) return real_path(p);
    const std::optional<std::string> dir = (*this)(p.substr(0, slash));
    // Gone meanwhile: as realpath finds it now.
    if (!dir) return real_path(p);
    return (*dir == "/" ? "" : *dir) + p.substr(slash);
  }
  std::unordered_map<std::string, std::optional<std::string>> known_;
};

// Root's file access taken back when the walk ends, however it ends.
struct FileAccessAs {
  std::vector<gid_t> groups;
  int fsuid = -1, fsgid = -1;
  FileAccessAs(uid_t uid, gid_t gid) {
    groups.resize(static_cast<size_t>(std::max(::getgroups(0, nullptr), 0)));
    if (::getgroups(static_cast<int>(groups.size()), groups.data()) < 0)
      throw sys_error("sandbox: read root's groups for the walk");
    // A user namespace whose setgroups is "deny" (root inside bwrap or an
    // unprivileged container) keeps its groups: the user's uid and gid still apply.
    if (::setgroups(0, nullptr) != 0 && errno != EPERM) throw sys_error("sandbox: drop root's groups for the walk");
    fsgid = ::setfsgid(gid);
    fsuid = ::setfsuid(uid);
  }
  ~FileAccessAs() {
    ::setfsuid(static_cast<uid_t>(fsuid));
    ::setfsgid(static_cast<gid_t>(fsgid));
    ::setgroups(groups.size(), groups.data());
  }
};

// The persistence walk with the sandbox user's file access: as root it
// would find what that user may not reach (another user's directory of
// mode 0700 in a shared --rw tree), whose mount the sandbox's init, as the
// user, could not make: the sandbox would not start.
std::vector<PersistFound> scan_as_user(uid_t uid, gid_t gid, const std::string& real,
                                       const std::vector<std::string>& skip) {
  if (::geteuid() != 0) return scan_persist(real, skip);
  FileAccessAs as(uid, gid);
  return scan_persist(real, skip);
}

// The walks for persistence files and for --hide patterns, with the
// sandbox user's file access.
void set_walks(SandboxHost& h) {
  h.scan = [uid = h.uid, gid = h.gid](const std::string& real, const std::vector<std::string>& skip) {
    return scan_as_user(uid, gid, real, skip);
  };
  h.glob = [uid = h.uid, gid = h.gid](const Glob& g, const std::string& root) {
    if (::geteuid() != 0) return walk_glob(g, root);
    FileAccessAs as(uid, gid);
    return walk_glob(g, root);
  };
}

// Credentials are looked for in every home (~20 dot-names each, most of
// them absent). Each directory is looked at once: missing, its paths are
// answered without a syscall; small (one block), its dot-names are listed
// and an absent one needs no lookup; else one lstat per path (homes such
// as /bin hold a thousand names: listing them cost more than it saved).
std::function<std::optional<std::string>(const std::string&)> credential_lookup() {
  auto dirs = std::make_shared<std::unordered_map<std::string, DirSummary, ByView, std::equal_to<>>>();
  // Absent by what the nearest directory above `p` already looked at says
  // (a missing one, a listing without the name): .config/Code/User in a
  // home without .config needs no syscall.
  auto unlisted = [](const DirSummary& d, std::string_view name) {
    return d.missing || (d.dot_names && !name.empty() && name[0] == '.' &&
                         !std::binary_search(d.dot_names->begin(), d.dot_names->end(), name));
  };
  auto absent = [dirs, unlisted](std::string_view p) {
    for (size_t slash = p.rfind('/'); slash != std::string::npos && slash > 0; slash = p.rfind('/', slash - 1)) {
      auto it = dirs->find(p.substr(0, slash));
      if (it != dirs->end()) return unlisted(it->second, p.substr(slash + 1, p.find('/', slash + 1) - slash - 1));
    }
    return false;
  };
  auto reals = std::make_shared<RealPaths>();
  return [dirs, absent, unlisted, reals](const std::string& p) -> std::optional<std::string> {
    size_t slash = p.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      const std::string_view dir = std::string_view(p).substr(0, slash);
      auto it = dirs->find(dir);
      if (it == dirs->end()) {
        const bool gone = absent(dir);
        // A listing answers only for dot-names: a home itself (/var/lib/postgresql)
        // is one lstat, not a listing of /var/lib.
        if (!gone && p[slash + 1] != '.') return (*reals)(p);
        it = dirs->emplace(std::string(dir), gone ? DirSummary{true, {}} : look_at(std::string(dir))).first;
      }
      // Its own directory is the nearest one looked at.
      if (unlisted(it->second, std::string_view(p).substr(slash + 1))) return std::nullopt;
    }
    return (*reals)(p);
  };
}

}  // namespace

std::string default_settings_dir() {
  // Unprivileged: the caller's own environment. As root, root's own home
  // from passwd: sudo may keep the user's HOME or XDG_CONFIG_HOME, and a
  // file the user (or the user's sandbox) wrote would set root's walls.
  if (::geteuid() != 0) {
    const char* config = std::getenv("XDG_CONFIG_HOME");
    if (config && config[0] == '/') return ns::clean_path(config) + "/husk";
    const char* home = std::getenv("HOME");
    if (home && home[0] == '/') return ns::clean_path(home) + "/.config/husk";
  }
  std::vector<std::string> homes;
  std::optional<PasswdEntry> pw = read_passwd(::geteuid(), homes);
  return pw && !pw->home.empty() && pw->home[0] == '/' ? ns::clean_path(pw->home) + "/.config/husk" : "";
}

SettingsUser settings_user(const std::string& user_flag) {
  SandboxOptions o;
  o.user = user_flag;
  SandboxHost h;
  choose_user(o, h);
  SettingsUser u{h.uid, h.gid, {}, {}};
  std::optional<PasswdEntry> pw = read_passwd(h.uid, h.homes);
  if (pw) u.place.home = pw->home;
  // Unprivileged: the caller's own HOME; as root the sandbox's user's from passwd.
  const char* home = std::getenv("HOME");
  if (::geteuid() != 0 && home && home[0] == '/') u.place.home = ns::clean_path(home);
  u.config_dir = default_settings_dir();
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) throw sys_error("sandbox: getcwd");
  u.place.cwd = cwd;
  u.place.exists = [](const std::string& p) { return real_path(p).has_value(); };
  return u;
}

std::optional<std::string> read_settings_file(const std::string& path, const SettingsUser* as, bool untrusted,
                                              bool missing_ok) {
  base::Fd fd;
  int err = 0;  // open's: taking root's file access back may set errno
  {
    // Unprivileged, husk is that user already.
    std::optional<FileAccessAs> access;
    if (as && ::geteuid() == 0) access.emplace(as->uid, as->gid);
    fd = base::Fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (untrusted ? O_NOFOLLOW : 0)));
    err = errno;
  }
  if (!fd) {
    errno = err;
    if (missing_ok && (errno == ENOENT || errno == ENOTDIR)) return std::nullopt;
    if (errno == ELOOP && untrusted) throw Error(path + ": is a symlink; a project file is read only as itself");
    throw sys_error("sandbox: open settings " + path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) throw sys_error("sandbox: stat settings " + path);
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  constexpr off_t kMax = 1 << 20;
  if (st.st_size > kMax) throw Error(path + ": larger than 1 MiB");
  std::string text;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
    if (text.size() > static_cast<size_t>(kMax)) throw Error(path + ": larger than 1 MiB");
  }
  if (n < 0) throw sys_error("sandbox: read settings " + path);
  return text;
}

SandboxHost probe_sandbox_host(const SandboxOptions& o) {
  SandboxHost h;
  choose_user(o, h);
  std::optional<PasswdEntry> pw = read_passwd(h.uid, h.homes);
  if (pw) {
    h.user_name = pw->name;
    h.home = pw->home;
    h.shell = pw->shell;
  }
  // The caller's own HOME (not root's: under sudo it is the user's or root's).
  const char* home = std::getenv("HOME");
  if (::geteuid() != 0 && home && home[0] == '/') h.home = ns::clean_path(home);
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) throw sys_error("sandbox: getcwd");
  h.cwd = cwd;
  h.settings_dir = default_settings_dir();
  h.root_dirs = root_dirs(h.uid);
  h.real = credential_lookup();
  h.is_dir = [](const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  std::vector<gid_t> groups = {h.gid};
  // Unprivileged, the command keeps the caller's groups; root's sandbox drops them.
  if (::geteuid() != 0) {
    groups.resize(1 + static_cast<size_t>(std::max(::getgroups(0, nullptr), 0)));
    if (::getgroups(static_cast<int>(groups.size() - 1), groups.data() + 1) < 0) groups.resize(1);
  }
  h.closed_to_user = [uid = h.uid, groups](const std::string& p) {
    struct stat st;
    // An ACL may open what the modes close: left to Landlock.
    if (uid == 0 || ::stat(p.c_str(), &st) != 0 || ::getxattr(p.c_str(), "system.posix_acl_access", nullptr, 0) >= 0)
      return false;
    const mode_t rw = st.st_uid == uid ? S_IRUSR | S_IWUSR
                      : std::find(groups.begin(), groups.end(), st.st_gid) != groups.end() ? S_IRGRP | S_IWGRP
                                                                                             : S_IROTH | S_IWOTH;
    return (st.st_mode & rw) == 0;
  };
  set_walks(h);
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) h.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!o.allow_hosts.empty()) {
    // A memfd copy or a deleted file has no path to bind: GIT_SSH_COMMAND is left unset.
    const std::string self = own_binary_path();
    if (!self.empty() && self[0] == '/') h.husk_binary = real_path(self).value_or("");
  }
  if (o.overlaid())
    for (const auto& m : base::read_mountinfo()) h.mount_points.push_back(m.mount_point);
  // Asked only for limits: without them the sandbox gets no cgroup at all.
  if (o.limited()) choose_cgroup(o, h);
  return h;
}

}  // namespace husk::rt
