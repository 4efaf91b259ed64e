// The static rules of runtime-spec config.md / config-linux.md, plus the
// safety checks runc makes before touching the host (sysctls, hostname,
// masked paths and mounts only inside namespaces the container owns).
// The first broken rule is thrown as "<json path>: <rule>".
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "spec/spec.h"

namespace husk::spec {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& rule) {
  throw Error(path + ": " + rule);
}

std::string idx(const std::string& base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string key(const std::string& base, const std::string& k) { return base + "[" + quoted(k) + "]"; }

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool is_absolute(const std::string& p) { return !p.empty() && p[0] == '/'; }

// A ".." path component, not merely two dots inside a name ("foo..bar").
bool has_dotdot(const std::string& p) {
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find('/', start);
    if (end == std::string::npos) end = p.size();
    if (p.compare(start, end - start, "..") == 0 && end - start == 2) return true;
    start = end + 1;
  }
  return false;
}

// "1.2.3", "1.0.2-dev", "1.1.0-rc.1+build" -> major/minor; false when not SemVer.
bool parse_semver(const std::string& v, unsigned long& major, unsigned long& minor) {
  size_t core_end = v.find_first_of("-+");
  std::string core = v.substr(0, core_end);
  unsigned long parts[3];
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t end = i < 2 ? core.find('.', pos) : core.size();
    if (end == std::string::npos || end == pos) return false;
    std::string num = core.substr(pos, end - pos);
    if (num.size() > 9 || num.find_first_not_of("0123456789") != std::string::npos) return false;
    if (num.size() > 1 && num[0] == '0') return false;
    parts[i] = 0;  // at most 9 digits: no overflow
    for (char c : num) parts[i] = parts[i] * 10 + static_cast<unsigned long>(c - '0');
    pos = end + 1;
  }
  if (core_end != std::string::npos) {
    // Pre-release and build identifiers: [0-9A-Za-z-] separated by dots, none empty.
    std::string rest = v.substr(core_end + 1);
    if (rest.empty()) return false;
    bool last_dot = true;
    for (char c : rest) {
      bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-';
      if (c == '.' || c == '+') {
        if (last_dot) return false;
        last_dot = true;
      } else if (ok) {
        last_dot = false;
      } else {
        return false;
      }
    }
    if (last_dot) return false;
  }
  major = parts[0];
  minor = parts[1];
  return true;
}

void check_version(const std::string& v) {
  if (v.empty()) fail("ociVersion", "required");
  unsigned long major = 0, minor = 0;
  if (!parse_semver(v, major, minor)) fail("ociVersion", quoted(v) + " is not a SemVer version");
  if (major != 1 || minor > 3) {
    fail("ociVersion", "unsupported version " + quoted(v) + " (husk supports " +
                           std::string(kOciVersionMin) + " to 1.3.x)");
  }
}

void check_env(const std::vector<std::string>& env, const std::string& path) {
  for (size_t i = 0; i < env.size(); ++i) {
    const auto& e = env[i];
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) fail(idx(path, i), "must be of the form KEY=value");
    if (e.find('\0') != std::string::npos) fail(idx(path, i), "must not contain a NUL byte");
  }
}

void check_process(const Process& p) {
  if (p.args.empty()) fail("process.args", "must not be empty");
  for (size_t i = 0; i < p.args.size(); ++i) {
    if (p.args[i].find('\0') != std::string::npos) fail(idx("process.args", i), "must not contain a NUL byte");
  }
  if (p.args[0].empty()) fail("process.args[0]", "must not be empty");
  if (!is_absolute(p.cwd)) fail("process.cwd", "must be an absolute path");
  check_env(p.env, "process.env");

  std::set<std::string> seen;
  for (size_t i = 0; i < p.rlimits.size(); ++i) {
    const auto& r = p.rlimits[i];
    std::string path = idx("process.rlimits", i);
    if (rlimit_resource(r.type) < 0) fail(path + ".type", "unknown rlimit " + quoted(r.type));
    if (!seen.insert(r.type).second) fail(path + ".type", "duplicate rlimit " + quoted(r.type));
    if (r.soft > r.hard) fail(path, "soft limit must not exceed hard limit");
  }

  // Unknown capability names are not an error: config.md says runtimes SHOULD
  // NOT fail on capabilities they cannot grant; process setup warns and skips them.

  if (p.oom_score_adj && (*p.oom_score_adj < -1000 || *p.oom_score_adj > 1000)) {
    fail("process.oomScoreAdj", "must be between -1000 and 1000");
  }

  if (p.scheduler) {
    const auto& s = *p.scheduler;
    static const std::vector<std::string> policies = {"SCHED_OTHER", "SCHED_FIFO", "SCHED_RR", "SCHED_BATCH",
                                                      "SCHED_ISO",   "SCHED_IDLE", "SCHED_DEADLINE"};
    static const std::vector<std::string> flags = {
        "SCHED_FLAG_RESET_ON_FORK", "SCHED_FLAG_RECLAIM",        "SCHED_FLAG_DL_OVERRUN",
        "SCHED_FLAG_KEEP_POLICY",   "SCHED_FLAG_KEEP_PARAMS",    "SCHED_FLAG_UTIL_CLAMP_MIN",
        "SCHED_FLAG_UTIL_CLAMP_MAX"};
    if (s.policy.empty()) fail("process.scheduler.policy", "required");
    if (!contains(policies, s.policy)) fail("process.scheduler.policy", "unknown policy " + quoted(s.policy));
    for (size_t i = 0; i < s.flags.size(); ++i) {
      if (!contains(flags, s.flags[i])) fail(idx("process.scheduler.flags", i), "unknown flag " + quoted(s.flags[i]));
    }
    if (s.nice < -20 || s.nice > 19) fail("process.scheduler.nice", "must be between -20 and 19");
    bool realtime = s.policy == "SCHED_FIFO" || s.policy == "SCHED_RR";
    if (realtime && (s.priority < 1 || s.priority > 99)) {
      fail("process.scheduler.priority", "must be between 1 and 99 for " + s.policy);
    }
    if (!realtime && s.priority != 0) fail("process.scheduler.priority", "only allowed for SCHED_FIFO and SCHED_RR");
    if (s.policy != "SCHED_DEADLINE" && (s.runtime || s.deadline || s.period)) {
      fail("process.scheduler", "runtime, deadline and period are only allowed for SCHED_DEADLINE");
    }
  }

  if (p.io_priority) {
    const auto& io = *p.io_priority;
    if (io.klass != "IOPRIO_CLASS_RT" && io.klass != "IOPRIO_CLASS_BE" && io.klass != "IOPRIO_CLASS_IDLE") {
      fail("process.ioPriority.class", "unknown class " + quoted(io.klass) +
                                           " (expected IOPRIO_CLASS_RT, IOPRIO_CLASS_BE or IOPRIO_CLASS_IDLE)");
    }
    if (io.priority < 0 || io.priority > 7) fail("process.ioPriority.priority", "must be between 0 and 7");
  }

  if (p.user.umask && *p.user.umask > 0777) fail("process.user.umask", "must be <= 0777");
  // (uid_t)-1 tells setresuid/setresgid "leave unchanged": the process would stay root.
  constexpr uint32_t kNoId = 4294967295u;
  if (p.user.uid == kNoId) fail("process.user.uid", "4294967295 is not a valid uid");
  if (p.user.gid == kNoId) fail("process.user.gid", "4294967295 is not a valid gid");
  for (size_t i = 0; i < p.user.additional_gids.size(); ++i)
    if (p.user.additional_gids[i] == kNoId) fail(idx("process.user.additionalGids", i), "4294967295 is not a valid gid");

  if (p.exec_cpu_affinity) {
    for (const auto& [name, list] : {std::pair<const char*, const std::string*>{"initial", &p.exec_cpu_affinity->initial},
                                     {"final", &p.exec_cpu_affinity->final}}) {
      if (list->find_first_not_of("0123456789,- ") != std::string::npos) {
        fail(std::string("process.execCPUAffinity.") + name, "must be a CPU list like \"0-3,7\"");
      }
    }
  }
}

void check_hooks(const Hooks& h) {
  const std::pair<const char*, const std::vector<Hook>*> lists[] = {
      {"prestart", &h.prestart},   {"createRuntime", &h.create_runtime}, {"createContainer", &h.create_container},
      {"startContainer", &h.start_container}, {"poststart", &h.poststart}, {"poststop", &h.poststop},
  };
  for (const auto& [name, hooks] : lists) {
    for (size_t i = 0; i < hooks->size(); ++i) {
      const auto& hook = (*hooks)[i];
      std::string path = idx(std::string("hooks.") + name, i);
      if (!is_absolute(hook.path)) fail(path + ".path", "must be an absolute path");
      if (hook.timeout && *hook.timeout <= 0) fail(path + ".timeout", "must be > 0");
      check_env(hook.env, path + ".env");
    }
  }
}

bool has_option(const Mount& m, const char* opt) { return contains(m.options, opt); }

void check_mounts(const Spec& s) {
  bool userns = s.linux_ && s.linux_->has_namespace("user");
  for (size_t i = 0; i < s.mounts.size(); ++i) {
    const auto& m = s.mounts[i];
    std::string path = idx("mounts", i);
    if (m.destination.empty()) fail(path + ".destination", "must not be empty");
    if (has_dotdot(m.destination)) fail(path + ".destination", "must not contain \"..\"");
    // config.md: each of uidMappings/gidMappings "MUST be specified along with" the other.
    if (!m.uid_mappings.empty() && m.gid_mappings.empty()) fail(path + ".uidMappings", "given without gidMappings");
    if (!m.gid_mappings.empty() && m.uid_mappings.empty()) fail(path + ".gidMappings", "given without uidMappings");
    validate_id_mappings(m.uid_mappings, path + ".uidMappings");
    validate_id_mappings(m.gid_mappings, path + ".gidMappings");
    if (!is_idmapped(m)) continue;
    if (!has_option(m, "bind") && !has_option(m, "rbind") && m.type != "bind")
      fail(path + ".options", "an idmapped mount must be a bind mount");
    if (m.uid_mappings.empty() && !userns)
      fail(path + ".options", "idmap needs uidMappings/gidMappings or a user namespace");
  }
  if (!s.mounts.empty() && !(s.linux_ && s.linux_->has_namespace("mount"))) {
    fail("mounts", "requires a mount namespace (linux.namespaces has no \"mount\" entry)");
  }
}

void check_namespaces(const Linux& l) {
  std::set<std::string> seen;
  for (size_t i = 0; i < l.namespaces.size(); ++i) {
    const auto& ns = l.namespaces[i];
    std::string path = idx("linux.namespaces", i);
    if (!contains(known_namespaces(), ns.type)) fail(path + ".type", "unknown namespace " + quoted(ns.type));
    if (!seen.insert(ns.type).second) fail(path + ".type", "duplicate namespace " + quoted(ns.type));
    if (!ns.path.empty() && !is_absolute(ns.path)) fail(path + ".path", "must be an absolute path");
  }

  const Namespace* user = l.find_namespace("user");
  if (!user) {
    if (!l.uid_mappings.empty()) fail("linux.uidMappings", "requires a user namespace in linux.namespaces");
    if (!l.gid_mappings.empty()) fail("linux.gidMappings", "requires a user namespace in linux.namespaces");
  } else if (user->path.empty()) {
    if (l.uid_mappings.empty()) fail("linux.uidMappings", "required when creating a new user namespace");
    if (l.gid_mappings.empty()) fail("linux.gidMappings", "required when creating a new user namespace");
  }
  validate_id_mappings(l.uid_mappings, "linux.uidMappings");
  validate_id_mappings(l.gid_mappings, "linux.gidMappings");

  if (!l.time_offsets.empty()) {
    const Namespace* time = l.find_namespace("time");
    if (!time) fail("linux.timeOffsets", "requires a time namespace in linux.namespaces");
    if (!time->path.empty()) fail("linux.timeOffsets", "cannot be applied to an existing time namespace (path is set)");
    for (const auto& [clock, off] : l.time_offsets) {
      if (clock != "monotonic" && clock != "boottime") {
        fail(key("linux.timeOffsets", clock), "unknown clock (expected monotonic or boottime)");
      }
      if (off.nanosecs >= 1000000000u) fail(key("linux.timeOffsets", clock) + ".nanosecs", "must be < 1000000000");
    }
  }
}

void check_devices(const Linux& l) {
  for (size_t i = 0; i < l.devices.size(); ++i) {
    const auto& d = l.devices[i];
    std::string path = idx("linux.devices", i);
    if (d.type != "c" && d.type != "b" && d.type != "u" && d.type != "p") fail(path + ".type", "must be one of c, b, u, p");
    if (!is_absolute(d.path)) fail(path + ".path", "must be an absolute path");
    if (has_dotdot(d.path)) fail(path + ".path", "must not contain \"..\"");
    if (d.type != "p") {
      // Go tools omit zero numbers, so an absent minor is 0; major 0 is never a real device.
      if (d.major == 0) fail(path + ".major", "required for type " + quoted(d.type));
      // new_encode_dev(): 12 bits of major, 20 bits of minor.
      if (d.major < 0 || d.major > 0xfff) fail(path + ".major", "must be between 1 and 4095");
      if (d.minor < 0 || d.minor > 0xfffff) fail(path + ".minor", "must be between 0 and 1048575");
    }
    if (d.file_mode && *d.file_mode > 07777) {
      // podman writes the whole st_mode (020666): its file type must be the entry's.
      uint32_t want = d.type == "b" ? S_IFBLK : d.type == "p" ? S_IFIFO : S_IFCHR;
      if (*d.file_mode > 0177777 || (*d.file_mode & ~07777u) != want)
        fail(path + ".fileMode", "must be permission bits, optionally with the file type bits of type " + quoted(d.type));
    }
  }
}

// A name usable as one path component under a pseudo-filesystem directory.
bool plain_name(const std::string& n) { return !n.empty() && n != "." && n != ".." && n.find('/') == std::string::npos; }

void check_resources(const Resources& r, const std::string& base) {
  auto sub = [&](const char* name) { return base.empty() ? std::string(name) : base + "." + name; };
  for (size_t i = 0; i < r.devices.size(); ++i) {
    const auto& d = r.devices[i];
    std::string path = idx(sub("devices"), i);
    if (!d.type.empty() && d.type != "a" && d.type != "c" && d.type != "b") fail(path + ".type", "must be one of a, c, b");
    if (d.access.find_first_not_of("rwm") != std::string::npos) fail(path + ".access", "must contain only r, w and m");
  }
  if (r.cpu && r.cpu->burst && r.cpu->quota && *r.cpu->quota > 0 &&
      *r.cpu->burst > static_cast<uint64_t>(*r.cpu->quota)) {
    fail(sub("cpu.burst"), "must not be larger than quota");
  }
  if (r.block_io) {
    for (size_t i = 0; i < r.block_io->weight_device.size(); ++i) {
      const auto& w = r.block_io->weight_device[i];
      if (!w.weight && !w.leaf_weight) fail(idx(sub("blockIO.weightDevice"), i), "needs weight or leafWeight");
    }
  }
  if (r.pids_limit && *r.pids_limit < -1) fail(sub("pids.limit"), "must be -1 (no limit) or at least 0");
  // The size becomes part of a cgroup file name (hugetlb.2MB.max).
  for (size_t i = 0; i < r.hugepage_limits.size(); ++i) {
    const std::string& ps = r.hugepage_limits[i].page_size;
    std::string path = idx(sub("hugepageLimits"), i) + ".pageSize";
    if (ps.empty()) fail(path, "required");
    size_t unit = ps.size() >= 2 ? ps.size() - 2 : 0;
    bool ok = unit > 0 && ps[0] >= '1' && ps[0] <= '9' &&
              ps.find_first_not_of("0123456789") == unit && std::string("KMG").find(ps[unit]) != std::string::npos &&
              ps[unit + 1] == 'B';
    if (!ok) fail(path, "must be a size like \"2MB\" or \"1GB\" (got " + quoted(ps) + ")");
  }
  for (const auto& [dev, rd] : r.rdma) {
    if (!rd.hca_handles && !rd.hca_objects) fail(key(sub("rdma"), dev), "needs hcaHandles or hcaObjects");
  }
  // Keys become file names inside the container's cgroup directory.
  for (const auto& [file, value] : r.unified) {
    if (!plain_name(file)) fail(key(sub("unified"), file), "must be a cgroup file name");
  }
}

// Network interface name as the kernel accepts it (dev_valid_name) minus ':'.
bool valid_ifname(const std::string& n) {
  return !n.empty() && n.size() < 16 && n != "." && n != ".." && n.find_first_of("/: \t\n") == std::string::npos;
}

std::string sysctl_dots(std::string s) {
  // "net/ipv4/ip_forward" is accepted as "net.ipv4.ip_forward"; a dot inside
  // a slash-separated name (an interface "eth0.100") becomes a slash.
  if (s.find('/') == std::string::npos) return s;
  for (char& c : s) {
    if (c == '/') c = '.';
    else if (c == '.') c = '/';
  }
  return s;
}

// `hostname`, `domainname`: the spec's fields ("" when unset). A sysctl
// naming the same value is no conflict (runc and crun accept it).
void check_sysctl(const Linux& l, const std::string& hostname, const std::string& domainname) {
  static const std::set<std::string> ipc = {"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni",
                                            "kernel.sem",    "kernel.shmall", "kernel.shmmax",
                                            "kernel.shmmni", "kernel.shm_rmid_forced"};
  for (const auto& [raw, value] : l.sysctl) {
    std::string name = sysctl_dots(raw);
    std::string path = key("linux.sysctl", raw);
    if (name.empty() || has_dotdot(raw)) fail(path, "invalid sysctl name");
    if (ipc.count(name) || name.rfind("fs.mqueue.", 0) == 0) {
      if (!l.has_namespace("ipc")) fail(path, "requires an ipc namespace (it would change the host's value)");
    } else if (name.rfind("net.", 0) == 0) {
      if (!l.has_namespace("network")) fail(path, "requires a network namespace (it would change the host's value)");
    } else if (name == "kernel.domainname" || name == "kernel.hostname") {
      if (!l.has_namespace("uts")) fail(path, "requires a uts namespace (it would change the host's value)");
      const std::string& field = name == "kernel.hostname" ? hostname : domainname;
      if (!field.empty() && field != value)
        fail(path, "\"" + value + "\" conflicts with the " + name.substr(7) + " field \"" + field + "\"");
    } else if (name.rfind("user.", 0) == 0) {
      if (!l.has_namespace("user")) fail(path, "requires a user namespace (it would change the host's value)");
    } else {
      fail(path, "not namespaced: refusing to change the host's value");
    }
  }
}

void check_net_devices(const Linux& l) {
  for (const auto& [host, dev] : l.net_devices) {
    std::string path = key("linux.netDevices", host);
    if (!valid_ifname(host)) fail(path, "invalid network device name");
    if (!dev.name.empty() && !valid_ifname(dev.name)) fail(path + ".name", "invalid network device name " + quoted(dev.name));
  }
  if (!l.net_devices.empty() && !l.has_namespace("network")) {
    fail("linux.netDevices", "requires a network namespace in linux.namespaces");
  }
}

void check_intel_rdt(const IntelRdt& r) {
  if (!r.clos_id.empty() && r.clos_id != "/" && !plain_name(r.clos_id)) {
    fail("linux.intelRdt.closID", "must be \"/\" or a directory name");
  }
  if (r.l3_cache_schema.find('\n') != std::string::npos) fail("linux.intelRdt.l3CacheSchema", "must not contain newlines");
  if (!r.mem_bw_schema.empty()) {
    if (r.mem_bw_schema.rfind("MB:", 0) != 0) fail("linux.intelRdt.memBwSchema", "must start with \"MB:\"");
    if (r.mem_bw_schema.find('\n') != std::string::npos) fail("linux.intelRdt.memBwSchema", "must not contain newlines");
  }
  for (size_t i = 0; i < r.schemata.size(); ++i) {
    if (r.schemata[i].find('\n') != std::string::npos) fail(idx("linux.intelRdt.schemata", i), "must not contain newlines");
  }
}

void check_seccomp(const Seccomp& sc) {
  if (sc.default_action.empty()) fail("linux.seccomp.defaultAction", "required");
  if (!sc.listener_metadata.empty() && sc.listener_path.empty()) {
    fail("linux.seccomp.listenerMetadata", "must not be set without listenerPath");
  }
  for (size_t i = 0; i < sc.syscalls.size(); ++i) {
    if (sc.syscalls[i].names.empty()) fail(idx("linux.seccomp.syscalls", i) + ".names", "must not be empty");
  }
}

// rootfsPropagation, maskedPaths and readonlyPaths.
void check_rootfs_paths(const Linux& l) {
  static const std::vector<std::string> propagation = {"",           "shared",  "slave",  "private", "unbindable",
                                                       "rshared",    "rslave",  "rprivate", "runbindable"};
  if (!contains(propagation, l.rootfs_propagation)) {
    fail("linux.rootfsPropagation", "unknown value " + quoted(l.rootfs_propagation) +
                                        " (expected shared, slave, private or unbindable, optionally r-prefixed)");
  }

  bool mountns = l.has_namespace("mount");
  for (const auto* list : {&l.masked_paths, &l.readonly_paths}) {
    std::string name = list == &l.masked_paths ? "linux.maskedPaths" : "linux.readonlyPaths";
    for (size_t i = 0; i < list->size(); ++i) {
      if (!is_absolute((*list)[i])) fail(idx(name, i), "must be an absolute path");
    }
    if (!list->empty() && !mountns) fail(name, "requires a mount namespace (linux.namespaces has no \"mount\" entry)");
  }
}

void check_personality(const Personality& p) {
  if (p.domain != "LINUX" && p.domain != "LINUX32") {
    fail("linux.personality.domain", "unknown domain " + quoted(p.domain) + " (expected LINUX or LINUX32)");
  }
  // The spec defines no personality flags yet.
  if (!p.flags.empty()) fail("linux.personality.flags[0]", "unknown flag " + quoted(p.flags[0]));
}

void check_memory_policy(const MemoryPolicy& mp) {
  static const std::vector<std::string> modes = {"MPOL_DEFAULT",   "MPOL_BIND",           "MPOL_INTERLEAVE",
                                                 "MPOL_WEIGHTED_INTERLEAVE", "MPOL_PREFERRED",
                                                 "MPOL_PREFERRED_MANY", "MPOL_LOCAL"};
  static const std::vector<std::string> flags = {"MPOL_F_NUMA_BALANCING", "MPOL_F_RELATIVE_NODES",
                                                 "MPOL_F_STATIC_NODES"};
  if (!contains(modes, mp.mode)) fail("linux.memoryPolicy.mode", "unknown mode " + quoted(mp.mode));
  for (size_t i = 0; i < mp.flags.size(); ++i) {
    if (!contains(flags, mp.flags[i])) fail(idx("linux.memoryPolicy.flags", i), "unknown flag " + quoted(mp.flags[i]));
  }
  if ((mp.mode == "MPOL_DEFAULT" || mp.mode == "MPOL_LOCAL") && !mp.nodes.empty()) {
    fail("linux.memoryPolicy.nodes", "must be empty for " + mp.mode);
  }
  if ((mp.mode == "MPOL_BIND" || mp.mode == "MPOL_INTERLEAVE" || mp.mode == "MPOL_WEIGHTED_INTERLEAVE" ||
       mp.mode == "MPOL_PREFERRED_MANY") &&
      mp.nodes.empty()) {
    fail("linux.memoryPolicy.nodes", "required for " + mp.mode);
  }
}

bool maps_inside(const std::vector<IdMapping>& maps, uint32_t id) {
  for (const auto& m : maps)
    if (id >= m.container_id && id - m.container_id < m.size) return true;
  return false;
}

// The process's ids must exist in a user namespace made for it: the kernel
// says only "Invalid argument" at setgid/setuid.
void check_user_mapped(const Spec& s) {
  const Namespace* user = s.linux_->find_namespace("user");
  if (!s.process || !user || !user->path.empty()) return;
  const User& u = s.process->user;
  auto need = [](const std::vector<IdMapping>& maps, uint32_t id, const std::string& field, const char* mappings) {
    if (!maps.empty() && !maps_inside(maps, id))
      fail(field, std::to_string(id) + " is not mapped in the container's user namespace (" + mappings + ")");
  };
  need(s.linux_->uid_mappings, u.uid, "process.user.uid", "linux.uidMappings");
  need(s.linux_->gid_mappings, u.gid, "process.user.gid", "linux.gidMappings");
  for (size_t i = 0; i < u.additional_gids.size(); ++i)
    need(s.linux_->gid_mappings, u.additional_gids[i], idx("process.user.additionalGids", i), "linux.gidMappings");
}

void check_linux(const Spec& s) {
  const Linux& l = *s.linux_;
  check_devices(l);
  check_net_devices(l);
  if (l.cgroups_path && has_dotdot(*l.cgroups_path)) fail("linux.cgroupsPath", "must not contain \"..\"");
  if (l.resources) check_resources(*l.resources, "linux.resources");
  if (l.intel_rdt) check_intel_rdt(*l.intel_rdt);
  check_sysctl(l, s.hostname, s.domainname);
  check_user_mapped(s);
  if (l.seccomp) check_seccomp(*l.seccomp);
  check_rootfs_paths(l);
  if (l.personality) check_personality(*l.personality);
  if (l.memory_policy) check_memory_policy(*l.memory_policy);
}

}  // namespace

void validate_resources(const Resources& r) { check_resources(r, ""); }

void validate_process(const Process& p) { check_process(p); }

void validate_id_mappings(const std::vector<IdMapping>& maps, const std::string& path) {
  // The kernel accepts at most 340 extents and no overlap on either side.
  if (maps.size() > 340) fail(path, "at most 340 mappings are supported by the kernel");
  for (size_t i = 0; i < maps.size(); ++i) {
    const auto& m = maps[i];
    std::string p = idx(path, i);
    if (m.size == 0) fail(p + ".size", "must be > 0");
    if (uint64_t(m.container_id) + m.size > (uint64_t(1) << 32)) fail(p, "containerID + size overflows uint32");
    if (uint64_t(m.host_id) + m.size > (uint64_t(1) << 32)) fail(p, "hostID + size overflows uint32");
    for (size_t j = 0; j < i; ++j) {
      const auto& o = maps[j];
      auto overlap = [](uint64_t a, uint64_t an, uint64_t b, uint64_t bn) { return a < b + bn && b < a + an; };
      if (overlap(m.container_id, m.size, o.container_id, o.size)) {
        fail(p + ".containerID", "range overlaps " + idx(path, j));
      }
      if (overlap(m.host_id, m.size, o.host_id, o.size)) fail(p + ".hostID", "range overlaps " + idx(path, j));
    }
  }
}

void validate(const Spec& s, bool for_create) {
  check_version(s.oci_version);

  if (s.root) {
    if (s.root->path.empty()) fail("root.path", "must not be empty");
  } else if (for_create) {
    fail("root", "required");
  }

  if (s.process) {
    check_process(*s.process);
  } else if (for_create) {
    fail("process", "required");
  }

  // Namespaces first: several later rules depend on them.
  if (s.linux_) check_namespaces(*s.linux_);
  check_mounts(s);
  check_hooks(s.hooks);

  for (const auto& [k, v] : s.annotations) {
    if (k.empty()) fail("annotations", "keys must not be empty");
  }

  // Setting these in the runtime's own UTS namespace would rename the host.
  bool uts = s.linux_ && s.linux_->has_namespace("uts");
  if (s.hostname.find('\0') != std::string::npos) fail("hostname", "must not contain a NUL byte");
  if (s.domainname.find('\0') != std::string::npos) fail("domainname", "must not contain a NUL byte");
  if (!s.hostname.empty() && !uts) fail("hostname", "requires a uts namespace (linux.namespaces has no \"uts\" entry)");
  if (!s.domainname.empty() && !uts) {
    fail("domainname", "requires a uts namespace (linux.namespaces has no \"uts\" entry)");
  }

  if (s.linux_) check_linux(s);
}

}  // namespace husk::spec
