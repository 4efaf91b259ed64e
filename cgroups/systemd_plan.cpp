// The systemd driver's pure half (cgroups/systemd.h).
#include <algorithm>
#include <cctype>
#include <sstream>

#include "base/error.h"
#include "cgroups/internal.h"
#include "cgroups/systemd.h"

namespace husk::cgroups {

namespace {

constexpr uint64_t kInfinity = UINT64_MAX;  // systemd's "no limit" for every t property
constexpr uint64_t kUsecPerSec = 1000000;
constexpr uint64_t kQuotaStep = 10000;       // systemd keeps CPUQuota= in whole percent
constexpr uint64_t kDefaultPeriod = 100000;  // the kernel's and systemd's

Error path_error(const std::string& path, const std::string& why) {
  return Error("linux.cgroupsPath: \"" + path + "\": " + why);
}

// systemd's unit name rules (unit_name_is_valid): these characters, at most 255.
bool valid_unit_chars(const std::string& s) {
  if (s.empty() || s.size() > 255) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '_' || c == '.' || c == '-' || c == '\\'))
      return false;
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}


// "0-2,5" -> little-endian bitmask bytes, as systemd's AllowedCPUs takes it.
std::vector<uint8_t> cpu_mask(const std::string& list, const std::string& file) {
  std::vector<uint8_t> mask;
  for (unsigned cpu : parse_cpu_list(list, file)) {
    if (mask.size() <= cpu / 8) mask.resize(cpu / 8 + 1, 0);
    mask[cpu / 8] |= static_cast<uint8_t>(1u << (cpu % 8));
  }
  if (mask.empty()) throw Error(file + ": \"" + list + "\" names no CPU or node");
  return mask;
}

// The property for a scalar file's value; nullopt: a file systemd has no property for.
std::optional<UnitProperty> scalar_property(const std::string& file, const std::string& v) {
  static const std::vector<std::pair<std::string, std::string>> kBytes = {
      {"memory.max", "MemoryMax"},   {"memory.low", "MemoryLow"},          {"memory.high", "MemoryHigh"},
      {"memory.min", "MemoryMin"},   {"memory.swap.max", "MemorySwapMax"}, {"cpu.weight", "CPUWeight"},
      {"io.weight", "IOWeight"}};
  for (const auto& [f, name] : kBytes)
    if (f == file) return UnitProperty{name, parse_u64(v, file)};
  // systemd refuses TasksMax=0; 1 stops new tasks as well (the init is one).
  if (file == "pids.max") return UnitProperty{"TasksMax", std::max<uint64_t>(parse_u64(v, file), 1)};
  if (file == "cpuset.cpus") return UnitProperty{"AllowedCPUs", cpu_mask(v, file)};
  if (file == "cpuset.mems") return UnitProperty{"AllowedMemoryNodes", cpu_mask(v, file)};
  return std::nullopt;
}

// cpu.max "QUOTA PERIOD" / "max [PERIOD]" -> CPUQuotaPerSecUSec (+ period).
void cpu_max_properties(const std::string& v, std::vector<UnitProperty>& out) {
  std::istringstream in(v);
  std::string quota, period;
  in >> quota >> period;
  uint64_t p = period.empty() ? kDefaultPeriod : parse_u64(period, "cpu.max");
  if (p == 0 || p == kInfinity) throw Error("cpu.max: \"" + v + "\": the period must be a positive number");
  uint64_t q = parse_u64(quota, "cpu.max");
  out.push_back({"CPUQuotaPerSecUSec", q == kInfinity ? kInfinity : q * kUsecPerSec / p});
  out.push_back({"CPUQuotaPeriodUSec", p});
}

// io.weight "MAJ:MIN W" and io.max "MAJ:MIN rbps=N wbps=max ..." lines.
void io_device_properties(const std::string& file, const std::string& v, std::vector<UnitProperty>& out) {
  std::istringstream in(v);
  std::string dev, kv;
  in >> dev;
  const std::string node = "/dev/block/" + dev;
  if (file == "io.weight") {
    std::string w;
    in >> w;
    out.push_back({"IODeviceWeight", UnitProperty::StrU64s{{node, parse_u64(w, file)}}});
    return;
  }
  static const std::vector<std::pair<std::string, std::string>> kKeys = {{"rbps", "IOReadBandwidthMax"},
                                                                         {"wbps", "IOWriteBandwidthMax"},
                                                                         {"riops", "IOReadIOPSMax"},
                                                                         {"wiops", "IOWriteIOPSMax"}};
  while (in >> kv) {
    auto eq = kv.find('=');
    for (const auto& [key, name] : kKeys)
      if (eq != std::string::npos && kv.substr(0, eq) == key)
        out.push_back({name, UnitProperty::StrU64s{{node, parse_u64(kv.substr(eq + 1), file)}}});
  }
}

// "c 136:* rw" -> DeviceAllow's ("char-pts", "rw"); nullopt when systemd cannot name it.
std::optional<std::pair<std::string, std::string>> device_allow_entry(const spec::DeviceRule& r,
                                                                      const DeviceGroups& groups) {
  if (r.type != "c" && r.type != "b") return std::nullopt;
  const std::string kind = r.type == "b" ? "block" : "char";
  const std::string access = r.access.empty() ? "rwm" : r.access;
  if (!r.major) return r.minor ? std::nullopt : std::optional(std::pair(kind + "-*", access));
  if (r.minor) return std::pair("/dev/" + kind + "/" + std::to_string(*r.major) + ":" + std::to_string(*r.minor), access);
  for (const auto& [name, major] : groups)
    if (major == *r.major && name.rfind(kind + "-", 0) == 0) return std::pair(name, access);
  return std::nullopt;
}

// What systemd can hold of device rules: allow everything (its default), or
// a strict allow list. The last rule for all devices decides the start: a
// deny-all followed by expressible allows (denies before the first allow
// are no-ops), or an allow-all followed by allows (no-ops); any other rule
// set (a deny after an allow, a "*:5") has no systemd form: nullopt.
struct DevicePolicy {
  bool allow_all = true;
  UnitProperty::StrPairs allow;
};
std::optional<DevicePolicy> device_policy(const std::vector<spec::DeviceRule>& rules, const DeviceGroups& groups) {
  auto all = [](const spec::DeviceRule& r) {
    const bool rwm = r.access.empty() || (r.access.find('r') != std::string::npos &&
                                          r.access.find('w') != std::string::npos && r.access.find('m') != std::string::npos);
    return (r.type.empty() || r.type == "a") && !r.major && !r.minor && rwm;
  };
  if (rules.empty()) return DevicePolicy{};
  auto last = std::find_if(rules.rbegin(), rules.rend(), all);
  if (last == rules.rend()) return std::nullopt;  // what the parent allows stays in force
  DevicePolicy p{last->allow, {}};
  for (auto it = last.base(); it != rules.end(); ++it) {
    if (!it->allow) {
      if (!p.allow_all && p.allow.empty()) continue;  // nothing allowed yet: a no-op
      return std::nullopt;
    }
    if (p.allow_all) continue;
    auto entry = device_allow_entry(*it, groups);
    if (!entry) return std::nullopt;
    p.allow.push_back(*entry);
  }
  return p;
}

// An empty DeviceAllow first: the list is appended to, not replaced.
void put_device_policy(const std::string& policy, const UnitProperty::StrPairs& allow, std::vector<UnitProperty>& out) {
  out.push_back({"DeviceAllow", UnitProperty::StrPairs{}});
  out.push_back({"DevicePolicy", policy});
  if (!allow.empty()) out.push_back({"DeviceAllow", allow});
}

// cgroup v2: DevicePolicy=strict with the allow list when systemd can hold
// the rules; otherwise nothing, and husk's own device program alone decides.
void device_properties(const std::vector<spec::DeviceRule>& rules, const DeviceGroups& groups,
                       std::vector<UnitProperty>& out) {
  auto p = device_policy(rules, groups);
  if (p && !p->allow_all) put_device_policy("strict", p->allow, out);
}

// cgroup v1: systemd itself rewrites devices.deny/devices.allow on every
// reload from its properties (with none, it allows everything): rules it
// cannot hold would be lost, so they are refused.
void v1_device_properties(const std::vector<spec::DeviceRule>& rules, const DeviceGroups& groups,
                          std::vector<UnitProperty>& out) {
  if (rules.empty()) return;  // `update`: the unit keeps its policy
  auto p = device_policy(rules, groups);
  if (!p)
    throw Error("linux.resources.devices: with the systemd cgroup driver on a cgroup v1 host, systemd rewrites "
                "the device rules on every daemon-reload and can hold only a deny-all followed by allows "
                "naming a device, a whole major that /proc/devices lists, or all of a type");
  put_device_policy(p->allow_all ? "auto" : "strict", p->allow, out);
}

// A v1 file's number: -1 (as v1 takes "no limit") and "max" are infinity.
uint64_t v1_number(const std::string& v, const std::string& file) {
  return v == "-1" ? kInfinity : parse_u64(v, file);
}

// blkio "MAJ:MIN VALUE" lines: BlockIO*(device, value).
void blkio_device_property(const std::string& name, const std::string& file, const std::string& v,
                           std::vector<UnitProperty>& out) {
  std::istringstream in(v);
  std::string dev, value;
  in >> dev >> value;
  out.push_back({name, UnitProperty::StrU64s{{"/dev/block/" + dev, parse_u64(value, file)}}});
}

}  // namespace

const char* UnitProperty::signature() const {
  static const char* kSignatures[] = {"s", "b", "t", "au", "ay", "a(ss)", "a(st)"};
  return kSignatures[value.index()];
}

std::string expand_slice(const std::string& slice, const std::string& field) {
  const std::string suffix = ".slice";
  auto bad = [&](const std::string& why) { return Error(field + ": slice \"" + slice + "\": " + why); };
  if (slice.size() <= suffix.size() || slice.compare(slice.size() - suffix.size(), suffix.size(), suffix) != 0)
    throw bad("must end in .slice");
  if (slice == "-.slice") return "";
  if (!valid_unit_chars(slice)) throw bad("not a valid systemd unit name");
  std::string out, prefix;
  for (const auto& part : split(slice.substr(0, slice.size() - suffix.size()), '-')) {
    if (part.empty()) throw bad("empty component between dashes");
    prefix += (prefix.empty() ? "" : "-") + part;
    out += "/" + prefix + suffix;
  }
  return out;
}

SystemdUnit systemd_unit(const std::optional<std::string>& cgroups_path, const std::string& id, bool user_manager) {
  SystemdUnit u;
  std::string prefix = "husk", name = id;
  if (cgroups_path && !cgroups_path->empty()) {
    auto parts = split(*cgroups_path, ':');
    if (parts.size() != 3)
      throw path_error(*cgroups_path, "the systemd cgroup driver takes \"slice:prefix:name\" (e.g. "
                                      "\"system.slice:husk:" + id + "\")");
    u.slice = parts[0];
    prefix = parts[1];
    name = parts[2];
    if (prefix.empty() || name.empty()) throw path_error(*cgroups_path, "prefix and name must not be empty");
    if (name.size() > 6 && name.compare(name.size() - 6, 6, ".slice") == 0)
      throw path_error(*cgroups_path, "a container's processes go into a scope, not the slice \"" + name + "\"");
  }
  if (u.slice.empty()) u.slice = user_manager ? "user.slice" : "system.slice";
  u.unit = prefix + "-" + name + ".scope";
  if (!valid_unit_chars(u.unit) || u.unit.find('/') != std::string::npos)
    throw path_error(cgroups_path.value_or(""), "\"" + u.unit + "\" is not a valid systemd unit name");
  u.cgroup = expand_slice(u.slice, "linux.cgroupsPath: \"" + cgroups_path.value_or("") + "\"") + "/" + u.unit;
  return u;
}

spec::Resources systemd_resources(const spec::Resources& r) {
  spec::Resources out = r;
  auto round_quota = [](int64_t quota, uint64_t period) {
    if (quota <= 0 || period == 0) return quota;
    uint64_t per_sec = static_cast<uint64_t>(quota) * kUsecPerSec / period;
    per_sec = (per_sec + kQuotaStep - 1) / kQuotaStep * kQuotaStep;
    return static_cast<int64_t>(per_sec * period / kUsecPerSec);
  };
  if (out.cpu && out.cpu->quota)
    out.cpu->quota = round_quota(*out.cpu->quota, out.cpu->period.value_or(0) ? *out.cpu->period : kDefaultPeriod);
  if (auto it = out.unified.find("cpu.max"); it != out.unified.end()) {
    std::istringstream in(it->second);
    std::string quota, period;
    in >> quota >> period;
    if (quota != "max") {
      uint64_t p = period.empty() ? kDefaultPeriod : parse_u64(period, "linux.resources.unified[\"cpu.max\"]");
      int64_t q = static_cast<int64_t>(parse_u64(quota, "linux.resources.unified[\"cpu.max\"]"));
      it->second = std::to_string(round_quota(q, p)) + (period.empty() ? "" : " " + period);
    }
  }
  return out;
}

std::vector<UnitProperty> resource_properties(const spec::Resources& r, bool bfq_weight,
                                              const DeviceGroups& device_groups) {
  std::vector<UnitProperty> out;
  auto put = [&out](UnitProperty p) {
    // A later write of the same file (a unified key) wins, as in the files.
    std::erase_if(out, [&p](const UnitProperty& o) { return o.name == p.name; });
    out.push_back(std::move(p));
  };
  std::optional<std::string> idle;
  for (const auto& w : v2_writes(r, bfq_weight)) {
    if (w.file == "cpu.max") {
      std::vector<UnitProperty> q;
      cpu_max_properties(w.value, q);
      for (auto& p : q) put(std::move(p));
    } else if (w.file == "cpu.idle") {
      idle = w.value;
    } else if ((w.file == "io.weight" || w.file == "io.max") && w.value.find(':') != std::string::npos) {
      io_device_properties(w.file, w.value, out);
    } else if (auto p = scalar_property(w.file, w.value)) {
      put(std::move(*p));
    }
  }
  // systemd writes cpu.idle from CPUWeight: 0 is "idle".
  if (idle == "1") put({"CPUWeight", uint64_t{0}});
  device_properties(r.devices, device_groups, out);
  return out;
}

std::vector<UnitProperty> v1_resource_properties(const spec::Resources& r, const DeviceGroups& device_groups) {
  static const std::vector<std::pair<std::string, std::string>> kScalars = {
      {"memory.limit_in_bytes", "MemoryLimit"}, {"cpu.shares", "CPUShares"}, {"blkio.weight", "BlockIOWeight"}};
  static const std::vector<std::pair<std::string, std::string>> kDevices = {
      {"blkio.weight_device", "BlockIODeviceWeight"},
      {"blkio.throttle.read_bps_device", "BlockIOReadBandwidth"},
      {"blkio.throttle.write_bps_device", "BlockIOWriteBandwidth"}};
  std::vector<UnitProperty> out;
  std::optional<uint64_t> quota, period;
  for (const auto& w : v1_writes(r)) {
    if (w.file == "cpu.cfs_quota_us") quota = v1_number(w.value, w.file);
    if (w.file == "cpu.cfs_period_us") period = v1_number(w.value, w.file);
    if (w.file == "pids.max") out.push_back(*scalar_property(w.file, w.value));
    for (const auto& [file, name] : kScalars)
      if (w.file == file) out.push_back({name, v1_number(w.value, file)});
    for (const auto& [file, name] : kDevices)
      if (w.file == file) blkio_device_property(name, file, w.value, out);
  }
  if (quota) {
    const uint64_t p = period.value_or(kDefaultPeriod);
    out.push_back({"CPUQuotaPerSecUSec", *quota == kInfinity ? kInfinity : *quota * kUsecPerSec / p});
  }
  if (period) out.push_back({"CPUQuotaPeriodUSec", *period});
  v1_device_properties(r.devices, device_groups, out);
  return out;
}

std::vector<UnitProperty> scope_properties(const SystemdUnit& u, pid_t pid, const std::vector<UnitProperty>& resources,
                                          bool v1) {
  std::vector<UnitProperty> out = {
      {"Description", std::string("husk container ") + u.unit},
      {"Slice", u.slice},
      {"Delegate", true},
      {"PIDs", std::vector<uint32_t>{static_cast<uint32_t>(pid)}},
      {"MemoryAccounting", true},
      {"CPUAccounting", true},
      {v1 ? "BlockIOAccounting" : "IOAccounting", true},
      {"TasksAccounting", true},
      {"DefaultDependencies", false},
  };
  out.insert(out.end(), resources.begin(), resources.end());
  return out;
}

DeviceGroups parse_proc_devices(const std::string& text) {
  DeviceGroups out;
  std::istringstream in(text);
  std::string kind;
  for (std::string line; std::getline(in, line);) {
    if (line == "Character devices:") kind = "char";
    else if (line == "Block devices:") kind = "block";
    std::istringstream ls(line);
    int64_t major;
    std::string name;
    if (!kind.empty() && ls >> major >> name) out.emplace_back(kind + "-" + name, major);
  }
  return out;
}

}  // namespace husk::cgroups
