// config.json -> Spec. Structural checks only (JSON types, integer ranges,
// the few REQUIRED numbers the model cannot show as absent); the rules of
// the spec live in validate.cpp. Like Go's encoding/json (which produced
// most configs in the wild), a null value is treated as an absent property.
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <nlohmann/json.hpp>
#include <type_traits>
#include <vector>

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

template <class T>
constexpr bool is_optional = false;
template <class T>
constexpr bool is_optional<std::optional<T>> = true;
template <class T>
constexpr bool is_vector = false;
template <class T>
constexpr bool is_vector<std::vector<T>> = true;
template <class T>
constexpr bool is_map = false;
template <class T>
constexpr bool is_map<std::map<std::string, T>> = true;

// Model<S>::fields: the properties of model struct S, read in this order.
// Model<S>::finish(S&), where present, runs once they are read.
template <class S>
struct Model;

// A property: its key and the member it fills; `required` for the few
// numbers the model cannot show as absent.
template <class S, class M>
struct Prop {
  const char* key;
  M S::*member;
  bool required = false;
};
template <class S, class M>
constexpr Prop<S, M> prop(const char* key, M S::*member) {
  return {key, member};
}
template <class S, class M>
constexpr Prop<S, M> required(const char* key, M S::*member) {
  return {key, member, true};
}

// A property that does not map onto one member as it is (linux.resources.pids).
template <class S>
struct Custom {
  const char* key;
  void (*read)(const json& v, const std::string& path, S& out);
};

template <class T>
void read(const json& v, const std::string& path, T& out);

// One JSON object at a known path; a property that is absent or null leaves
// its member untouched.
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

  template <class S, class M>
  void check_required(const Prop<S, M>& p) const {
    if (p.required && !get(p.key)) throw Error(path(p.key) + ": required");
  }
  template <class S>
  void check_required(const Custom<S>&) const {}

  template <class S, class M>
  void fill(const Prop<S, M>& p, S& out) const {
    if (auto v = get(p.key)) read(*v, path(p.key), out.*p.member);
  }
  template <class S>
  void fill(const Custom<S>& c, S& out) const {
    if (auto v = get(c.key)) c.read(*v, path(c.key), out);
  }

 private:
  const json& j_;
  std::string path_;
};

// Every required property is checked before any is read, so a missing one
// is reported before a wrong type elsewhere in the object.
template <class S>
void read_object(const json& v, const std::string& path, S& out) {
  Obj o(v, path);
  std::apply([&](const auto&... p) { (o.check_required(p), ...); }, Model<S>::fields);
  std::apply([&](const auto&... p) { (o.fill(p, out), ...); }, Model<S>::fields);
  if constexpr (requires { Model<S>::finish(out); }) Model<S>::finish(out);
}

// The member's type says what the JSON value must be.
template <class T>
void read(const json& v, const std::string& path, T& out) {
  if constexpr (std::is_same_v<T, std::string>) {
    out = as_string(v, path);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) expected(path, "boolean");
    out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    out = as_num<T>(v, path);
  } else if constexpr (is_optional<T>) {
    typename T::value_type value{};
    read(v, path, value);
    out = std::move(value);
  } else if constexpr (is_vector<T>) {
    if (!v.is_array()) expected(path, "array");
    out.clear();
    out.resize(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      // A string's path is needed only to say it is not one (seccomp lists hundreds).
      if constexpr (std::is_same_v<typename T::value_type, std::string>) {
        if (v[i].is_string()) {
          out[i] = v[i].template get_ref<const std::string&>();
          continue;
        }
      }
      read(v[i], index_path(path, i), out[i]);
    }
  } else if constexpr (is_map<T>) {
    if (!v.is_object()) expected(path, "object");
    for (const auto& [k, e] : v.items()) read(e, map_path(path, k), out[k]);
  } else {
    read_object(v, path, out);
  }
}

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

// `v` as parse_json would give it back from its text: a non-negative
// integer is unsigned, a float JSON cannot write (NaN, infinity) is null.
json as_parsed(const nlohmann::ordered_json& v) {
  using T = json::value_t;
  switch (v.type()) {
    case T::object: {
      json o = json::object();
      for (const auto& [k, e] : v.items()) o.emplace(k, as_parsed(e));
      return o;
    }
    case T::array: {
      json a = json::array();
      a.get_ref<json::array_t&>().reserve(v.size());
      for (const auto& e : v) a.push_back(as_parsed(e));
      return a;
    }
    case T::number_integer: {
      const auto i = v.get<int64_t>();
      return i >= 0 ? json(static_cast<uint64_t>(i)) : json(i);
    }
    case T::number_float: {
      const auto d = v.get<double>();
      return std::isfinite(d) ? json(d) : json(nullptr);
    }
    case T::string:
      return v.get_ref<const std::string&>();
    case T::boolean:
      return v.get<bool>();
    case T::number_unsigned:
      return v.get<uint64_t>();
    default:
      return parse_json(v.dump());
  }
}

// The properties of each model struct, read in this order: with several
// errors in one object, the first one listed is reported.
template <>
struct Model<Root> {
  static constexpr auto fields = std::tuple(prop("path", &Root::path), prop("readonly", &Root::readonly));
};

template <>
struct Model<IdMapping> {
  static constexpr auto fields =
      std::tuple(required("containerID", &IdMapping::container_id), required("hostID", &IdMapping::host_id),
                 required("size", &IdMapping::size));
};

template <>
struct Model<Mount> {
  static constexpr auto fields = std::tuple(
      prop("destination", &Mount::destination), prop("source", &Mount::source), prop("type", &Mount::type),
      prop("options", &Mount::options), prop("uidMappings", &Mount::uid_mappings),
      prop("gidMappings", &Mount::gid_mappings));
  // config.md: a relative destination MUST be interpreted as relative to "/".
  static void finish(Mount& m) {
    if (!m.destination.empty() && m.destination[0] != '/') m.destination.insert(0, "/");
  }
};

template <>
struct Model<Rlimit> {
  static constexpr auto fields = std::tuple(required("type", &Rlimit::type), required("soft", &Rlimit::soft),
                                            required("hard", &Rlimit::hard));
};

template <>
struct Model<Capabilities> {
  static constexpr auto fields = std::tuple(
      prop("bounding", &Capabilities::bounding), prop("effective", &Capabilities::effective),
      prop("inheritable", &Capabilities::inheritable), prop("permitted", &Capabilities::permitted),
      prop("ambient", &Capabilities::ambient));
};

template <>
struct Model<User> {
  static constexpr auto fields =
      std::tuple(prop("uid", &User::uid), prop("gid", &User::gid), prop("umask", &User::umask),
                 prop("additionalGids", &User::additional_gids), prop("username", &User::username));
};

template <>
struct Model<Scheduler> {
  static constexpr auto fields = std::tuple(
      prop("policy", &Scheduler::policy), prop("nice", &Scheduler::nice), prop("priority", &Scheduler::priority),
      prop("flags", &Scheduler::flags), prop("runtime", &Scheduler::runtime),
      prop("deadline", &Scheduler::deadline), prop("period", &Scheduler::period));
};

template <>
struct Model<ConsoleSize> {
  static constexpr auto fields =
      std::tuple(prop("height", &ConsoleSize::height), prop("width", &ConsoleSize::width));
};

template <>
struct Model<IoPriority> {
  static constexpr auto fields =
      std::tuple(prop("class", &IoPriority::klass), prop("priority", &IoPriority::priority));
};

template <>
struct Model<ExecCpuAffinity> {
  static constexpr auto fields =
      std::tuple(prop("initial", &ExecCpuAffinity::initial), prop("final", &ExecCpuAffinity::final));
};

template <>
struct Model<Process> {
  static constexpr auto fields = std::tuple(
      prop("terminal", &Process::terminal), prop("consoleSize", &Process::console_size),
      prop("cwd", &Process::cwd), prop("env", &Process::env), prop("args", &Process::args),
      prop("rlimits", &Process::rlimits), prop("apparmorProfile", &Process::apparmor_profile),
      prop("capabilities", &Process::capabilities), prop("noNewPrivileges", &Process::no_new_privileges),
      prop("oomScoreAdj", &Process::oom_score_adj), prop("scheduler", &Process::scheduler),
      prop("selinuxLabel", &Process::selinux_label), prop("ioPriority", &Process::io_priority),
      prop("execCPUAffinity", &Process::exec_cpu_affinity), prop("user", &Process::user));
};

template <>
struct Model<Hook> {
  static constexpr auto fields = std::tuple(prop("path", &Hook::path), prop("args", &Hook::args),
                                            prop("env", &Hook::env), prop("timeout", &Hook::timeout));
};

template <>
struct Model<Hooks> {
  static constexpr auto fields = std::tuple(
      prop("prestart", &Hooks::prestart), prop("createRuntime", &Hooks::create_runtime),
      prop("createContainer", &Hooks::create_container), prop("startContainer", &Hooks::start_container),
      prop("poststart", &Hooks::poststart), prop("poststop", &Hooks::poststop));
};

template <>
struct Model<Namespace> {
  static constexpr auto fields = std::tuple(prop("type", &Namespace::type), prop("path", &Namespace::path));
};

template <>
struct Model<TimeOffset> {
  static constexpr auto fields =
      std::tuple(prop("secs", &TimeOffset::secs), prop("nanosecs", &TimeOffset::nanosecs));
};

template <>
struct Model<Device> {
  static constexpr auto fields =
      std::tuple(prop("type", &Device::type), prop("path", &Device::path), prop("major", &Device::major),
                 prop("minor", &Device::minor), prop("fileMode", &Device::file_mode), prop("uid", &Device::uid),
                 prop("gid", &Device::gid));
};

template <>
struct Model<NetDevice> {
  static constexpr auto fields = std::tuple(prop("name", &NetDevice::name));
};

template <>
struct Model<DeviceRule> {
  static constexpr auto fields =
      std::tuple(prop("allow", &DeviceRule::allow), prop("type", &DeviceRule::type),
                 prop("major", &DeviceRule::major), prop("minor", &DeviceRule::minor),
                 prop("access", &DeviceRule::access));
};

template <>
struct Model<Memory> {
  static constexpr auto fields = std::tuple(
      prop("limit", &Memory::limit), prop("reservation", &Memory::reservation), prop("swap", &Memory::swap),
      prop("kernel", &Memory::kernel), prop("kernelTCP", &Memory::kernel_tcp),
      prop("swappiness", &Memory::swappiness), prop("disableOOMKiller", &Memory::disable_oom_killer),
      prop("useHierarchy", &Memory::use_hierarchy), prop("checkBeforeUpdate", &Memory::check_before_update));
};

template <>
struct Model<Cpu> {
  static constexpr auto fields = std::tuple(
      prop("shares", &Cpu::shares), prop("quota", &Cpu::quota), prop("burst", &Cpu::burst),
      prop("period", &Cpu::period), prop("realtimeRuntime", &Cpu::realtime_runtime),
      prop("realtimePeriod", &Cpu::realtime_period), prop("cpus", &Cpu::cpus), prop("mems", &Cpu::mems),
      prop("idle", &Cpu::idle));
};

template <>
struct Model<WeightDevice> {
  static constexpr auto fields =
      std::tuple(prop("major", &WeightDevice::major), prop("minor", &WeightDevice::minor),
                 prop("weight", &WeightDevice::weight), prop("leafWeight", &WeightDevice::leaf_weight));
};

template <>
struct Model<ThrottleDevice> {
  static constexpr auto fields = std::tuple(prop("major", &ThrottleDevice::major),
                                            prop("minor", &ThrottleDevice::minor), prop("rate", &ThrottleDevice::rate));
};

template <>
struct Model<BlockIo> {
  static constexpr auto fields = std::tuple(
      prop("weight", &BlockIo::weight), prop("leafWeight", &BlockIo::leaf_weight),
      prop("weightDevice", &BlockIo::weight_device), prop("throttleReadBpsDevice", &BlockIo::throttle_read_bps),
      prop("throttleWriteBpsDevice", &BlockIo::throttle_write_bps),
      prop("throttleReadIOPSDevice", &BlockIo::throttle_read_iops),
      prop("throttleWriteIOPSDevice", &BlockIo::throttle_write_iops));
};

template <>
struct Model<HugepageLimit> {
  static constexpr auto fields =
      std::tuple(prop("pageSize", &HugepageLimit::page_size), prop("limit", &HugepageLimit::limit));
};

template <>
struct Model<InterfacePriority> {
  static constexpr auto fields =
      std::tuple(prop("name", &InterfacePriority::name), prop("priority", &InterfacePriority::priority));
};

template <>
struct Model<Network> {
  static constexpr auto fields =
      std::tuple(prop("classID", &Network::class_id), prop("priorities", &Network::priorities));
};

template <>
struct Model<Rdma> {
  static constexpr auto fields =
      std::tuple(prop("hcaHandles", &Rdma::hca_handles), prop("hcaObjects", &Rdma::hca_objects));
};

// linux.resources.pids is an object of one number; the model keeps the number.
struct Pids {
  int64_t limit = 0;
};

template <>
struct Model<Pids> {
  static constexpr auto fields = std::tuple(prop("limit", &Pids::limit));
};

void read_pids(const json& v, const std::string& path, Resources& out) {
  Pids p;
  read(v, path, p);
  out.pids_limit = p.limit;
}

template <>
struct Model<Resources> {
  static constexpr auto fields = std::tuple(
      prop("devices", &Resources::devices), prop("memory", &Resources::memory), prop("cpu", &Resources::cpu),
      Custom<Resources>{"pids", read_pids}, prop("blockIO", &Resources::block_io),
      prop("hugepageLimits", &Resources::hugepage_limits), prop("network", &Resources::network),
      prop("rdma", &Resources::rdma), prop("unified", &Resources::unified));
};

template <>
struct Model<IntelRdt> {
  static constexpr auto fields = std::tuple(
      prop("closID", &IntelRdt::clos_id), prop("l3CacheSchema", &IntelRdt::l3_cache_schema),
      prop("memBwSchema", &IntelRdt::mem_bw_schema), prop("schemata", &IntelRdt::schemata),
      prop("enableMonitoring", &IntelRdt::enable_monitoring));
};

template <>
struct Model<SeccompArg> {
  static constexpr auto fields =
      std::tuple(prop("index", &SeccompArg::index), prop("value", &SeccompArg::value),
                 prop("valueTwo", &SeccompArg::value_two), prop("op", &SeccompArg::op));
};

template <>
struct Model<SeccompSyscall> {
  static constexpr auto fields =
      std::tuple(prop("names", &SeccompSyscall::names), prop("action", &SeccompSyscall::action),
                 prop("errnoRet", &SeccompSyscall::errno_ret), prop("args", &SeccompSyscall::args));
};

template <>
struct Model<Seccomp> {
  static constexpr auto fields = std::tuple(
      prop("defaultAction", &Seccomp::default_action), prop("defaultErrnoRet", &Seccomp::default_errno_ret),
      prop("architectures", &Seccomp::architectures), prop("flags", &Seccomp::flags),
      prop("listenerPath", &Seccomp::listener_path), prop("listenerMetadata", &Seccomp::listener_metadata),
      prop("syscalls", &Seccomp::syscalls));
};

template <>
struct Model<Personality> {
  static constexpr auto fields =
      std::tuple(prop("domain", &Personality::domain), prop("flags", &Personality::flags));
};

template <>
struct Model<MemoryPolicy> {
  static constexpr auto fields = std::tuple(prop("mode", &MemoryPolicy::mode), prop("nodes", &MemoryPolicy::nodes),
                                            prop("flags", &MemoryPolicy::flags));
};

template <>
struct Model<Linux> {
  static constexpr auto fields = std::tuple(
      prop("namespaces", &Linux::namespaces), prop("uidMappings", &Linux::uid_mappings),
      prop("gidMappings", &Linux::gid_mappings), prop("timeOffsets", &Linux::time_offsets),
      prop("devices", &Linux::devices), prop("netDevices", &Linux::net_devices),
      prop("cgroupsPath", &Linux::cgroups_path), prop("resources", &Linux::resources),
      prop("intelRdt", &Linux::intel_rdt), prop("sysctl", &Linux::sysctl), prop("seccomp", &Linux::seccomp),
      prop("rootfsPropagation", &Linux::rootfs_propagation), prop("maskedPaths", &Linux::masked_paths),
      prop("readonlyPaths", &Linux::readonly_paths), prop("mountLabel", &Linux::mount_label),
      prop("personality", &Linux::personality), prop("memoryPolicy", &Linux::memory_policy));
};

template <>
struct Model<Spec> {
  static constexpr auto fields = std::tuple(
      prop("ociVersion", &Spec::oci_version), prop("root", &Spec::root), prop("mounts", &Spec::mounts),
      prop("process", &Spec::process), prop("hostname", &Spec::hostname), prop("domainname", &Spec::domainname),
      prop("hooks", &Spec::hooks), prop("annotations", &Spec::annotations), prop("linux", &Spec::linux_));
};

}  // namespace

Spec parse(const std::string& json_text) {
  json j = parse_json(json_text);
  if (!j.is_object()) throw Error("expected a JSON object at the top level");
  Spec s;
  read(j, "", s);
  return s;
}

Spec from_json(const nlohmann::ordered_json& config) {
  const json j = as_parsed(config);
  if (!j.is_object()) throw Error("expected a JSON object at the top level");
  Spec s;
  read(j, "", s);
  return s;
}

Resources parse_resources(const std::string& json_text) {
  json j = parse_json(json_text);
  if (!j.is_object()) throw Error("expected a JSON object at the top level");
  Resources r;
  read(j, "", r);
  validate_resources(r);
  return r;
}

}  // namespace husk::spec
