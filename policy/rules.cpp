// The rules over the spec model: what each rule reads of config.json and
// the finding it reports (the seccomp-syscalls table is in seccomp_rules.cpp).
#include <sys/mount.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "base/path.h"
#include "policy/internal.h"
#include "spec/mount_options.h"

namespace husk::policy {
const std::vector<std::string>& secret_files() {
  static const std::vector<std::string> kFiles = {
      "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/security/opasswd", "/etc/sudoers", "/root",
      "/run/docker.sock", "/var/run/docker.sock", "/run/containerd/containerd.sock",
      "/var/run/containerd/containerd.sock", "/run/podman/podman.sock", "/var/run/podman/podman.sock",
      "/run/crio/crio.sock", "/var/run/crio/crio.sock", "/run/buildkit/buildkitd.sock"};
  return kFiles;
}

// Paths relative to a home, no wildcards: a file or a whole directory (a
// browser's profiles hold cookies and saved passwords under names of its own).
// Each is a lookup per home at start: a name in the home or in .config costs
// least (those directories are looked at anyway).
const std::vector<std::string>& home_secrets() {
  static const std::vector<std::string> kPaths = {
      ".ssh", ".aws", ".config/gcloud", ".azure", ".kube", ".docker", ".gnupg", ".netrc", ".git-credentials",
      ".config/gh", ".config/hub", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
      ".local/share/keyrings", ".password-store", ".vault-token", ".terraform.d/credentials.tfrc.json",
      ".config/containers/auth.json",
      // AI agents' tokens: Claude Code, Codex, Gemini CLI, GitHub Copilot (hosts.json, apps.json).
      ".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json", ".config/github-copilot",
      // Databases' and object stores' passwords, cloud CLIs' tokens.
      ".pgpass", ".my.cnf", ".s3cfg", ".boto", ".config/rclone", ".config/op", ".config/hcloud",
      // Package indexes' and build tools' passwords (pip's index-url may carry a token, as .npmrc does).
      ".config/pip/pip.conf", ".pip/pip.conf", ".m2/settings.xml", ".gradle/gradle.properties",
      // Browsers' profiles (cookies, saved passwords), VS Code's state (its extensions' sessions).
      ".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware",
      ".config/Code/User/globalStorage",
      // Histories: passwords typed on command lines and in database shells.
      ".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history", ".node_repl_history",
      ".local/share/fish/fish_history"};
  return kPaths;
}

namespace {

// Pod Security Standards, baseline: the capabilities a container may add.
// NET_RAW is kept too: containerd, CRI-O and Docker grant it by default and
// the standard only looks at what a pod adds, which OCI cannot tell apart.
const std::set<std::string> kBaselineCaps = {
    "CAP_AUDIT_WRITE", "CAP_CHOWN",   "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID",
    "CAP_KILL",        "CAP_MKNOD",   "CAP_NET_BIND_SERVICE", "CAP_NET_RAW", "CAP_SETFCAP",
    "CAP_SETGID",      "CAP_SETPCAP", "CAP_SETUID",       "CAP_SYS_CHROOT"};
const std::set<std::string> kRestrictedCaps = {"CAP_NET_BIND_SERVICE"};

// The standard's safe sysctls: namespaced and unable to affect other pods.
const std::set<std::string> kSafeSysctls = {
    "kernel.shm_rmid_forced",      "net.ipv4.ip_local_port_range",  "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",     "net.ipv4.ping_group_range",     "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",      "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes"};

const std::set<std::string> kSelinuxTypes = {"container_t", "container_init_t", "container_kvm_t",
                                             "container_engine_t"};

// Non-bind mount types a container may have, and where.
const std::set<std::string> kMountTypes = {"proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2", "overlay"};

// The masked and read-only entries without which /proc and /sys show or
// change the host (every engine's defaults hold them).
const std::vector<std::string> kMustMask = {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"};
const std::vector<std::string> kMustReadonly = {"/proc/sys", "/proc/sysrq-trigger"};

// Files that give whoever reads them the user's or the host's credentials,
// and the sockets that give root on the host. A mount of one of them, of
// anything below them or of a directory holding them is reported.
const std::vector<std::string>& kSecretFiles = secret_files();
// The same below any home directory.
const std::vector<std::string>& kHomeSecrets = home_secrets();
const std::set<std::string> kEngineSockets = {"docker.sock", "containerd.sock", "podman.sock", "crio.sock"};

// What the engines let every container open that is not privileged:
// containerd's default rules, Docker's default spec and runc's own defaults
// (podman writes none and relies on those): null, zero, full, random,
// urandom, tty, console, ptmx, the pts and runc's net/tun. Docker and
// containerd allow 5:1 although a container's /dev/console is a pts.
const std::vector<DeviceClass> kDefaultDevices = {{'c', 1, 3}, {'c', 1, 5},   {'c', 1, 7}, {'c', 1, 8},
                                                  {'c', 1, 9}, {'c', 5, 0},   {'c', 5, 1}, {'c', 5, 2},
                                                  {'c', 136, -1}, {'c', 10, 200}};

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/'))
    if (!part.empty()) out.push_back(part);
  return out;
}

// is_below where a "*" component of `pattern` matches any one name.
bool is_below_pattern(const std::string& path, const std::string& pattern) {
  if (pattern.find('*') == std::string::npos) return base::is_within(path, pattern);
  const auto p = components(path), want = components(pattern);
  if (p.size() < want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i)
    if (want[i] != "*" && want[i] != p[i]) return false;
  return true;
}

// Read-only as the mount code will make it: the last of ro/rw wins, and
// "rro" sets the recursive attribute.
bool is_read_only(const spec::Mount& m) {
  const spec::MountOptions mo = spec::parse_mount_options(m.options);
  return (mo.flags & MS_RDONLY) || (mo.attr_set & MOUNT_ATTR_RDONLY);
}

// Why a bind source exposes credentials, or "".
std::string secret_reason(const std::string& src) {
  for (const auto& f : kSecretFiles)
    if (base::is_within(src, f) || base::is_within(f, src)) return "holds or is " + f;
  std::string name = src.substr(src.rfind('/') + 1);
  if (kEngineSockets.count(name)) return "a container engine's socket";
  // A home directory, or the tree holding them, or a credential dir in one.
  const std::vector<std::string> comps = components(src);
  if (comps.empty() || (comps[0] == "home" && comps.size() <= 2)) return "holds the users' credential directories";
  for (size_t i = 0; i < comps.size(); ++i) {
    for (const auto& s : kHomeSecrets) {
      std::string joined = comps[i];
      for (size_t j = i + 1; j < comps.size() && joined.size() < s.size(); ++j) joined += "/" + comps[j];
      if (joined == s || comps[i] == s) return "a credential directory (" + s + ")";
    }
  }
  return "";
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

class Checker {
 public:
  Checker(const spec::Spec& s, const Policy& p, const std::string& bundle, const HostProbe& probe)
      : spec_(s), policy_(p), bundle_(plain_path(bundle)), probe_(probe) {}

  std::vector<Finding> run() {
    const spec::Linux empty;
    const spec::Linux& linux_ = spec_.linux_ ? *spec_.linux_ : empty;
    namespaces(linux_);
    hooks();
    capabilities();
    root();
    mounts();
    id_maps(linux_);
    devices(linux_);
    proc(linux_);
    sysctls(linux_);
    lsm();
    seccomp(linux_);
    process_rules(linux_);
    resources(linux_);
    std::stable_sort(findings_.begin(), findings_.end(), [](const Finding& a, const Finding& b) {
      auto rank = [](const std::string& id) { return std::find(rule_ids().begin(), rule_ids().end(), id) - rule_ids().begin(); };
      return rank(a.rule) < rank(b.rule);
    });
    return findings_;
  }

 private:
  void add(const std::string& rule, const std::string& field, const std::string& value, const std::string& why) {
    auto it = policy_.rules.find(rule);
    if (it == policy_.rules.end() || it->second == Severity::off) return;
    findings_.push_back({it->second, rule, field, value, why});
  }

  // /proc/1/ns/*, /proc/self/ns/* as written, or (asked of the host) the
  // same namespace reached through any other path, e.g. a kernel thread's.
  bool is_host_namespace(const std::string& path, const std::string& type) const {
    if (path.empty()) return false;
    std::string p = plain_path(path);
    for (const char* prefix : {"/proc/1/ns/", "/proc/self/ns/", "/proc/thread-self/ns/"})
      if (p.rfind(prefix, 0) == 0) return true;
    return probe_.host_namespace && probe_.host_namespace(path, type);
  }

  void namespaces(const spec::Linux& l) {
    for (size_t i = 0; i < l.namespaces.size(); ++i)
      if (is_host_namespace(l.namespaces[i].path, l.namespaces[i].type))
        add("host-namespaces", "linux.namespaces[" + std::to_string(i) + "].path", l.namespaces[i].path,
            "the container joins the host's " + l.namespaces[i].type + " namespace");
    for (const char* type : {"network", "pid", "ipc"}) {
      const spec::Namespace* ns = l.find_namespace(type);
      std::string field = std::string("linux.namespaces (") + type + ")";
      if (!ns)
        add("host-namespaces", field, "absent: the host's", std::string("the container shares the host's ") + type + " namespace");

      const bool network = std::string(type) == "network";
      if (network && (!ns || !ns->path.empty()) && !(ns && is_host_namespace(ns->path, type)))
        add("network-not-isolated", field, ns ? ns->path : "absent: the host's",
            "code in the container can reach the network (a new network namespace cuts it off)");
    }
  }

  // Every hook is a host program the runtime runs with its own privileges:
  // createContainer before the root is pivoted and privileges dropped,
  // startContainer before the seccomp filter is loaded.
  void hooks() {
    const std::pair<const char*, const std::vector<spec::Hook>*> kinds[] = {
        {"prestart", &spec_.hooks.prestart},          {"createRuntime", &spec_.hooks.create_runtime},
        {"createContainer", &spec_.hooks.create_container}, {"startContainer", &spec_.hooks.start_container},
        {"poststart", &spec_.hooks.poststart},        {"poststop", &spec_.hooks.poststop}};
    for (const auto& [kind, list] : kinds)
      for (size_t i = 0; i < list->size(); ++i) {
        const std::string& path = (*list)[i].path;
        if (std::count(policy_.allowed_hooks.begin(), policy_.allowed_hooks.end(), plain_path(path))) continue;
        add("host-hooks", std::string("hooks.") + kind + "[" + std::to_string(i) + "].path", path,
            "a host program the runtime runs with its privileges, before the container's confinement is complete");
      }
  }

  void capabilities() {
    if (!spec_.process || !spec_.process->capabilities) return;
    const auto& c = *spec_.process->capabilities;
    const auto& allowed = policy_.restricted_capabilities ? kRestrictedCaps : kBaselineCaps;
    std::map<std::string, std::vector<std::string>> sets;  // cap -> the sets holding it
    auto scan = [&](const std::vector<std::string>& set, const char* name) {
      for (const auto& cap : set) {
        if (allowed.count(cap) || std::count(policy_.allowed_capabilities.begin(), policy_.allowed_capabilities.end(), cap))
          continue;
        sets[cap].push_back(name);
      }
    };
    scan(c.bounding, "bounding");
    scan(c.effective, "effective");
    scan(c.permitted, "permitted");
    scan(c.inheritable, "inheritable");
    scan(c.ambient, "ambient");
    for (const auto& [cap, in] : sets)
      add("privileged-capabilities", "process.capabilities", cap + " (" + join(in) + ")",
          policy_.restricted_capabilities ? "restricted keeps only CAP_NET_BIND_SERVICE"
                                          : "a capability beyond the engines' default set widens what root in the container can do to the host");
  }

  // The host paths a mount exposes: a bind's source, an overlay's layers.
  static std::vector<std::pair<std::string, std::string>> host_paths(const spec::Mount& m, size_t i) {
    std::vector<std::pair<std::string, std::string>> out;  // field, path
    const std::string at = "mounts[" + std::to_string(i) + "]";
    if (spec::is_bind(m)) out.push_back({at + ".source", m.source});
    for (const auto& l : spec::overlay_layers(m)) out.push_back({at + ".options[" + std::to_string(l.option) + "]", l.dir});
    return out;
  }

  void mounts() {
    // In a mount namespace joined by path, sources and layers name that
    // namespace's files: the host's view of the same string judges nothing.
    const spec::Namespace* joined = spec_.linux_ ? spec_.linux_->find_namespace("mount") : nullptr;
    if (joined && joined->path.empty()) joined = nullptr;
    for (size_t i = 0; i < spec_.mounts.size(); ++i) {
      const auto& m = spec_.mounts[i];
      for (const auto& [field, source] : host_paths(m, i)) {
        if (joined)
          add("host-path-mounts", field, source,
              "a path in the joined mount namespace " + joined->path + ", which cannot be judged from the host");
        else
          host_path(field, source, m.destination);
      }
      if (spec::is_bind(m)) continue;
      const std::string field = "mounts[" + std::to_string(i) + "]";
      if (!kMountTypes.count(m.type))
        add("mount-types", field + ".type", m.type.empty() ? "(none)" : m.type,
            "a filesystem beyond proc, sysfs, tmpfs, devpts, mqueue, cgroup and overlay (a host disk, binfmt_misc, debugfs...)");
      else if (m.type == "proc" && plain_path(m.destination) != "/proc")
        add("mount-types", field + ".destination", m.destination, "a proc mount outside /proc is not masked: /proc/sys and the rest are writable there");
      else if ((m.type == "sysfs" || m.type == "cgroup" || m.type == "cgroup2") && !is_read_only(m))
        add("mount-types", field + ".options", m.type + " without ro", "the host's sysfs or cgroup settings become writable");
    }
  }

  // root.path, resolved: the bundle's own rootfs or an engine's.
  void root() {
    if (!spec_.root) return;
    host_path("root.path", spec_.root->path, "/");
  }

  void host_path(const std::string& field, const std::string& source, const std::string& destination) {
    std::string src = source.empty() || source[0] == '/' ? plain_path(source) : plain_path(bundle_ + "/" + source);
    if (src.empty()) {
      add("host-path-mounts", field, source, "a host path with \"..\" cannot be checked");
      return;
    }
    if (probe_.resolve) src = plain_path(probe_.resolve(src));
    std::string secret = secret_reason(src);
    if (!secret.empty()) {
      add("sensitive-mounts", field, source, secret + ": credentials or root on the host become readable");
      return;
    }
    if (!bundle_.empty() && bundle_ != "/" && base::is_within(src, bundle_)) return;
    bool allowed = std::any_of(policy_.allowed_mount_sources.begin(), policy_.allowed_mount_sources.end(),
                               [&](const std::string& d) { return is_below_pattern(src, d); });
    if (!allowed) add("host-path-mounts", field, source, "a host path is visible in the container (" + destination + ")");
  }

  // An id map that reaches host root: files made in the container belong to
  // the host's root (a setuid-root binary on the host), or the container's
  // root is the host's.
  void id_maps(const spec::Linux& l) {
    auto reaches_root = [](const std::vector<spec::IdMapping>& maps) {
      return std::any_of(maps.begin(), maps.end(), [](const spec::IdMapping& m) { return m.host_id == 0 && m.size > 0; });
    };
    if (reaches_root(l.uid_mappings) || reaches_root(l.gid_mappings))
      add("host-root-mapping", "linux.uidMappings", "hostID 0", "the user namespace maps an id to the host's root");
    for (size_t i = 0; i < spec_.mounts.size(); ++i) {
      const auto& m = spec_.mounts[i];
      if (!spec::is_idmapped(m) || is_read_only(m)) continue;
      auto either = [](const std::vector<spec::IdMapping>& maps) {
        return std::any_of(maps.begin(), maps.end(), [](const spec::IdMapping& x) {
          return x.size > 0 && (x.host_id == 0 || x.container_id == 0);
        });
      };
      if (either(m.uid_mappings) || either(m.gid_mappings))
        add("host-root-mapping", "mounts[" + std::to_string(i) + "].uidMappings", "id 0",
            "a writable idmapped mount whose files can become the host root's (setuid binaries included)");
    }
  }

  // A device is judged by its rules, not by its node: a node in the rootfs
  // (an image layer can carry one) or made by mknod opens only what the
  // cgroup's device rules allow, and create always denies all but those.
  bool allowed_device(char type, int64_t major, int64_t minor) const {
    auto covers = [&](const DeviceClass& d) {
      return d.type == type && (d.major < 0 || d.major == major) && (d.minor < 0 || d.minor == minor);
    };
    return std::any_of(kDefaultDevices.begin(), kDefaultDevices.end(), covers) ||
           std::any_of(policy_.allowed_devices.begin(), policy_.allowed_devices.end(), covers);
  }

  void devices(const spec::Linux& l) {
    const std::string beyond =
        "beyond null, zero, full, random, urandom, tty, console, ptmx, pts and tun (allow: devices in a policy file)";
    for (size_t i = 0; i < l.devices.size(); ++i) {
      const auto& d = l.devices[i];
      if (d.type == "p") continue;  // a FIFO, not a device
      if (allowed_device(d.type == "b" ? 'b' : 'c', d.major, d.minor)) continue;
      add("host-devices", "linux.devices[" + std::to_string(i) + "]",
          d.path + " (" + d.type + " " + std::to_string(d.major) + ":" + std::to_string(d.minor) + ")",
          "a host device " + beyond);
    }
    if (!l.resources) return;
    // Opening (r, w) counts, and no access is all of rwm; "m" alone only
    // lets mknod make the node. A negative or absent number is a wildcard,
    // as for the cgroup.
    auto number = [](const std::optional<int64_t>& n) { return n && *n >= 0 ? *n : -1; };
    auto shown = [](int64_t n) { return n < 0 ? std::string("*") : std::to_string(n); };
    for (size_t i = 0; i < l.resources->devices.size(); ++i) {
      const auto& r = l.resources->devices[i];
      if (!r.allow || (!r.access.empty() && r.access.find_first_of("rw") == std::string::npos)) continue;
      const std::string type = r.type.empty() ? "a" : r.type;
      const int64_t major = number(r.major), minor = number(r.minor);
      if ((type == "c" || type == "b") && allowed_device(type[0], major, minor)) continue;
      std::string why = "a host device " + beyond + " may be opened";
      if (type == "b") why = "a host block device may be opened: its filesystem, whatever is on it";
      else if (type != "c" || major < 0) why = "every host device of that type may be opened (as a privileged container)";
      add("host-devices", "linux.resources.devices[" + std::to_string(i) + "]",
          "allow " + type + " " + shown(major) + ":" + shown(minor) + " " + (r.access.empty() ? "rwm" : r.access), why);
    }
  }

  void proc(const spec::Linux& l) {
    auto missing = [](const std::vector<std::string>& have, const std::vector<std::string>& need) {
      std::vector<std::string> out;
      for (const auto& p : need)
        if (std::find(have.begin(), have.end(), p) == have.end()) out.push_back(p);
      return out;
    };
    if (auto m = missing(l.masked_paths, kMustMask); !m.empty())
      add("unmasked-proc", "linux.maskedPaths", "lacks " + join(m), "/proc/kcore, /proc/keys, /sys/firmware and the like show host information");
    if (auto m = missing(l.readonly_paths, kMustReadonly); !m.empty())
      add("unmasked-proc", "linux.readonlyPaths", "lacks " + join(m), "the host's kernel settings under /proc/sys become writable");
  }

  void sysctls(const spec::Linux& l) {
    for (const auto& [key, value] : l.sysctl) {
      if (kSafeSysctls.count(key) ||
          std::count(policy_.allowed_sysctls.begin(), policy_.allowed_sysctls.end(), key))
        continue;
      add("unsafe-sysctls", "linux.sysctl[\"" + key + "\"]", value, "not in the safe set: it may affect other containers or the host");
    }
  }

  void lsm() {
    if (!spec_.process) return;
    if (spec_.process->apparmor_profile == "unconfined")
      add("apparmor-unconfined", "process.apparmorProfile", "unconfined", "AppArmor confinement is turned off");
    const std::string& label = spec_.process->selinux_label;
    if (label.empty()) return;
    std::vector<std::string> parts;
    std::istringstream in(label);
    std::string part;
    while (std::getline(in, part, ':')) parts.push_back(part);
    std::string type = parts.size() >= 3 ? parts[2] : "";
    if (!kSelinuxTypes.count(type))
      add("selinux-type", "process.selinuxLabel", label, "an SELinux type other than the container types can escape confinement");
  }

  void seccomp(const spec::Linux& l) {
    if (!l.seccomp) {
      add("no-seccomp", "linux.seccomp", "absent", "every system call of the kernel is reachable");
      return;
    }
    const std::string& a = l.seccomp->default_action;
    if (a == "SCMP_ACT_ALLOW" || a == "SCMP_ACT_LOG")
      add("seccomp-default-allow", "linux.seccomp.defaultAction", a,
          "a deny list: system calls it does not name, new ones included, are allowed");
    else if (a == "SCMP_ACT_TRACE" || a == "SCMP_ACT_NOTIFY")
      add("seccomp-default-allow", "linux.seccomp.defaultAction", a,
          "system calls it does not name are decided by a tracer or agent, not the filter");
    for (size_t i = 0; i < l.seccomp->syscalls.size(); ++i) {
      const auto& sc = l.seccomp->syscalls[i];
      for (const auto& [name, why] : detail::risky_calls(sc, l.seccomp->architectures))
        add("seccomp-syscalls", "linux.seccomp.syscalls[" + std::to_string(i) + "]", name + " (" + sc.action + ")", why);
    }
  }

  void process_rules(const spec::Linux& l) {
    if (!spec_.process) return;
    const auto& p = *spec_.process;
    if (!p.no_new_privileges)
      add("no-new-privileges", "process.noNewPrivileges", "false", "setuid binaries in the image can gain privileges");
    if (p.user.uid == 0 && !l.has_namespace("user"))
      add("root-user", "process.user.uid", "0", "root without a user namespace is the host's root, held back only by capabilities and seccomp");
  }

  void resources(const spec::Linux& l) {
    if (!(spec_.root && spec_.root->readonly))
      add("writable-root", "root.readonly", "false", "the container can change its image's files");
    const spec::Resources* r = l.resources ? &*l.resources : nullptr;
    bool memory = r && r->memory && r->memory->limit && *r->memory->limit > 0;
    if (!memory && !(r && r->unified.count("memory.max")))
      add("no-memory-limit", "linux.resources.memory.limit", "absent", "the container can take the host's memory");
    bool pids = r && r->pids_limit && *r->pids_limit >= 0;
    if (!pids && !(r && r->unified.count("pids.max")))
      add("no-pids-limit", "linux.resources.pids.limit", "absent", "a fork bomb in the container reaches the host's process limit");
  }

  const spec::Spec& spec_;
  const Policy& policy_;
  std::string bundle_;
  const HostProbe& probe_;
  std::vector<Finding> findings_;
};

}  // namespace

std::string plain_path(const std::string& path) {
  if (path.empty() || path[0] != '/') return "";
  std::string out;
  std::istringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") return "";
    out += "/" + part;
  }
  return out.empty() ? "/" : out;
}

std::vector<Finding> evaluate(const spec::Spec& spec, const Policy& policy, const std::string& bundle,
                              const HostProbe& probe) {
  return Checker(spec, policy, bundle, probe).run();
}

}  // namespace husk::policy
