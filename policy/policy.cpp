#include "policy/policy.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace husk::policy {
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

// Where the engines keep what they bind into their containers (hosts files,
// secrets, /dev/shm, image volumes): not the host's own files.
const std::vector<std::string> kEngineDirs = {
    "/var/lib/containerd", "/run/containerd",        "/var/lib/containers",        "/run/containers",
    "/var/run/containers", "/run/libpod",            "/var/lib/kubelet/pods",      "/var/lib/docker/containers",
    "/dev/null",           "/dev/zero",              "/dev/full",                  "/dev/random",
    "/dev/urandom",        "/dev/tty"};

// Files that give whoever reads them the user's or the host's credentials,
// and the sockets that give root on the host. A mount of one of them, of
// anything below them or of a directory holding them is reported.
const std::vector<std::string> kSecretFiles = {
    "/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/run/docker.sock", "/var/run/docker.sock",
    "/run/containerd/containerd.sock", "/var/run/containerd/containerd.sock", "/run/podman/podman.sock",
    "/var/run/podman/podman.sock", "/run/crio/crio.sock", "/var/run/crio/crio.sock", "/root"};
// The same below any home directory.
const std::vector<std::string> kHomeSecrets = {".ssh",   ".aws",    ".config/gcloud", ".azure",          ".kube",
                                               ".docker", ".gnupg", ".netrc",         ".git-credentials"};
const std::set<std::string> kEngineSockets = {"docker.sock", "containerd.sock", "podman.sock", "crio.sock"};

// The default devices of runc and the engines (char major:minor).
const std::set<std::pair<int64_t, int64_t>> kDefaultDevices = {{1, 3}, {1, 5}, {1, 7}, {1, 8}, {1, 9}, {5, 0}};

const std::vector<std::string> kRuleIds = {
    "host-namespaces", "host-hooks", "privileged-capabilities", "host-path-mounts", "sensitive-mounts", "host-devices",
    "unmasked-proc",   "unsafe-sysctls",          "apparmor-unconfined", "selinux-type", "no-seccomp",
    "seccomp-default-allow", "no-new-privileges", "root-user", "network-not-isolated", "writable-root",
    "no-memory-limit", "no-pids-limit"};

// "/a//b/" -> "/a/b"; "" for a path that is not absolute or has "..".
std::string clean_path(const std::string& path) {
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

bool is_below(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

bool is_bind(const spec::Mount& m) {
  if (m.type == "bind") return true;
  return std::any_of(m.options.begin(), m.options.end(), [](const std::string& o) { return o == "bind" || o == "rbind"; });
}

// Why a bind source exposes credentials, or "".
std::string secret_reason(const std::string& src) {
  for (const auto& f : kSecretFiles)
    if (is_below(src, f) || is_below(f, src)) return "holds or is " + f;
  std::string name = src.substr(src.rfind('/') + 1);
  if (kEngineSockets.count(name)) return "a container engine's socket";
  // A home directory, or the tree holding them, or a credential dir in one.
  std::istringstream parts(src);
  std::string part;
  std::vector<std::string> comps;
  while (std::getline(parts, part, '/'))
    if (!part.empty()) comps.push_back(part);
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
  Checker(const spec::Spec& s, const Policy& p, const std::string& bundle, const Resolver& resolve)
      : spec_(s), policy_(p), bundle_(clean_path(bundle)), resolve_(resolve) {}

  std::vector<Finding> run() {
    const spec::Linux empty;
    const spec::Linux& linux_ = spec_.linux_ ? *spec_.linux_ : empty;
    namespaces(linux_);
    hooks();
    capabilities();
    mounts();
    devices(linux_);
    proc(linux_);
    sysctls(linux_);
    lsm();
    seccomp(linux_);
    process_rules(linux_);
    resources(linux_);
    std::stable_sort(findings_.begin(), findings_.end(), [](const Finding& a, const Finding& b) {
      auto rank = [](const std::string& id) { return std::find(kRuleIds.begin(), kRuleIds.end(), id) - kRuleIds.begin(); };
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

  // /proc/1/ns/*, /proc/self/ns/*: the host init's or husk's own namespaces.
  static bool is_host_namespace(const std::string& path) {
    std::string p = clean_path(path);
    for (const char* prefix : {"/proc/1/ns/", "/proc/self/ns/", "/proc/thread-self/ns/"})
      if (p.rfind(prefix, 0) == 0) return true;
    return false;
  }

  void namespaces(const spec::Linux& l) {
    for (size_t i = 0; i < l.namespaces.size(); ++i)
      if (is_host_namespace(l.namespaces[i].path))
        add("host-namespaces", "linux.namespaces[" + std::to_string(i) + "].path", l.namespaces[i].path,
            "the container joins the host's " + l.namespaces[i].type + " namespace");
    for (const char* type : {"network", "pid", "ipc"}) {
      const spec::Namespace* ns = l.find_namespace(type);
      std::string field = std::string("linux.namespaces (") + type + ")";
      if (!ns)
        add("host-namespaces", field, "absent: the host's", std::string("the container shares the host's ") + type + " namespace");

      const bool network = std::string(type) == "network";
      if (network && (!ns || !ns->path.empty()) && !(ns && is_host_namespace(ns->path)))
        add("network-not-isolated", field, ns ? ns->path : "absent: the host's",
            "code in the container can reach the network (a new network namespace cuts it off)");
    }
  }

  void hooks() {
    const std::pair<const char*, const std::vector<spec::Hook>*> host_side[] = {
        {"prestart", &spec_.hooks.prestart}, {"createRuntime", &spec_.hooks.create_runtime},
        {"poststart", &spec_.hooks.poststart}, {"poststop", &spec_.hooks.poststop}};
    for (const auto& [kind, list] : host_side)
      for (size_t i = 0; i < list->size(); ++i)
        add("host-hooks", std::string("hooks.") + kind + "[" + std::to_string(i) + "].path", (*list)[i].path,
            "runs on the host, with the runtime's privileges, outside every namespace of the container");
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
    if (is_bind(m)) out.push_back({at + ".source", m.source});
    if (m.type != "overlay") return out;
    for (size_t j = 0; j < m.options.size(); ++j) {
      const std::string& o = m.options[j];
      const std::string field = at + ".options[" + std::to_string(j) + "]";
      for (const char* key : {"lowerdir=", "upperdir=", "workdir="}) {
        if (o.rfind(key, 0) != 0) continue;
        std::istringstream dirs(o.substr(std::string(key).size()));
        std::string dir;
        while (std::getline(dirs, dir, ':'))
          if (!dir.empty()) out.push_back({field, dir});
      }
    }
    return out;
  }

  void mounts() {
    for (size_t i = 0; i < spec_.mounts.size(); ++i) {
      const auto& m = spec_.mounts[i];
      for (const auto& [field, source] : host_paths(m, i)) host_path(field, source, m.destination);
    }
  }

  void host_path(const std::string& field, const std::string& source, const std::string& destination) {
    std::string src = source.empty() || source[0] == '/' ? clean_path(source) : clean_path(bundle_ + "/" + source);
    if (src.empty()) {
      add("host-path-mounts", field, source, "a host path with \"..\" cannot be checked");
      return;
    }
    if (resolve_) src = clean_path(resolve_(src));
    std::string secret = secret_reason(src);
    if (!secret.empty()) {
      add("sensitive-mounts", field, source, secret + ": credentials or root on the host become readable");
      return;
    }
    if (!bundle_.empty() && bundle_ != "/" && is_below(src, bundle_)) return;
    bool allowed = std::any_of(policy_.allowed_mount_sources.begin(), policy_.allowed_mount_sources.end(),
                               [&](const std::string& d) { return is_below(src, clean_path(d)); });
    if (!allowed) add("host-path-mounts", field, source, "a host path is visible in the container (" + destination + ")");
  }

  void devices(const spec::Linux& l) {
    for (size_t i = 0; i < l.devices.size(); ++i) {
      const auto& d = l.devices[i];
      if ((d.type == "c" || d.type == "u") && kDefaultDevices.count({d.major, d.minor})) continue;
      add("host-devices", "linux.devices[" + std::to_string(i) + "]",
          d.path + " (" + d.type + " " + std::to_string(d.major) + ":" + std::to_string(d.minor) + ")",
          "a host device beyond the default set is reachable");
    }
    if (!l.resources) return;
    for (size_t i = 0; i < l.resources->devices.size(); ++i) {
      const auto& r = l.resources->devices[i];
      if (!r.allow || r.major || r.minor) continue;
      if (r.type.empty() || r.type == "a" || r.type == "b")
        add("host-devices", "linux.resources.devices[" + std::to_string(i) + "]",
            "allow " + (r.type.empty() ? std::string("a") : r.type) + " *:* " + r.access,
            "every host device of that type may be opened (as a privileged container)");
    }
  }

  void proc(const spec::Linux& l) {
    if (l.masked_paths.empty())
      add("unmasked-proc", "linux.maskedPaths", "empty",
          "/proc/kcore, /proc/keys, /sys/firmware and the like show host information");
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
  const Resolver& resolve_;
  std::vector<Finding> findings_;
};

}  // namespace

Severity parse_severity(const std::string& text, const std::string& field) {
  if (text == "error") return Severity::error;
  if (text == "warn") return Severity::warn;
  if (text == "off") return Severity::off;
  throw Error(field + ": \"" + text + "\" is not a severity (error, warn or off)");
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::error: return "error";
    case Severity::warn: return "warn";
    case Severity::off: break;
  }
  return "off";
}

const std::vector<std::string>& rule_ids() { return kRuleIds; }

Policy builtin(const std::string& level) {
  Policy p;
  p.name = level;
  if (level != "baseline" && level != "restricted")
    throw Error("policy \"" + level + "\": not a built-in level (baseline, restricted) nor a file");
  for (const char* id : {"host-namespaces", "privileged-capabilities", "host-path-mounts", "sensitive-mounts",
                         "host-devices", "unmasked-proc", "unsafe-sysctls", "apparmor-unconfined", "selinux-type"})
    p.rules[id] = Severity::error;
  p.rules["no-seccomp"] = p.rules["seccomp-default-allow"] = p.rules["host-hooks"] = Severity::warn;
  p.allowed_mount_sources = kEngineDirs;
  if (level == "restricted") {
    p.restricted_capabilities = true;
    for (const char* id : {"no-seccomp", "seccomp-default-allow", "no-new-privileges", "root-user", "host-hooks"})
      p.rules[id] = Severity::error;
    for (const char* id : {"network-not-isolated", "writable-root", "no-memory-limit", "no-pids-limit"})
      p.rules[id] = Severity::warn;
  }
  return p;
}

bool violated(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity == Severity::error; });
}

std::string findings_table(const std::vector<Finding>& findings) {
  std::vector<std::vector<std::string>> rows = {{"SEVERITY", "RULE", "FIELD", "VALUE", "WHY"}};
  for (const auto& f : findings) rows.push_back({severity_name(f.severity), f.rule, f.field, f.value, f.why});
  std::vector<size_t> width(5, 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) line += i + 1 < r.size() ? r[i] + std::string(width[i] - r[i].size() + 2, ' ') : r[i];
    out += line + "\n";
  }
  return out;
}

std::vector<Finding> evaluate(const spec::Spec& spec, const Policy& policy, const std::string& bundle,
                              const Resolver& resolve) {
  return Checker(spec, policy, bundle, resolve).run();
}

}  // namespace husk::policy
