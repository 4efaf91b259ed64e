// Pure translation of linux.resources into cgroup file writes (v1 and v2),
// the value conversions runc uses, and validation with JSON-path messages.
#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "cgroups/translate.h"
#include "cgroups/internal.h"

namespace husk::cgroups {

namespace {

constexpr int64_t kMaxBytes = int64_t{1} << 62;

Error field_error(const std::string& field, const std::string& msg) {
  return Error("linux.resources." + field + ": " + msg);
}

// -1 (unlimited), 0 (unset, as runc), or a byte count up to 2^62.
void check_bytes(const std::string& field, int64_t v) {
  if (v < -1) throw field_error(field, "must be -1 or positive");
  if (v > kMaxBytes) throw field_error(field, "must be at most 2^62 bytes");
}

std::string v2_bytes(int64_t v) { return v == -1 ? "max" : std::to_string(v); }

std::string devnum(int64_t major, int64_t minor) {
  return std::to_string(major) + ":" + std::to_string(minor);
}

void check_devnum(const std::string& field, int64_t major, int64_t minor) {
  if (major < 0 || minor < 0) throw field_error(field, "major and minor must not be negative");
}

// "2MB", "1GB", "64KB": what the kernel names hugetlb.<size>.* files.
void check_page_size(const std::string& field, const std::string& size) {
  size_t i = 0;
  while (i < size.size() && std::isdigit(static_cast<unsigned char>(size[i]))) ++i;
  std::string unit = size.substr(i);
  if (i == 0 || size[0] == '0' || (unit != "KB" && unit != "MB" && unit != "GB" && unit != "TB" && unit != "PB"))
    throw field_error(field, "\"" + size + "\" is not a page size like \"2MB\" or \"1GB\"");
}

void check_weight(const std::string& field, uint16_t w) {
  if (w != 0 && (w < 10 || w > 1000)) throw field_error(field, "must be between 10 and 1000");
}

void check_memory_common(const spec::Memory& m) {
  if (m.limit) check_bytes("memory.limit", *m.limit);
  if (m.reservation) check_bytes("memory.reservation", *m.reservation);
  if (m.swap) check_bytes("memory.swap", *m.swap);
  if (m.kernel_tcp) check_bytes("memory.kernelTCP", *m.kernel_tcp);
}

void check_cpu_common(const spec::Cpu& c) {
  if (c.quota && *c.quota < -1) throw field_error("cpu.quota", "must be -1 or positive");
  if (c.idle && *c.idle != 0 && *c.idle != 1) throw field_error("cpu.idle", "must be 0 or 1");
  if (!c.cpus.empty()) parse_cpu_list(c.cpus, "linux.resources.cpu.cpus");
  if (!c.mems.empty()) parse_cpu_list(c.mems, "linux.resources.cpu.mems");
}

// Per-device throttles grouped by device, in first-appearance order.
struct Throttle {
  int64_t major, minor;
  std::vector<std::pair<std::string, uint64_t>> limits;
};

std::vector<Throttle> group_throttles(const spec::BlockIo& b) {
  std::vector<Throttle> out;
  auto add = [&](const std::vector<spec::ThrottleDevice>& list, const char* key, const char* field) {
    for (size_t i = 0; i < list.size(); ++i) {
      const auto& t = list[i];
      check_devnum(std::string("blockIO.") + field + "[" + std::to_string(i) + "]", t.major, t.minor);
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const Throttle& g) { return g.major == t.major && g.minor == t.minor; });
      if (it == out.end()) it = out.insert(out.end(), Throttle{t.major, t.minor, {}});
      it->limits.emplace_back(key, t.rate);
    }
  };
  add(b.throttle_read_bps, "rbps", "throttleReadBpsDevice");
  add(b.throttle_write_bps, "wbps", "throttleWriteBpsDevice");
  add(b.throttle_read_iops, "riops", "throttleReadIOPSDevice");
  add(b.throttle_write_iops, "wiops", "throttleWriteIOPSDevice");
  return out;
}

std::string rdma_value(const std::string& dev, const spec::Rdma& r) {
  std::string v = dev;
  if (r.hca_handles) v += " hca_handle=" + std::to_string(*r.hca_handles);
  if (r.hca_objects) v += " hca_object=" + std::to_string(*r.hca_objects);
  return v;
}

void check_rdma_dev(const std::string& dev) {
  if (dev.empty() || dev.find_first_of(" \t\n") != std::string::npos)
    throw field_error("rdma", "device name \"" + dev + "\" must be non-empty without whitespace");
}

}  // namespace

uint64_t shares_to_weight(uint64_t shares) {
  if (shares == 0) return 0;
  shares = std::clamp<uint64_t>(shares, 2, 262144);
  return 1 + ((shares - 2) * 9999) / 262142;
}

uint64_t blkio_weight_to_io_weight(uint64_t weight) {
  if (weight == 0) return 0;
  weight = std::clamp<uint64_t>(weight, 10, 1000);
  return 1 + (weight - 10) * 9999 / 990;
}

std::optional<std::string> v2_swap_max(std::optional<int64_t> limit, std::optional<int64_t> swap) {
  int64_t mem = limit.value_or(0);
  int64_t sw = swap.value_or(0);
  // Unlimited memory without a swap value means unlimited swap too (v1 parity).
  if (mem == -1 && sw == 0) return "max";
  if (sw == -1) return "max";
  if (sw == 0) return std::nullopt;
  if (mem <= 0) throw field_error("memory.swap", "a swap limit needs a positive memory.limit");
  if (sw < mem) throw field_error("memory.swap", "must be at least memory.limit (it counts memory + swap)");
  return std::to_string(sw - mem);
}

void validate_unified_key(const std::string& key) {
  auto bad = [&](const std::string& why) {
    return Error("linux.resources.unified: key \"" + key + "\" " + why);
  };
  if (key.find('/') != std::string::npos || key.find("..") != std::string::npos)
    throw bad("must name a file inside the cgroup");
  size_t dot = key.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == key.size())
    throw bad("must have the form <controller>.<file>");
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      throw bad("contains a character no cgroup file name has");
  // Membership and lifetime are the runtime's business, never a resource.
  static const std::set<std::string> reserved = {"cgroup.procs", "cgroup.threads", "cgroup.kill",
                                                 "cgroup.freeze", "cgroup.subtree_control", "cgroup.type"};
  if (reserved.count(key)) throw bad("is managed by the runtime and cannot be set");
}

std::vector<unsigned> parse_cpu_list(const std::string& list, const std::string& field) {
  std::vector<unsigned> out;
  auto bad = [&]() { return Error(field + ": invalid list \"" + list + "\" (expected e.g. \"0-3,7\")"); };
  auto num = [&](const std::string& s) -> unsigned {
    if (s.empty() || s.size() > 5 || !std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
      throw bad();
    return static_cast<unsigned>(std::stoul(s));
  };
  std::string trimmed;
  for (char c : list)
    if (!std::isspace(static_cast<unsigned char>(c))) trimmed += c;
  if (trimmed.empty()) return out;
  std::stringstream ss(trimmed);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    size_t dash = tok.find('-');
    unsigned lo = num(tok.substr(0, dash));
    unsigned hi = dash == std::string::npos ? lo : num(tok.substr(dash + 1));
    if (hi < lo) throw bad();
    for (unsigned i = lo; i <= hi; ++i) out.push_back(i);
  }
  if (!trimmed.empty() && trimmed.back() == ',') throw bad();
  return out;
}

void check_cpuset(const spec::Resources& r, const std::string& cpus_online, const std::string& mems_online) {
  if (!r.cpu) return;
  auto check = [](const std::string& field, const std::string& want, const std::string& online, const char* what) {
    if (want.empty()) return;
    auto have = parse_cpu_list(online, "online list");
    std::set<unsigned> set(have.begin(), have.end());
    for (unsigned n : parse_cpu_list(want, field))
      if (!set.count(n)) {
        std::string on = online;
        while (!on.empty() && std::isspace(static_cast<unsigned char>(on.back()))) on.pop_back();
        throw Error(field + ": " + what + " " + std::to_string(n) + " is not present on this machine (online: " + on + ")");
      }
  };
  check("linux.resources.cpu.cpus", r.cpu->cpus, cpus_online, "CPU");
  check("linux.resources.cpu.mems", r.cpu->mems, mems_online, "memory node");
}

std::vector<Write> v2_writes(const spec::Resources& r, bool bfq_weight) {
  std::vector<Write> w;
  auto put = [&](std::string file, std::string value) { w.push_back({"", std::move(file), std::move(value)}); };

  if (r.cpu) {
    const auto& c = *r.cpu;
    check_cpu_common(c);
    if (c.realtime_runtime.value_or(0) != 0 || c.realtime_period.value_or(0) != 0)
      throw field_error(c.realtime_runtime.value_or(0) ? "cpu.realtimeRuntime" : "cpu.realtimePeriod",
                        "not supported on cgroup v2");
    if (uint64_t weight = shares_to_weight(c.shares.value_or(0))) put("cpu.weight", std::to_string(weight));
    int64_t quota = c.quota.value_or(0);
    uint64_t period = c.period.value_or(0);
    if (quota != 0 || period != 0) {
      std::string v = quota > 0 ? std::to_string(quota) : "max";
      if (period != 0) v += " " + std::to_string(period);
      put("cpu.max", v);
    }
    if (c.burst) put("cpu.max.burst", std::to_string(*c.burst));
    if (c.idle) put("cpu.idle", std::to_string(*c.idle));
    if (!c.cpus.empty()) put("cpuset.cpus", c.cpus);
    if (!c.mems.empty()) put("cpuset.mems", c.mems);
  }

  if (r.memory) {
    const auto& m = *r.memory;
    check_memory_common(m);
    if (m.reservation.value_or(0) != 0) put("memory.low", v2_bytes(*m.reservation));
    if (auto swap = v2_swap_max(m.limit, m.swap)) put("memory.swap.max", *swap);
    if (m.limit.value_or(0) != 0) put("memory.max", v2_bytes(*m.limit));
  }

  // config-linux.md: 0 is a real limit (no new tasks); only negative means unlimited.
  if (r.pids_limit) put("pids.max", *r.pids_limit < 0 ? "max" : std::to_string(*r.pids_limit));

  if (r.block_io) {
    const auto& b = *r.block_io;
    check_weight("blockIO.weight", b.weight.value_or(0));
    if (b.leaf_weight.value_or(0) != 0) throw field_error("blockIO.leafWeight", "not supported on cgroup v2");
    const std::string weight_file = bfq_weight ? "io.bfq.weight" : "io.weight";
    auto conv = [&](uint16_t v) { return std::to_string(bfq_weight ? v : blkio_weight_to_io_weight(v)); };
    if (b.weight.value_or(0) != 0) put(weight_file, conv(*b.weight));
    for (size_t i = 0; i < b.weight_device.size(); ++i) {
      const auto& d = b.weight_device[i];
      std::string f = "blockIO.weightDevice[" + std::to_string(i) + "]";
      check_devnum(f, d.major, d.minor);
      check_weight(f + ".weight", d.weight.value_or(0));
      if (d.leaf_weight.value_or(0) != 0) throw field_error(f + ".leafWeight", "not supported on cgroup v2");
      if (d.weight.value_or(0) != 0) put(weight_file, devnum(d.major, d.minor) + " " + conv(*d.weight));
    }
    // v1 treats a rate of 0 as "no limit"; io.max spells that "max".
    for (const auto& t : group_throttles(b)) {
      std::string v = devnum(t.major, t.minor);
      for (const auto& [key, rate] : t.limits) v += " " + key + "=" + (rate == 0 ? "max" : std::to_string(rate));
      put("io.max", v);
    }
  }

  for (size_t i = 0; i < r.hugepage_limits.size(); ++i) {
    const auto& h = r.hugepage_limits[i];
    check_page_size("hugepageLimits[" + std::to_string(i) + "].pageSize", h.page_size);
    put("hugetlb." + h.page_size + ".max", std::to_string(h.limit));
    put("hugetlb." + h.page_size + ".rsvd.max", std::to_string(h.limit));
  }

  for (const auto& [dev, lim] : r.rdma) {
    check_rdma_dev(dev);
    if (lim.hca_handles || lim.hca_objects) put("rdma.max", rdma_value(dev, lim));
  }

  // Last, so an explicit unified value overrides the structured one.
  for (const auto& [key, value] : r.unified) {
    validate_unified_key(key);
    put(key, value);
  }
  return w;
}

namespace {

// Appends the writes of one v1 controller.
struct V1Put {
  std::vector<Write>& out;
  const char* controller;
  void operator()(std::string file, std::string value) const {
    out.push_back({controller, std::move(file), std::move(value)});
  }
};

void v1_devices(const std::vector<spec::DeviceRule>& rules, V1Put put) {
  put("devices.deny", "a");
  for (size_t i = 0; i < rules.size(); ++i)
    put(rules[i].allow ? "devices.allow" : "devices.deny",
        device_rule_v1(rules[i], "linux.resources.devices[" + std::to_string(i) + "]"));
}

void v1_cpu(const spec::Cpu& c, V1Put put, V1Put cpuset) {
  check_cpu_common(c);
  if (c.shares.value_or(0) != 0) put("cpu.shares", std::to_string(*c.shares));
  // Period before quota; the manager retries an EINVAL write after the rest.
  if (c.period.value_or(0) != 0) put("cpu.cfs_period_us", std::to_string(*c.period));
  if (c.quota.value_or(0) != 0) put("cpu.cfs_quota_us", std::to_string(*c.quota));
  if (c.burst) put("cpu.cfs_burst_us", std::to_string(*c.burst));
  if (c.realtime_period.value_or(0) != 0) put("cpu.rt_period_us", std::to_string(*c.realtime_period));
  if (c.realtime_runtime.value_or(0) != 0) put("cpu.rt_runtime_us", std::to_string(*c.realtime_runtime));
  if (c.idle) put("cpu.idle", std::to_string(*c.idle));
  if (!c.cpus.empty()) cpuset("cpuset.cpus", c.cpus);
  if (!c.mems.empty()) cpuset("cpuset.mems", c.mems);
}

void v1_memory(const spec::Memory& m, V1Put put) {
  check_memory_common(m);
  int64_t limit = m.limit.value_or(0), swap = m.swap.value_or(0);
  if (limit > 0 && swap > 0 && swap < limit)
    throw field_error("memory.swap", "must be at least memory.limit (it counts memory + swap)");
  if (m.swappiness && *m.swappiness > 100) throw field_error("memory.swappiness", "must be between 0 and 100");
  // memsw must stay >= limit at every step: the manager retries an EINVAL
  // write after the others, which covers both raising and lowering.
  if (limit != 0) put("memory.limit_in_bytes", std::to_string(limit));
  if (swap != 0) put("memory.memsw.limit_in_bytes", std::to_string(swap));
  if (m.reservation.value_or(0) != 0) put("memory.soft_limit_in_bytes", std::to_string(*m.reservation));
  if (m.kernel_tcp.value_or(0) != 0) put("memory.kmem.tcp.limit_in_bytes", std::to_string(*m.kernel_tcp));
  if (m.swappiness) put("memory.swappiness", std::to_string(*m.swappiness));
  if (m.disable_oom_killer.value_or(false)) put("memory.oom_control", "1");
  if (m.use_hierarchy) put("memory.use_hierarchy", *m.use_hierarchy ? "1" : "0");
}

void v1_blkio(const spec::BlockIo& b, V1Put put) {
  check_weight("blockIO.weight", b.weight.value_or(0));
  check_weight("blockIO.leafWeight", b.leaf_weight.value_or(0));
  if (b.weight.value_or(0) != 0) put("blkio.weight", std::to_string(*b.weight));
  if (b.leaf_weight.value_or(0) != 0) put("blkio.leaf_weight", std::to_string(*b.leaf_weight));
  for (size_t i = 0; i < b.weight_device.size(); ++i) {
    const auto& d = b.weight_device[i];
    std::string f = "blockIO.weightDevice[" + std::to_string(i) + "]";
    check_devnum(f, d.major, d.minor);
    check_weight(f + ".weight", d.weight.value_or(0));
    check_weight(f + ".leafWeight", d.leaf_weight.value_or(0));
    if (d.weight.value_or(0) != 0) put("blkio.weight_device", devnum(d.major, d.minor) + " " + std::to_string(*d.weight));
    if (d.leaf_weight.value_or(0) != 0)
      put("blkio.leaf_weight_device", devnum(d.major, d.minor) + " " + std::to_string(*d.leaf_weight));
  }
  auto throttle = [&](const std::vector<spec::ThrottleDevice>& list, const char* file, const char* field) {
    for (size_t i = 0; i < list.size(); ++i) {
      check_devnum(std::string("blockIO.") + field + "[" + std::to_string(i) + "]", list[i].major, list[i].minor);
      put(file, devnum(list[i].major, list[i].minor) + " " + std::to_string(list[i].rate));
    }
  };
  throttle(b.throttle_read_bps, "blkio.throttle.read_bps_device", "throttleReadBpsDevice");
  throttle(b.throttle_write_bps, "blkio.throttle.write_bps_device", "throttleWriteBpsDevice");
  throttle(b.throttle_read_iops, "blkio.throttle.read_iops_device", "throttleReadIOPSDevice");
  throttle(b.throttle_write_iops, "blkio.throttle.write_iops_device", "throttleWriteIOPSDevice");
}

void v1_network(const spec::Network& n, V1Put cls, V1Put prio) {
  if (n.class_id) cls("net_cls.classid", std::to_string(*n.class_id));
  for (size_t i = 0; i < n.priorities.size(); ++i) {
    const auto& p = n.priorities[i];
    if (p.name.empty() || p.name.find_first_of(" \t\n") != std::string::npos)
      throw field_error("network.priorities[" + std::to_string(i) + "].name", "must be an interface name");
    prio("net_prio.ifpriomap", p.name + " " + std::to_string(p.priority));
  }
}

}  // namespace

std::vector<Write> v1_writes(const spec::Resources& r) {
  if (!r.unified.empty())
    throw Error("linux.resources.unified: requires cgroup v2 (this host uses cgroup v1 controllers)");
  std::vector<Write> w;
  if (!r.devices.empty()) v1_devices(r.devices, {w, "devices"});
  if (r.cpu) v1_cpu(*r.cpu, {w, "cpu"}, {w, "cpuset"});
  if (r.memory) v1_memory(*r.memory, {w, "memory"});
  if (r.pids_limit) w.push_back({"pids", "pids.max", *r.pids_limit < 0 ? "max" : std::to_string(*r.pids_limit)});
  if (r.block_io) v1_blkio(*r.block_io, {w, "blkio"});
  for (size_t i = 0; i < r.hugepage_limits.size(); ++i) {
    const auto& h = r.hugepage_limits[i];
    check_page_size("hugepageLimits[" + std::to_string(i) + "].pageSize", h.page_size);
    w.push_back({"hugetlb", "hugetlb." + h.page_size + ".limit_in_bytes", std::to_string(h.limit)});
    w.push_back({"hugetlb", "hugetlb." + h.page_size + ".rsvd.limit_in_bytes", std::to_string(h.limit)});
  }
  if (r.network) v1_network(*r.network, {w, "net_cls"}, {w, "net_prio"});
  for (const auto& [dev, lim] : r.rdma) {
    check_rdma_dev(dev);
    if (lim.hca_handles || lim.hca_objects) w.push_back({"rdma", "rdma.max", rdma_value(dev, lim)});
  }
  return w;
}

__extension__ typedef unsigned __int128 u128;

uint64_t rt_share(int64_t runtime, uint64_t period) {
  if (runtime < 0 || period == 0) return uint64_t{1} << kRtShift;
  // 128 bits: the kernel takes runtimes up to 2^44 us, which << 20 overflows.
  return static_cast<uint64_t>((static_cast<u128>(runtime) << kRtShift) / period);
}

std::vector<std::pair<std::string, int64_t>> plan_rt_budget(const std::vector<RtAncestor>& chain, int64_t runtime,
                                                            uint64_t period) {
  std::vector<std::pair<std::string, int64_t>> raises;  // bottom-up
  if (static_cast<uint64_t>(runtime) > period)
    throw field_error("cpu.realtimeRuntime", std::to_string(runtime) + " us is more than the period of " +
                                                 std::to_string(period) + " us");
  uint64_t need = rt_share(runtime, period);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    uint64_t total = it->others + need;
    if (total <= rt_share(it->runtime, it->period)) {
      std::reverse(raises.begin(), raises.end());
      return raises;
    }
    // The smallest runtime whose share covers `total`.
    auto wanted = static_cast<uint64_t>(
        (static_cast<u128>(total) * it->period + (uint64_t{1} << kRtShift) - 1) >> kRtShift);
    if (!it->raisable || wanted > it->period) {
      std::string where = it->path.empty() ? "the root cgroup" : "cgroup " + it->path;
      throw field_error("cpu.realtimeRuntime",
                        std::to_string(runtime) + " us per " + std::to_string(period) +
                            " us does not fit in the realtime budget of " + where + " (cpu.rt_runtime_us " +
                            std::to_string(it->runtime) + " per " + std::to_string(it->period) +
                            " us, part of it given to other cgroups); give it a larger cpu.rt_runtime_us");
    }
    raises.emplace_back(it->path, static_cast<int64_t>(wanted));
    need = rt_share(static_cast<int64_t>(wanted), it->period);
  }
  throw field_error("cpu.realtimeRuntime", "no cgroup above the container has a realtime budget");
}

std::string resolve_path(const std::optional<std::string>& cgroups_path, const std::string& id) {
  if (!cgroups_path || cgroups_path->empty()) return std::string(kDefaultParent) + "/" + id;
  const std::string& p = *cgroups_path;
  std::string out = p[0] == '/' ? "" : kDefaultParent;
  std::stringstream ss(p);
  std::string part;
  bool any = false;
  while (std::getline(ss, part, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") throw Error("linux.cgroupsPath: \"" + p + "\" must not contain \"..\"");
    out += "/" + part;
    any = true;
  }
  if (!any) throw Error("linux.cgroupsPath: \"" + p + "\" names the root cgroup");
  return out;
}

}  // namespace husk::cgroups
