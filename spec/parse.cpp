// config.json -> Spec. Structural checks only (JSON types, integer ranges,
// the few REQUIRED numbers the model cannot show as absent); the rules of
// the spec live in validate.cpp. Like Go's encoding/json (which produced
// most configs in the wild), a null value is treated as an absent property.
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "spec/spec.h"

namespace husk::spec {

using json = nlohmann::json;

namespace {

std::string key_path(const std::string& base, const std::string& key) {
  return base.empty() ? key : base + "." + key;
}

std::string index_path(const std::string& base, size_t i) {
  return base + "[" + std::to_string(i) + "]";
}

// Map keys may contain dots (sysctl names, cgroup files), so they are quoted.
std::string map_path(const std::string& base, const std::string& key) {
  return base + "[" + json(key).dump() + "]";
}

[[noreturn]] void expected(const std::string& path, const std::string& what) {
  throw Error(path + ": expected " + what);
}

template <class T>
constexpr const char* int_name() {
  if constexpr (std::is_same_v<T, uint16_t>) return "uint16";
  if constexpr (std::is_same_v<T, uint32_t>) return "uint32";
  if constexpr (std::is_same_v<T, uint64_t>) return "uint64";
  if constexpr (std::is_same_v<T, int32_t>) return "int32";
  if constexpr (std::is_same_v<T, int64_t>) return "int64";
}

// An integer of exactly type T: floats, negative values for unsigned fields
// and values out of T's range are errors naming the field (as in Go).
template <class T>
T as_num(const json& v, const std::string& path) {
  using lim = std::numeric_limits<T>;
  if (v.is_number_unsigned()) {
    auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(lim::max())) {
      expected(path, std::string(int_name<T>()) + " (got " + std::to_string(u) + ")");
    }
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    auto i = v.get<int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      // "-0" parses as a signed zero.
      if (i == 0) return 0;
      expected(path, std::string(int_name<T>()) + " (got " + std::to_string(i) + ")");
    } else {
      if (i < static_cast<int64_t>(lim::min()) || i > static_cast<int64_t>(lim::max())) {
        expected(path, std::string(int_name<T>()) + " (got " + std::to_string(i) + ")");
      }
      return static_cast<T>(i);
    }
  }
  if (v.is_number_float()) expected(path, std::string(int_name<T>()) + " (got " + v.dump() + ")");
  expected(path, int_name<T>());
}

std::string as_string(const json& v, const std::string& path) {
  if (!v.is_string()) expected(path, "string");
  return v.get<std::string>();
}

// One JSON object at a known path; every accessor leaves its output untouched
// when the property is absent or null.
class Obj {
 public:
  Obj(const json& j, std::string path) : j_(j), path_(std::move(path)) {
    if (!j_.is_object()) expected(path_.empty() ? "(top level)" : path_, "object");
  }

  const json* get(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  std::string path(const char* key) const { return key_path(path_, key); }

  void require(const char* key) const {
    if (!get(key)) throw Error(path(key) + ": required");
  }

  void str(const char* key, std::string& out) const {
    if (auto v = get(key)) out = as_string(*v, path(key));
  }
  void str(const char* key, std::optional<std::string>& out) const {
    if (auto v = get(key)) out = as_string(*v, path(key));
  }
  void boolean(const char* key, bool& out) const {
    if (auto v = get(key)) {
      if (!v->is_boolean()) expected(path(key), "boolean");
      out = v->get<bool>();
    }
  }
  void boolean(const char* key, std::optional<bool>& out) const {
    bool b = false;
    if (get(key)) {
      boolean(key, b);
      out = b;
    }
  }
  template <class T>
  void num(const char* key, T& out) const {
    if (auto v = get(key)) out = as_num<T>(*v, path(key));
  }
  template <class T>
  void num(const char* key, std::optional<T>& out) const {
    if (auto v = get(key)) out = as_num<T>(*v, path(key));
  }

  // Array of elements parsed by fn(const json&, path).
  template <class T, class F>
  void array(const char* key, std::vector<T>& out, F fn) const {
    auto v = get(key);
    if (!v) return;
    if (!v->is_array()) expected(path(key), "array");
    out.clear();
    out.reserve(v->size());
    for (size_t i = 0; i < v->size(); ++i) out.push_back(fn((*v)[i], index_path(path(key), i)));
  }
  void strings(const char* key, std::vector<std::string>& out) const { array(key, out, as_string); }
  template <class T>
  void nums(const char* key, std::vector<T>& out) const {
    array(key, out, as_num<T>);
  }

  // Nested object parsed by fn(const Obj&).
  template <class T, class F>
  void object(const char* key, std::optional<T>& out, F fn) const {
    if (auto v = get(key)) out = fn(Obj(*v, path(key)));
  }

  // Object used as a map of name -> object parsed by fn(const Obj&).
  template <class T, class F>
  void map(const char* key, std::map<std::string, T>& out, F fn) const {
    auto v = get(key);
    if (!v) return;
    if (!v->is_object()) expected(path(key), "object");
    for (const auto& [k, e] : v->items()) out[k] = fn(Obj(e, map_path(path(key), k)));
  }
  void string_map(const char* key, std::map<std::string, std::string>& out) const {
    auto v = get(key);
    if (!v) return;
    if (!v->is_object()) expected(path(key), "object");
    for (const auto& [k, e] : v->items()) out[k] = as_string(e, map_path(path(key), k));
  }

 private:
  const json& j_;
  std::string path_;
};

// nlohmann reports a byte offset; users want line and column.
json parse_json(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    size_t end = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    size_t line = 1, col = 1;
    for (size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    // what() is "[json.exception.parse_error.101] parse error at line 1, column 2: <detail>".
    std::string what = e.what();
    auto pos = what.find(": ");
    std::string detail = pos == std::string::npos ? what : what.substr(pos + 2);
    throw Error("line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + detail);
  } catch (const json::out_of_range& e) {
    // A number no double holds ("1e999"): nlohmann gives no position for it.
    std::string what = e.what();
    auto pos = what.find("] ");
    throw Error(pos == std::string::npos ? what : what.substr(pos + 2));
  }
}

IdMapping parse_id_mapping(const json& j, const std::string& path) {
  Obj o(j, path);
  IdMapping m;
  o.require("containerID");
  o.require("hostID");
  o.require("size");
  o.num("containerID", m.container_id);
  o.num("hostID", m.host_id);
  o.num("size", m.size);
  return m;
}

Mount parse_mount(const json& j, const std::string& path) {
  Obj o(j, path);
  Mount m;
  o.str("destination", m.destination);
  // config.md: a relative destination MUST be interpreted as relative to "/".
  if (!m.destination.empty() && m.destination[0] != '/') m.destination.insert(0, "/");
  o.str("source", m.source);
  o.str("type", m.type);
  o.strings("options", m.options);
  o.array("uidMappings", m.uid_mappings, parse_id_mapping);
  o.array("gidMappings", m.gid_mappings, parse_id_mapping);
  return m;
}

Rlimit parse_rlimit(const json& j, const std::string& path) {
  Obj o(j, path);
  Rlimit r;
  o.require("type");
  o.require("soft");
  o.require("hard");
  o.str("type", r.type);
  o.num("soft", r.soft);
  o.num("hard", r.hard);
  return r;
}

Capabilities parse_capabilities(const Obj& o) {
  Capabilities c;
  o.strings("bounding", c.bounding);
  o.strings("effective", c.effective);
  o.strings("inheritable", c.inheritable);
  o.strings("permitted", c.permitted);
  o.strings("ambient", c.ambient);
  return c;
}

User parse_user(const Obj& o) {
  User u;
  o.num("uid", u.uid);
  o.num("gid", u.gid);
  o.num("umask", u.umask);
  o.nums("additionalGids", u.additional_gids);
  o.str("username", u.username);
  return u;
}

Scheduler parse_scheduler(const Obj& o) {
  Scheduler s;
  o.str("policy", s.policy);
  o.num("nice", s.nice);
  o.num("priority", s.priority);
  o.strings("flags", s.flags);
  o.num("runtime", s.runtime);
  o.num("deadline", s.deadline);
  o.num("period", s.period);
  return s;
}

Process parse_process(const Obj& o) {
  Process p;
  o.boolean("terminal", p.terminal);
  o.object("consoleSize", p.console_size, [](const Obj& c) {
    ConsoleSize cs;
    c.num("height", cs.height);
    c.num("width", cs.width);
    return cs;
  });
  o.str("cwd", p.cwd);
  o.strings("env", p.env);
  o.strings("args", p.args);
  o.array("rlimits", p.rlimits, parse_rlimit);
  o.str("apparmorProfile", p.apparmor_profile);
  o.object("capabilities", p.capabilities, parse_capabilities);
  o.boolean("noNewPrivileges", p.no_new_privileges);
  o.num("oomScoreAdj", p.oom_score_adj);
  o.object("scheduler", p.scheduler, parse_scheduler);
  o.str("selinuxLabel", p.selinux_label);
  o.object("ioPriority", p.io_priority, [](const Obj& c) {
    IoPriority io;
    c.str("class", io.klass);
    c.num("priority", io.priority);
    return io;
  });
  o.object("execCPUAffinity", p.exec_cpu_affinity, [](const Obj& c) {
    ExecCpuAffinity a;
    c.str("initial", a.initial);
    c.str("final", a.final);
    return a;
  });
  std::optional<User> user;
  o.object("user", user, parse_user);
  if (user) p.user = std::move(*user);
  return p;
}

Hook parse_hook(const json& j, const std::string& path) {
  Obj o(j, path);
  Hook h;
  o.str("path", h.path);
  o.strings("args", h.args);
  o.strings("env", h.env);
  o.num("timeout", h.timeout);
  return h;
}

Hooks parse_hooks(const Obj& o) {
  Hooks h;
  o.array("prestart", h.prestart, parse_hook);
  o.array("createRuntime", h.create_runtime, parse_hook);
  o.array("createContainer", h.create_container, parse_hook);
  o.array("startContainer", h.start_container, parse_hook);
  o.array("poststart", h.poststart, parse_hook);
  o.array("poststop", h.poststop, parse_hook);
  return h;
}

Namespace parse_namespace(const json& j, const std::string& path) {
  Obj o(j, path);
  Namespace n;
  o.str("type", n.type);
  o.str("path", n.path);
  return n;
}

Device parse_device(const json& j, const std::string& path) {
  Obj o(j, path);
  Device d;
  o.str("type", d.type);
  o.str("path", d.path);
  o.num("major", d.major);
  o.num("minor", d.minor);
  o.num("fileMode", d.file_mode);
  o.num("uid", d.uid);
  o.num("gid", d.gid);
  return d;
}

DeviceRule parse_device_rule(const json& j, const std::string& path) {
  Obj o(j, path);
  DeviceRule r;
  o.boolean("allow", r.allow);
  o.str("type", r.type);
  o.num("major", r.major);
  o.num("minor", r.minor);
  o.str("access", r.access);
  return r;
}

Memory parse_memory(const Obj& o) {
  Memory m;
  o.num("limit", m.limit);
  o.num("reservation", m.reservation);
  o.num("swap", m.swap);
  o.num("kernel", m.kernel);
  o.num("kernelTCP", m.kernel_tcp);
  o.num("swappiness", m.swappiness);
  o.boolean("disableOOMKiller", m.disable_oom_killer);
  o.boolean("useHierarchy", m.use_hierarchy);
  o.boolean("checkBeforeUpdate", m.check_before_update);
  return m;
}

Cpu parse_cpu(const Obj& o) {
  Cpu c;
  o.num("shares", c.shares);
  o.num("quota", c.quota);
  o.num("burst", c.burst);
  o.num("period", c.period);
  o.num("realtimeRuntime", c.realtime_runtime);
  o.num("realtimePeriod", c.realtime_period);
  o.str("cpus", c.cpus);
  o.str("mems", c.mems);
  o.num("idle", c.idle);
  return c;
}

WeightDevice parse_weight_device(const json& j, const std::string& path) {
  Obj o(j, path);
  WeightDevice w;
  o.num("major", w.major);
  o.num("minor", w.minor);
  o.num("weight", w.weight);
  o.num("leafWeight", w.leaf_weight);
  return w;
}

ThrottleDevice parse_throttle_device(const json& j, const std::string& path) {
  Obj o(j, path);
  ThrottleDevice t;
  o.num("major", t.major);
  o.num("minor", t.minor);
  o.num("rate", t.rate);
  return t;
}

BlockIo parse_block_io(const Obj& o) {
  BlockIo b;
  o.num("weight", b.weight);
  o.num("leafWeight", b.leaf_weight);
  o.array("weightDevice", b.weight_device, parse_weight_device);
  o.array("throttleReadBpsDevice", b.throttle_read_bps, parse_throttle_device);
  o.array("throttleWriteBpsDevice", b.throttle_write_bps, parse_throttle_device);
  o.array("throttleReadIOPSDevice", b.throttle_read_iops, parse_throttle_device);
  o.array("throttleWriteIOPSDevice", b.throttle_write_iops, parse_throttle_device);
  return b;
}

HugepageLimit parse_hugepage_limit(const json& j, const std::string& path) {
  Obj o(j, path);
  HugepageLimit h;
  o.str("pageSize", h.page_size);
  o.num("limit", h.limit);
  return h;
}

Network parse_network(const Obj& o) {
  Network n;
  o.num("classID", n.class_id);
  o.array("priorities", n.priorities, [](const json& j, const std::string& path) {
    Obj p(j, path);
    InterfacePriority ip;
    p.str("name", ip.name);
    p.num("priority", ip.priority);
    return ip;
  });
  return n;
}

Resources parse_resources_obj(const Obj& o) {
  Resources r;
  o.array("devices", r.devices, parse_device_rule);
  o.object("memory", r.memory, parse_memory);
  o.object("cpu", r.cpu, parse_cpu);
  std::optional<int64_t> pids_limit;
  o.object("pids", pids_limit, [](const Obj& p) {
    int64_t limit = 0;
    p.num("limit", limit);
    return limit;
  });
  r.pids_limit = pids_limit;
  o.object("blockIO", r.block_io, parse_block_io);
  o.array("hugepageLimits", r.hugepage_limits, parse_hugepage_limit);
  o.object("network", r.network, parse_network);
  o.map("rdma", r.rdma, [](const Obj& d) {
    Rdma rd;
    d.num("hcaHandles", rd.hca_handles);
    d.num("hcaObjects", rd.hca_objects);
    return rd;
  });
  o.string_map("unified", r.unified);
  return r;
}

IntelRdt parse_intel_rdt(const Obj& o) {
  IntelRdt r;
  o.str("closID", r.clos_id);
  o.str("l3CacheSchema", r.l3_cache_schema);
  o.str("memBwSchema", r.mem_bw_schema);
  o.strings("schemata", r.schemata);
  o.boolean("enableMonitoring", r.enable_monitoring);
  return r;
}

SeccompArg parse_seccomp_arg(const json& j, const std::string& path) {
  Obj o(j, path);
  SeccompArg a;
  o.num("index", a.index);
  o.num("value", a.value);
  o.num("valueTwo", a.value_two);
  o.str("op", a.op);
  return a;
}

SeccompSyscall parse_seccomp_syscall(const json& j, const std::string& path) {
  Obj o(j, path);
  SeccompSyscall s;
  o.strings("names", s.names);
  o.str("action", s.action);
  o.num("errnoRet", s.errno_ret);
  o.array("args", s.args, parse_seccomp_arg);
  return s;
}

Seccomp parse_seccomp(const Obj& o) {
  Seccomp s;
  o.str("defaultAction", s.default_action);
  o.num("defaultErrnoRet", s.default_errno_ret);
  o.strings("architectures", s.architectures);
  o.strings("flags", s.flags);
  o.str("listenerPath", s.listener_path);
  o.str("listenerMetadata", s.listener_metadata);
  o.array("syscalls", s.syscalls, parse_seccomp_syscall);
  return s;
}

Linux parse_linux(const Obj& o) {
  Linux l;
  o.array("namespaces", l.namespaces, parse_namespace);
  o.array("uidMappings", l.uid_mappings, parse_id_mapping);
  o.array("gidMappings", l.gid_mappings, parse_id_mapping);
  o.map("timeOffsets", l.time_offsets, [](const Obj& t) {
    TimeOffset off;
    t.num("secs", off.secs);
    t.num("nanosecs", off.nanosecs);
    return off;
  });
  o.array("devices", l.devices, parse_device);
  o.map("netDevices", l.net_devices, [](const Obj& d) {
    NetDevice nd;
    d.str("name", nd.name);
    return nd;
  });
  o.str("cgroupsPath", l.cgroups_path);
  o.object("resources", l.resources, parse_resources_obj);
  o.object("intelRdt", l.intel_rdt, parse_intel_rdt);
  o.string_map("sysctl", l.sysctl);
  o.object("seccomp", l.seccomp, parse_seccomp);
  o.str("rootfsPropagation", l.rootfs_propagation);
  o.strings("maskedPaths", l.masked_paths);
  o.strings("readonlyPaths", l.readonly_paths);
  o.str("mountLabel", l.mount_label);
  o.object("personality", l.personality, [](const Obj& p) {
    Personality pe;
    p.str("domain", pe.domain);
    p.strings("flags", pe.flags);
    return pe;
  });
  o.object("memoryPolicy", l.memory_policy, [](const Obj& m) {
    MemoryPolicy mp;
    m.str("mode", mp.mode);
    m.str("nodes", mp.nodes);
    m.strings("flags", mp.flags);
    return mp;
  });
  return l;
}

}  // namespace

Spec parse(const std::string& json_text) {
  json j = parse_json(json_text);
  if (!j.is_object()) throw Error("expected a JSON object at the top level");
  Obj o(j, "");
  Spec s;
  o.str("ociVersion", s.oci_version);
  o.object("root", s.root, [](const Obj& r) {
    Root root;
    r.str("path", root.path);
    r.boolean("readonly", root.readonly);
    return root;
  });
  o.array("mounts", s.mounts, parse_mount);
  o.object("process", s.process, parse_process);
  o.str("hostname", s.hostname);
  o.str("domainname", s.domainname);
  std::optional<Hooks> hooks;
  o.object("hooks", hooks, parse_hooks);
  if (hooks) s.hooks = std::move(*hooks);
  o.string_map("annotations", s.annotations);
  o.object("linux", s.linux_, parse_linux);
  return s;
}

Resources parse_resources(const std::string& json_text) {
  json j = parse_json(json_text);
  if (!j.is_object()) throw Error("expected a JSON object at the top level");
  Resources r = parse_resources_obj(Obj(j, ""));
  validate_resources(r);
  return r;
}

}  // namespace husk::spec
