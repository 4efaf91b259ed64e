// probe_sandbox_host: who runs the command, and what of the host the config is built from.
#include <grp.h>
#include <limits.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>

#include "base/dir.h"
#include "base/error.h"
#include "base/file.h"
#include "base/mountinfo.h"
#include "cgroups/cgroups.h"
#include "container/args.h"
#include "namespaces/namespaces.h"
#include "sandbox/internal.h"

extern char** environ;

namespace husk::rt {
namespace {

struct PasswdEntry {
  std::string name, home, shell;
};

// /etc/passwd read directly (no NSS in a static binary): uid's entry and every home.
std::optional<PasswdEntry> read_passwd(uint32_t uid, std::vector<std::string>& homes) {
  std::optional<PasswdEntry> mine;
  std::istringstream lines(base::try_read_file("/etc/passwd").value_or(""));
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::istringstream cols(line);
    std::string col;
    while (std::getline(cols, col, ':')) f.push_back(col);
    if (f.size() < 7 || f[5].empty() || f[5][0] != '/') continue;
    homes.push_back(f[5]);
    if (!mine && f[2] == std::to_string(uid)) mine = PasswdEntry{f[0], f[5], f[6]};
  }
  return mine;
}

// What the credential lookup knows of a directory (see probe_sandbox_host).
struct DirSummary {
  bool missing = false;
  std::optional<std::vector<std::string>> dot_names;  // sorted; listed when it is one block
};

DirSummary look_at(const std::string& dir) {
  DirSummary d;
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    d.missing = errno == ENOENT || errno == ENOTDIR;
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

// The entries of "/" that are directories, symlinks followed; sorted.
std::vector<std::string> root_dirs() {
  std::vector<std::string> dirs;
  if (base::Dir d{::opendir("/")}) {
    while (dirent* e = ::readdir(d.get())) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || (e->d_type != DT_DIR && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN))
        continue;
      struct stat st;
      if (e->d_type == DT_DIR || (::stat(("/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
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

}  // namespace

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

// Root's file access taken back when the walk ends, however it ends.
struct FileAccessAs {
  std::vector<gid_t> groups;
  int fsuid = -1, fsgid = -1;
  FileAccessAs(uid_t uid, gid_t gid) {
    groups.resize(static_cast<size_t>(std::max(::getgroups(0, nullptr), 0)));
    if (::getgroups(static_cast<int>(groups.size()), groups.data()) < 0 || ::setgroups(0, nullptr) != 0)
      throw sys_error("sandbox: drop root's groups for the walk");
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

}  // namespace

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
  h.root_dirs = root_dirs();
  // Credentials are looked for in every home (~20 dot-names each, most of
  // them absent). Each directory is looked at once: missing, its paths are
  // answered without a syscall; small (one block), its dot-names are listed
  // and an absent one needs no lookup; else one lstat per path (homes such
  // as /bin hold a thousand names: listing them cost more than it saved).
  auto dirs = std::make_shared<std::map<std::string, DirSummary>>();
  h.real = [dirs](const std::string& p) -> std::optional<std::string> {
    size_t slash = p.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      const std::string dir = p.substr(0, slash), name = p.substr(slash + 1);
      auto it = dirs->find(dir);
      if (it == dirs->end()) it = dirs->emplace(dir, look_at(dir)).first;
      const DirSummary& d = it->second;
      if (d.missing) return std::nullopt;
      if (d.dot_names && name[0] == '.' && !std::binary_search(d.dot_names->begin(), d.dot_names->end(), name))
        return std::nullopt;
    }
    return real_path(p);
  };
  h.is_dir = [](const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  };
  h.scan = [uid = h.uid, gid = h.gid](const std::string& real, const std::vector<std::string>& skip) {
    return scan_as_user(uid, gid, real, skip);
  };
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) h.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (o.overlaid())
    for (const auto& m : base::read_mountinfo()) h.mount_points.push_back(m.mount_point);
  // Asked only for limits: create probes the host again.
  if (::geteuid() == 0) {
    h.cgroup = true;
  } else if (o.limited()) {
    h.cgroup = !cgroups::choose_rootless(cgroups::rootless_host(), std::nullopt, "sandbox").path.empty();
  }
  return h;
}

}  // namespace husk::rt
