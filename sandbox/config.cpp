// The sandbox's OCI config: pure, from SandboxOptions and SandboxHost.
#include <algorithm>

#include "base/error.h"
#include "base/path.h"
#include "container/args.h"
#include "namespaces/namespaces.h"
#include "policy/policy.h"
#include "sandbox/egress.h"
#include "sandbox/glob.h"
#include "sandbox/internal.h"
#include "sandbox/proxy.h"
#include "sandbox/sandbox.h"
#include "sandbox/settings.h"
#include "spec/defaults.h"

namespace husk::rt {
namespace {

using ojson = nlohmann::ordered_json;

// Host directories that get a fresh mount instead of the host's: the
// kernel views, scratch space, and where other users' and root's files live.
const std::vector<std::string> kReplaced = {"proc", "sys", "dev", "tmp", "run", "home", "root"};

// The scratch and home directories those fresh mounts are, with their modes.
const std::pair<const char*, const char*> kFresh[] = {
    {"/tmp", "1777"}, {"/var/tmp", "1777"}, {"/run", "755"}, {"/home", "755"}, {"/root", "700"}};

const char* const kWorkingDirectory = "the working directory";

// Credential directories of the scratch home (a fresh tmpfs) that are made
// read-only there: where ssh-keygen and gpg would write keys.
const char* const kScratchHomeReadOnly[] = {".ssh", ".gnupg"};

// `size`: bytes, 0 for the kernel's default (half the memory).
ojson tmpfs(const std::string& dest, const char* mode, int64_t size) {
  ojson options = {"nosuid", "nodev", std::string("mode=") + mode};
  if (size > 0) options.push_back("size=" + std::to_string(size));
  return {{"destination", dest}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", std::move(options)}};
}

// The environment the command gets: never the caller's whole one (tokens
// live there too), only what programs need to run, plus --env.
ojson environment(const SandboxOptions& o, const SandboxHost& h) {
  std::map<std::string, std::string> env;
  auto pass = [&](const char* k) {
    if (auto it = h.env.find(k); it != h.env.end()) env[k] = it->second;
  };
  for (const char* k : {"PATH", "TERM", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "COLORTERM"}) pass(k);
  if (!env.count("PATH")) env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  env["HOME"] = h.home.empty() ? "/" : h.home;
  if (!h.user_name.empty()) env["USER"] = env["LOGNAME"] = h.user_name;
  if (!h.shell.empty()) env["SHELL"] = h.shell;
  for (const auto& e : o.env) {
    size_t eq = e.find('=');
    std::string key = e.substr(0, eq);
    if (key.empty()) throw Error("--env " + e + ": no variable name");
    if (eq != std::string::npos) {
      env[key] = e.substr(eq + 1);
    } else if (auto it = h.env.find(key); it != h.env.end()) {
      env[key] = it->second;
    } else {
      throw Error("--env " + e + ": not set in husk's environment");
    }
  }
  // A printed config runs with no proxy of ours.
  if (o.proxied() && !o.print_config) proxy_environment(env, o, !h.husk_binary.empty());
  ojson out = ojson::array();
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

// A directory the sandbox shows: where it appears, what it really is.
struct Shown {
  std::string dest, real;
  bool writable = false;
  std::string flag;  // "" for the host's own root directories
};

// What is shown: the host's root directories read-only, then the working
// directory and --rw writable, --ro read-only; parents before children.
struct ShownPaths {
  std::vector<Shown> root;   // the host's root directories
  std::vector<Shown> given;  // the working directory, --ro and --rw
  // The fresh mounts' directories as the host has them: one may be a symlink
  // (/home -> var/home on Fedora Atomic), its target under a shown directory.
  std::map<std::string, std::string> fresh_real;
  std::vector<std::string> notes;  // a --deny-write not there
};

// Where patterns are matched: the trees given (the working directory, --rw, --ro), or the writable ones.
std::vector<std::string> given_dests(const ShownPaths& s, bool writable_only) {
  std::vector<std::string> out;
  for (const auto& d : s.given)
    if (d.writable || !writable_only) out.push_back(d.dest);
  return out;
}

// The flags judged on their own, before the host is looked at.
void check_flags(const SandboxOptions& o) {
  if (o.args.empty()) throw Error("sandbox: no command given (husk sandbox [options] -- COMMAND [ARGS...])");
  if (o.net != "none" && o.net != "host") throw Error("--net " + o.net + ": must be none or host");
  if (!o.allow_hosts.empty() && o.net != "none")
    throw Error("--allow-host: the proxy is the way out of --net none; --net " + o.net + " has no use for it");
  if (o.control_fd >= 0 && o.net != "none")
    throw Error("--control-fd: it allows hosts through the proxy, the way out of --net none; --net " + o.net +
                " has no use for it");
  for (const auto& a : o.allow_hosts) parse_allowed_host(a);
  // Without the proxy nothing is reached by name but under --net host, where nothing would refuse it.
  if (!o.deny_hosts.empty() && o.net != "none")
    throw Error("--deny-host: the proxy refuses it under --net none; --net " + o.net + " has no proxy to refuse it");
  for (const auto& d : o.deny_hosts) try {
      parse_allowed_host(d);
    } catch (const Error&) {
      throw Error("--deny-host " + d + ": NAME, *.SUFFIX or either with :PORT");
    }
  if (o.allow_host_loopback && !o.proxied()) throw Error("--allow-host-loopback: no --allow-host is given");
  if (o.allow_host_private && !o.proxied()) throw Error("--allow-host-private: no --allow-host is given");
  if (!o.report.empty() && o.report_fd >= 0) throw Error("--report and --report-fd: give one of them");
}

// --memory in bytes, 0 when none is asked.
int64_t memory_bytes(const SandboxOptions& o) {
  if (o.memory.empty()) return 0;
  const int64_t memory = parse_bytes("memory", o.memory);
  if (memory <= 0) throw Error("--memory " + o.memory + ": must be a positive size");
  return memory;
}

// Adds the directory a flag names to `given`, refusing what a sandbox
// replaces or never shows by name (a symlink).
void show_given(ShownPaths& s, const SandboxHost& h, const std::string& flag, const std::string& typed, bool writable) {
  std::string dest = flag_path(flag, typed, h.cwd);
  if (dest == "/") throw Error(flag + " /: the host's root is shown read-only; name a directory below it");
  // Showing one of them again would bring back what the fresh mounts hide
  // (the host's /tmp holds the user's tmux, ssh-agent and X11 sockets).
  std::vector<std::string> replaced = {"/var/tmp"};
  for (const auto& r : kReplaced) replaced.push_back("/" + r);
  for (const auto& r : replaced)
    if (base::is_within(r, dest))
      throw Error(flag + " " + typed + ": would show the host's " + dest + ", which a sandbox replaces; name a "
                  "directory below it");
  std::optional<std::string> real = h.real(dest);
  if (!real) throw Error(flag + " " + typed + ": no such file or directory");
  // A symlink may have been planted by an earlier sandbox: what is shown
  // is named by its real path only.
  if (*real != dest)
    throw Error(flag + " " + typed + ": is a symlink (or below one) to " + *real + "; name " + *real + " itself");
  for (const auto& [path, fresh] : s.fresh_real)
    if (base::is_within(fresh, *real))
      throw Error(flag + " " + typed + ": would show the host's " + path + " (" + fresh +
                  "), which a sandbox replaces; name a directory below it");
  for (auto& a : s.given) {
    if (a.dest != dest) continue;
    // The working directory is writable unless a flag says otherwise.
    if (a.flag != kWorkingDirectory) throw Error(flag + " " + typed + ": already given as " + a.flag);
    a = {dest, *real, writable, flag};
    return;
  }
  s.given.push_back({dest, *real, writable, flag});
}

ShownPaths shown_paths(const SandboxOptions& o, const SandboxHost& h) {
  ShownPaths s;
  for (const auto& d : h.root_dirs) {
    if (std::find(kReplaced.begin(), kReplaced.end(), d) != kReplaced.end()) continue;
    // A symlink (/bin -> usr/bin) is shown as its directory: the root is empty.
    if (std::optional<std::string> real = h.real("/" + d)) s.root.push_back({"/" + d, *real});
  }
  for (const auto& [path, mode] : kFresh)
    if (std::optional<std::string> real = h.real(path)) s.fresh_real[path] = *real;
  if (h.cwd != "/") show_given(s, h, kWorkingDirectory, h.cwd, true);
  for (const auto& p : o.ro) show_given(s, h, "--ro", p, false);
  for (const auto& p : o.rw) show_given(s, h, "--rw", p, true);
  // Read-only inside a writable directory; elsewhere the host is read-only (or hidden) already.
  auto in_writable = [&](const std::string& real) {
    return std::any_of(s.given.begin(), s.given.end(),
                       [&](const Shown& a) { return a.writable && base::is_within(real, a.real); });
  };
  for (const auto& p : o.deny_write) {
    const std::string path = flag_path("--deny-write", p, h.cwd);
    if (is_glob(p) && !h.real(path)) {
      // A symlink matched: what it names is writable or not where it is.
      for (const auto& m : glob_matches("--deny-write", p, path, given_dests(s, true), h.glob))
        if (h.real(m) == m && in_writable(m)) show_given(s, h, "--deny-write", m, false);
      continue;
    }
    std::optional<std::string> real = h.real(path);
    if (!real) s.notes.push_back("--deny-write " + p + ": not there, so not protected: the command may make it");
    else if (in_writable(*real)) show_given(s, h, "--deny-write", p, false);
  }
  if (auto dir = settings_dir_protection(h.settings_dir, h.home, h.real, given_dests(s, true)))
    show_given(s, h, "the default settings' directory", *dir, false);
  std::stable_sort(s.given.begin(), s.given.end(), [](const Shown& a, const Shown& b) {
    return std::count(a.dest.begin(), a.dest.end(), '/') < std::count(b.dest.begin(), b.dest.end(), '/');
  });
  return s;
}

// The home's secrets by their first name (.config: 15 of them): a home
// without that name needs one lookup for all of its group.
const std::vector<std::pair<std::string, std::vector<std::string>>>& home_secrets_by_first_name() {
  static const auto grouped = [] {
    std::vector<std::pair<std::string, std::vector<std::string>>> out;
    for (const auto& c : policy::home_secrets()) {
      const std::string first = c.substr(0, c.find('/'));
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == first; });
      if (it == out.end()) it = out.insert(out.end(), {first, {}});
      it->second.push_back(c);
    }
    return out;
  }();
  return grouped;
}

// What a sandbox never shows: the policy's secrets, husk's own state and
// caches of this user, the user's runtime directory, every home's credentials
// (only those whose first name is there: nothing below a missing one is).
std::vector<std::string> credentials(const SandboxHost& h) {
  std::vector<std::string> out = policy::secret_files();
  // husk's own state and caches of this user: written by husk, read back.
  // The whole runtime directory: this sandbox's own files are there, and the
  // user's session sockets (the systemd user manager's bus would start
  // commands outside), wherever XDG_RUNTIME_DIR points.
  out.push_back("/tmp/husk-" + std::to_string(h.uid));
  if (auto it = h.env.find("XDG_RUNTIME_DIR"); it != h.env.end() && it->second.size() > 1 && it->second[0] == '/')
    out.push_back(it->second);
  std::vector<std::string> homes = h.homes;
  homes.push_back(h.home);  // a user from LDAP or homed has no /etc/passwd line
  // System accounts share homes (/bin, /nonexistent): each is looked at once.
  std::sort(homes.begin(), homes.end());
  homes.erase(std::unique(homes.begin(), homes.end()), homes.end());
  for (const auto& home : homes) {
    if (home == "/" || !h.real(home)) continue;
    for (const auto& [first, group] : home_secrets_by_first_name()) {
      if (group.size() > 1 && !h.real(home + "/" + first)) continue;
      for (const auto& c : group) out.push_back(home + "/" + c);
    }
  }
  out.push_back("/run/user/" + std::to_string(h.uid));
  return out;
}

// What the sandbox hides. masked: the defaults; dirs: the hidden
// directories, each an empty read-only one over it (maskedPaths would give a
// tmpfs of mode 1777, which looks writable); files: an empty read-only file
// bound over each (maskedPaths' null device takes writes: on a read-only
// mount a device stays writable).
struct Hidden {
  std::vector<std::string> masked, dirs, files;
};

// Deny wins: every credential inside something shown is hidden there, a
// directory inside a credential is refused; then --hide.
Hidden hidden_paths(const SandboxOptions& o, const SandboxHost& h, std::vector<std::string> masked,
                    const ShownPaths& s) {
  Hidden out;
  auto mask = [&](const std::string& path) {
    for (const auto* list : {&masked, &out.dirs, &out.files})
      if (std::find(list->begin(), list->end(), path) != list->end()) return;
    if (h.is_dir && h.is_dir(path)) {
      out.dirs.push_back(path);
      return;
    }
    out.files.push_back(path);
  };
  for (const auto& c : credentials(h)) {
    std::optional<std::string> real = h.real(c);
    if (!real) continue;
    for (const auto* list : {&s.root, &s.given})
      for (const auto& d : *list) {
        if (!d.flag.empty() && base::is_within(d.real, *real))
          throw Error(d.flag + " " + d.dest + ": is inside " + c + ", which a sandbox never shows");
        if (base::is_within(*real, d.real)) mask(d.dest + real->substr(d.real.size()));
      }
  }
  for (const auto& p : o.hide) {
    std::string path = flag_path("--hide", p, h.cwd);
    if (is_glob(p) && !h.real(path)) {
      for (const auto& m : glob_matches("--hide", p, path, given_dests(s, false), h.glob)) {
        // A link to nothing or into what is hidden already: nothing to hide there (a mount would make it).
        const std::optional<std::string> r = h.real(m);
        auto inside = [&](const std::string& d) { return base::is_within(m, d) || (r && base::is_within(*r, d)); };
        if (r && std::none_of(out.dirs.begin(), out.dirs.end(), inside)) mask(m);
      }
      continue;
    }
    if (!h.real(path)) throw Error("--hide " + p + ": no such file or directory");
    mask(path);
  }
  out.masked = std::move(masked);
  return out;
}

// The default config's masks over /proc and /sys; none under --allow-nested
// (see set_isolation), where what they cover is what the user reads outside:
// refused for root, whose uid owns /proc/sysrq-trigger and /proc/sys.
std::vector<std::string> kernel_masks(const SandboxOptions& o, const SandboxHost& h, std::vector<std::string> masks) {
  if (!o.allow_nested) return masks;
  if (h.uid == 0)
    throw Error("--allow-nested: the command would run as root, which owns /proc/sysrq-trigger and /proc/sys; a "
                "nested sandbox needs them unmasked: run it as a user");
  return {};
}

// The default config's kernel views, as a user namespace of the user's own can have them.
ojson kernel_mounts(const ojson& defaults, const SandboxOptions& o) {
  ojson mounts = ojson::array();
  for (const auto& m : defaults) {
    const std::string dest = m["destination"];
    if (dest == "/sys/fs/cgroup") continue;
    if (dest == "/sys" && o.net == "host") {
      // sysfs needs a network namespace of the user's own: the host's, read-only.
      mounts.push_back(bind_mount("/sys", "/sys", false, false));
      continue;
    }
    ojson copy = m;
    if (dest == "/dev/pts") {  // gid 5 is not mapped in the sandbox's user namespace
      auto& opts = copy["options"];
      opts.erase(std::remove(opts.begin(), opts.end(), "gid=5"), opts.end());
    }
    mounts.push_back(copy);
  }
  return mounts;
}

// --overlay: the shown directories (the working directory too) become
// writable views whose changes go to an upper layer; --rw and --ro stay binds.
class Overlays {
 public:
  Overlays(const SandboxOptions& o, const SandboxHost& h, const std::string& dir, SandboxConfig& out)
      : on_(o.overlaid()), mount_points_(h.mount_points), dir_(dir), dirs_(out.overlay_dirs), uppers_(out.uppers) {}
  bool on() const { return on_; }

  // In a user namespace the kernel refuses an overlay whose lower directory
  // has mounts below it (they would be uncovered): those stay read-only.
  bool possible(const Shown& d) const {
    for (const auto& m : mount_points_)
      if (m != d.real && base::is_within(m, d.real)) return false;
    return true;
  }

  ojson mount(const Shown& d) {
    if (d.real.find_first_of(",:") != std::string::npos || dir_.find_first_of(",:") != std::string::npos)
      throw Error("--overlay: " + d.real + " or " + dir_ + " has a ',' or ':', which overlayfs options cannot carry");
    std::string name = std::to_string(dirs_.size() / 2) + "-" + d.dest.substr(d.dest.rfind('/') + 1);
    std::string upper = dir_ + "/upper/" + name, work = dir_ + "/work/" + name;
    dirs_.push_back(upper);
    dirs_.push_back(work);
    uppers_.emplace_back(upper, d.dest);
    // userxattr: mounted in the sandbox's user namespace, which trusted.* xattrs are not.
    return ojson{{"destination", d.dest},
                 {"type", "overlay"},
                 {"source", "overlay"},
                 {"options", {"lowerdir=" + d.real, "upperdir=" + upper, "workdir=" + work, "userxattr", "nosuid",
                              "nodev"}}};
  }

 private:
  bool on_;
  const std::vector<std::string>& mount_points_;
  const std::string& dir_;
  std::vector<std::string>& dirs_;
  std::vector<std::pair<std::string, std::string>>& uppers_;
};

// The host's root directories: read-only binds, or overlays.
void mount_root_dirs(ojson& mounts, const ShownPaths& s, Overlays& overlays, std::vector<std::string>& notes) {
  std::vector<std::string> kept_read_only;
  for (const auto& d : s.root) {
    if (overlays.on() && overlays.possible(d)) {
      mounts.push_back(overlays.mount(d));
    } else {
      if (overlays.on()) kept_read_only.push_back(d.dest);
      mounts.push_back(bind_mount(d.dest, d.real, false, false));
    }
  }
  if (kept_read_only.empty()) return;
  std::string list;
  for (const auto& d : kept_read_only) list += (list.empty() ? "" : ", ") + d;
  const bool one = kept_read_only.size() == 1;
  notes.push_back("--overlay: " + list + (one ? " stays" : " stay") + " read-only (file systems are mounted below " +
                  (one ? "it)" : "them)"));
}

// The fresh scratch and home directories, over the host's.
void mount_fresh(ojson& mounts, const SandboxHost& h, const ShownPaths& s, int64_t tmpfs_size) {
  const bool has_var = std::find(h.root_dirs.begin(), h.root_dirs.end(), "var") != h.root_dirs.end();
  for (const auto& [path, mode] : kFresh) {
    if (path == std::string("/var/tmp") && !has_var) continue;
    mounts.push_back(tmpfs(path, mode, tmpfs_size));
    // A symlink's target shows through a directory bound above: covered too.
    auto real = s.fresh_real.find(path);
    if (real == s.fresh_real.end() || real->second == path) continue;
    for (const auto& d : s.root)
      if (base::is_within(real->second, d.real)) {
        mounts.push_back(tmpfs(d.dest + real->second.substr(d.real.size()), mode, tmpfs_size));
        break;
      }
  }
}

// --net host: the resolver's file often lives in /run (systemd-resolved,
// resolvconf), which the sandbox replaces: its directory is shown.
void mount_resolver(ojson& mounts, const SandboxOptions& o, const SandboxHost& h) {
  if (o.net != "host") return;
  if (auto resolv = h.real("/etc/resolv.conf"); resolv && base::is_within(*resolv, "/run")) {
    std::string dir = resolv->substr(0, resolv->rfind('/'));
    mounts.push_back(bind_mount(dir, dir, false, false));
  }
}

// The proxies (--allow-host, --control-fd): the host's husk at a path of its own, for `husk connect`.
void mount_husk(ojson& mounts, const SandboxOptions& o, const SandboxHost& h) {
  if (!o.proxied() || o.print_config || h.husk_binary.empty()) return;
  mounts.push_back(bind_mount(kHuskInside, h.husk_binary, false, true));
}

// The user's home as scratch space, then what the flags show, above it.
void mount_given(ojson& mounts, const SandboxHost& h, const ShownPaths& s, Overlays& overlays, int64_t tmpfs_size) {
  // HOME exists and is the user's scratch space when nothing shows it.
  // Wherever it is (/var/lib/postgresql), unless a flag shows it.
  bool home_shown = h.home.empty() || h.home == "/";
  for (const auto& a : s.given) home_shown |= base::is_within(h.home, a.dest);
  if (!home_shown) {
    mounts.push_back(tmpfs(h.home, "700", tmpfs_size));
    // Keys made there would be lost at exit: refused at once instead.
    for (const char* d : kScratchHomeReadOnly) mounts.push_back(empty_read_only_dir(h.home + "/" + d));
  }
  for (const auto& a : s.given) {
    const bool overlaid = overlays.on() && a.flag == kWorkingDirectory;
    if (overlaid && !overlays.possible(a))
      throw Error("--overlay: the working directory " + a.dest + " has file systems mounted below it");
    mounts.push_back(overlaid ? overlays.mount(a)
                              : bind_mount(a.dest, a.real, a.writable, h.is_dir && !h.is_dir(a.real)));
  }
}

// The persistence files of each writable directory (persist.h): read-only,
// the missing ones made impossible; less --allow-write.
void mount_persist(ojson& mounts, const SandboxOptions& o, const SandboxHost& h, const ShownPaths& s,
                   const Hidden& hidden, const std::string& empty_file, SandboxConfig& out) {
  std::vector<std::string> allow, used;
  for (const auto& p : o.allow_write) allow.push_back(flag_path("--allow-write", p, h.cwd));
  const std::optional<std::string> home = h.home.empty() ? std::nullopt : h.real(h.home);
  for (const auto& a : s.given) {
    // Under --overlay the working directory's changes stay in the upper layer.
    if (!a.writable || (o.overlaid() && a.flag == kWorkingDirectory)) continue;
    // What is shown otherwise is not this directory's to walk.
    std::vector<std::string> skip = hidden.dirs;
    for (const auto& b : s.given) skip.push_back(b.real);
    const std::vector<PersistFound> found = h.scan ? h.scan(a.real, skip) : std::vector<PersistFound>{};
    out.writable.push_back(a.real);
    if (!found.empty() && found.back().rel.empty())
      out.notes.push_back("the persistence walk of " + a.real + " reached its bound of names: files in nested "
                          "repositories it did not reach there are not protected");
    const std::vector<Protection> plan = plan_protection(found, home && *home == a.real);
    for (auto& m : persist_mounts(plan, a.dest, a.real, allow, used, out.placeholders, out.guarded, empty_file))
      mounts.push_back(std::move(m));
    for (const auto& p : plan) {
      if (p.kind != Protection::kWatch) continue;
      auto open = std::find_if(allow.begin(), allow.end(),
                               [&](const std::string& w) { return base::is_within(a.dest + "/" + p.rel, w); });
      if (open == allow.end()) out.watched.push_back(a.real + "/" + p.rel);
      else used.push_back(*open);
    }
  }
  for (size_t i = 0; i < allow.size(); ++i)
    if (std::find(used.begin(), used.end(), allow[i]) == used.end())
      throw Error("--allow-write " + o.allow_write[i] + ": protects nothing in a writable directory (the protected "
                  "names are listed in the README)");
}

// The command as the user, without capabilities, in its working directory.
void set_process(ojson& p, const SandboxOptions& o, const SandboxHost& h) {
  p["terminal"] = false;
  p["user"] = {{"uid", h.uid}, {"gid", h.gid}};
  p["args"] = o.args;
  p["env"] = environment(o, h);
  p["cwd"] = h.cwd;
  const ojson none = ojson::array();
  p["capabilities"] = {{"bounding", none}, {"effective", none}, {"permitted", none}};
  p.erase("rlimits");  // the caller's own limits, as any command it runs
}

// Namespaces (the network's unless --net host), the user mapped to itself,
// the masked paths and the seccomp profile.
void set_isolation(ojson& lx, const SandboxOptions& o, const SandboxHost& h, const Hidden& hidden) {
  ojson namespaces = ojson::array();
  for (const char* t : {"pid", "ipc", "uts", "mount", "cgroup", "user"}) namespaces.push_back({{"type", t}});
  if (o.net == "none") namespaces.push_back({{"type", "network"}});
  lx["namespaces"] = std::move(namespaces);
  // The user is itself inside: files keep their owners, and nothing maps to
  // host root unless root asked for uid 0 itself.
  lx["uidMappings"] = {{{"containerID", h.uid}, {"hostID", h.uid}, {"size", 1}}};
  lx["gidMappings"] = {{{"containerID", h.gid}, {"hostID", h.gid}, {"size", 1}}};
  lx["maskedPaths"] = hidden.masked;
  // The kernel mounts a nested proc or sysfs only beside one with nothing
  // mounted over it (masked or read-only paths).
  if (o.allow_nested) lx["readonlyPaths"] = ojson::array();
  lx["seccomp"] = spec::default_seccomp(o.allow_nested);
  lx.erase("resources");
}

// Limits: in the container's cgroup when it gets one, else what rlimits can say.
void set_limits(ojson& cfg, const SandboxOptions& o, const SandboxHost& h, int64_t memory,
                std::vector<std::string>& notes) {
  ojson resources = ojson::object();
  ojson rlimits = ojson::array();
  auto rlimit = [&](const char* type, uint64_t n) { rlimits.push_back({{"type", type}, {"hard", n}, {"soft", n}}); };
  if (o.pids) {
    if (h.cgroup) resources["pids"] = {{"limit", o.pids}};
    else {
      rlimit("RLIMIT_NPROC", o.pids);
      notes.push_back("--pids " + std::to_string(o.pids) +
                      ": no cgroup of your own here, set as RLIMIT_NPROC (the sandbox user's processes)");
    }
  }
  if (memory && h.cgroup) {
    resources["memory"] = {{"limit", memory}, {"swap", memory}};
    notes.push_back("--memory " + o.memory + ": in the sandbox's cgroup" +
                    (h.systemd_scope ? " (a scope of your systemd manager)" : "") +
                    ", swap included: every page it uses counts, its files in /tmp and the home too");
  } else if (memory) {
    // Not RLIMIT_AS: V8, the JVM and Go reserve far more address space
    // than they touch (PROT_NONE, which RLIMIT_DATA does not count).
    rlimit("RLIMIT_DATA", static_cast<uint64_t>(memory));
    notes.push_back("--memory " + o.memory +
                    ": no cgroup of your own here, set as RLIMIT_DATA (the private writable memory of each "
                    "process; address space only reserved is not counted) and as the size of each tmpfs the "
                    "sandbox gets (/tmp, your home, ...): a best effort, processes, shared memory, files in several "
                    "of them, /dev/shm and memfds add up");
  }
  if (!o.cpus.empty()) {
    const int64_t quota = cpus_quota(o.cpus);
    if (h.cgroup) resources["cpu"] = {{"quota", quota}, {"period", kCpuPeriod}};
    else notes.push_back("--cpus " + o.cpus + ": not applied, it needs a cgroup of your own (none here)");
  }
  if (!resources.empty()) cfg["linux"]["resources"] = resources;
  if (!rlimits.empty()) cfg["process"]["rlimits"] = rlimits;
}

// --print-config: what runc and crun refuse is changed. runc wants uid 0
// of the user namespace mapped, and a user's own uid is all it may map: the
// command is that uid 0, without capabilities. crun 1.8 refuses 1.3.0
// ("unknown version") and takes 1.1.0, which has every feature used (rro).
void for_other_runtimes(ojson& cfg, const SandboxOptions& o, std::vector<std::string>& notes) {
  cfg["ociVersion"] = "1.1.0";
  cfg["linux"]["uidMappings"][0]["containerID"] = 0;
  cfg["linux"]["gidMappings"][0]["containerID"] = 0;
  cfg["process"]["user"] = {{"uid", 0}, {"gid", 0}};
  notes.push_back("--print-config: the command is uid 0 of its user namespace (the user's uid outside, no "
                  "capabilities): runc needs uid 0 mapped; root.path is an empty directory of that user's");
  if (!o.allow_hosts.empty())
    notes.push_back("--allow-host: no proxy runs for a printed config: the command has no network");
}

}  // namespace

std::string flag_path(const std::string& flag, const std::string& path, const std::string& cwd) {
  if (path.empty()) throw Error(flag + ": empty path");
  return ns::clean_path(path[0] == '/' ? path : cwd + "/" + path);
}

void root_of_its_own(ojson& config) {
  // Mount points only: 1 MiB holds thousands.
  config["mounts"].insert(config["mounts"].begin(), tmpfs("/", "755", 1 << 20));
}

SandboxConfig sandbox_config(const SandboxOptions& o, const SandboxHost& h, const std::string& rootfs,
                             const std::string& overlay_dir, const std::string& empty_file) {
  check_flags(o);
  SandboxConfig out;
  ojson cfg = spec::default_config({.permissive = true});
  const int64_t memory = memory_bytes(o);
  // Files in a tmpfs count against a cgroup's memory, never against an
  // rlimit: without a cgroup each of the sandbox's tmpfs is capped instead.
  const int64_t tmpfs_size = h.cgroup ? 0 : memory;
  const ShownPaths shown = shown_paths(o, h);
  const Hidden hidden = hidden_paths(o, h, kernel_masks(o, h, cfg["linux"]["maskedPaths"]), shown);
  out.notes.insert(out.notes.end(), shown.notes.begin(), shown.notes.end());

  ojson mounts = kernel_mounts(cfg["mounts"], o);
  Overlays overlays(o, h, overlay_dir, out);
  mount_root_dirs(mounts, shown, overlays, out.notes);
  mount_fresh(mounts, h, shown, tmpfs_size);
  mount_resolver(mounts, o, h);
  mount_husk(mounts, o, h);
  mount_given(mounts, h, shown, overlays, tmpfs_size);
  mount_persist(mounts, o, h, shown, hidden, empty_file, out);
  // Last: over everything bound above them.
  for (const auto& d : hidden.dirs) mounts.push_back(empty_read_only_dir(d));
  for (const auto& f : hidden.files) mounts.push_back(hidden_file(f, empty_file));
  pin_parents(mounts, h.real);  // none of them renamed away with its parent
  cfg["mounts"] = std::move(mounts);

  set_process(cfg["process"], o, h);
  cfg["root"] = {{"path", rootfs}, {"readonly", true}};
  cfg["hostname"] = "sandbox";
  set_isolation(cfg["linux"], o, h, hidden);
  set_limits(cfg, o, h, memory, out.notes);
  // Landlock walks around each hidden path, one rule per entry beside it
  // (/etc has 150): not around those the file modes close to the user.
  for (const auto* list : {&hidden.masked, &hidden.dirs, &hidden.files})
    for (const auto& p : *list)
      if (!base::is_within(p, "/proc") && !base::is_within(p, "/sys") && !(h.closed_to_user && h.closed_to_user(p)))
        out.hidden.push_back(p);
  out.landlock = landlock_plan(o, h, cfg, out.hidden);
  if (o.print_config) for_other_runtimes(cfg, o, out.notes);
  out.config = std::move(cfg);
  return out;
}

}  // namespace husk::rt
