// Rootless cgroups, pure: which limits a request makes, which v2 controllers
// they need, and where a rootless container's cgroup goes.
#include <algorithm>

#include "base/path.h"
#include "cgroups/internal.h"
#include "cgroups/rootless.h"

namespace husk::cgroups {

namespace {

constexpr const char* kRes = "linux.resources.";

void memory_fields(const spec::Memory& m, std::vector<std::string>& out) {
  auto put = [&](bool on, const char* f) {
    if (on) out.push_back(std::string(kRes) + "memory." + f);
  };
  put(m.limit.value_or(0) != 0, "limit");
  put(m.reservation.value_or(0) != 0, "reservation");
  put(m.swap.value_or(0) != 0, "swap");
  put(m.kernel_tcp.value_or(0) != 0, "kernelTCP");
  put(m.swappiness.has_value(), "swappiness");
  put(m.disable_oom_killer.value_or(false), "disableOOMKiller");
}

void cpu_fields(const spec::Cpu& c, std::vector<std::string>& out) {
  auto put = [&](bool on, const char* f) {
    if (on) out.push_back(std::string(kRes) + "cpu." + f);
  };
  put(c.shares.value_or(0) != 0, "shares");
  put(c.quota.value_or(0) != 0, "quota");
  put(c.burst.has_value(), "burst");
  put(c.period.value_or(0) != 0, "period");
  put(c.realtime_runtime.value_or(0) != 0, "realtimeRuntime");
  put(c.realtime_period.value_or(0) != 0, "realtimePeriod");
  put(!c.cpus.empty(), "cpus");
  put(!c.mems.empty(), "mems");
  put(c.idle.has_value(), "idle");
}

bool block_io_set(const spec::BlockIo& b) {
  return b.weight.value_or(0) != 0 || b.leaf_weight.value_or(0) != 0 || !b.weight_device.empty() ||
         !b.throttle_read_bps.empty() || !b.throttle_write_bps.empty() || !b.throttle_read_iops.empty() ||
         !b.throttle_write_iops.empty();
}

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

std::string common_ancestor(const std::string& a, const std::string& b) {
  std::string c = a;
  while (!base::is_within(b, c)) c = parent_of(c);
  return c;
}

}  // namespace

std::vector<std::string> limit_fields(const spec::Resources& r) {
  std::vector<std::string> out;
  if (r.memory) memory_fields(*r.memory, out);
  if (r.cpu) cpu_fields(*r.cpu, out);
  if (r.pids_limit) out.push_back(std::string(kRes) + "pids.limit");
  if (r.block_io && block_io_set(*r.block_io)) out.push_back(std::string(kRes) + "blockIO");
  if (!r.hugepage_limits.empty()) out.push_back(std::string(kRes) + "hugepageLimits");
  if (r.network && (r.network->class_id || !r.network->priorities.empty()))
    out.push_back(std::string(kRes) + "network");
  if (!r.rdma.empty()) out.push_back(std::string(kRes) + "rdma");
  for (const auto& [key, value] : r.unified) out.push_back(std::string(kRes) + "unified[\"" + key + "\"]");
  return out;
}

std::vector<std::pair<std::string, std::string>> v2_controllers(const spec::Resources& r) {
  std::vector<std::pair<std::string, std::string>> out;
  // One group at a time through v2_writes, so what counts as set is its rule.
  auto group = [&](const std::string& field, const auto& take) {
    spec::Resources one;
    take(one);
    for (const auto& w : v2_writes(one)) {
      std::pair<std::string, std::string> need{kRes + field, w.file.substr(0, w.file.find('.'))};
      if (need.second != "cgroup" && std::find(out.begin(), out.end(), need) == out.end()) out.push_back(need);
    }
  };
  group("cpu", [&](spec::Resources& o) { o.cpu = r.cpu; });
  group("memory", [&](spec::Resources& o) { o.memory = r.memory; });
  group("pids.limit", [&](spec::Resources& o) { o.pids_limit = r.pids_limit; });
  group("blockIO", [&](spec::Resources& o) { o.block_io = r.block_io; });
  group("hugepageLimits", [&](spec::Resources& o) { o.hugepage_limits = r.hugepage_limits; });
  group("rdma", [&](spec::Resources& o) { o.rdma = r.rdma; });
  for (const auto& entry : r.unified)
    group("unified[\"" + entry.first + "\"]", [&](spec::Resources& o) { o.unified = {entry}; });
  return out;
}

void check_delegated(const spec::Resources& r, const std::set<std::string>& available, const std::string& cgroup) {
  for (const auto& [field, ctl] : v2_controllers(r)) {
    if (available.count(ctl)) continue;
    std::string have;
    for (const auto& c : available) have += (have.empty() ? "" : " ") + c;
    throw Error(field + ": needs the " + ctl + " controller, which cgroup " + cgroup +
                " does not have (its cgroup.controllers: " + (have.empty() ? "none" : have) +
                "): it is not delegated to this user, or not enabled in the subtree_control of each ancestor");
  }
}

RootlessChoice choose_rootless(const RootlessHost& host, const std::optional<std::string>& cgroups_path,
                               const std::string& id) {
  const bool given = cgroups_path && !cgroups_path->empty();
  auto refuse = [&](const std::string& why) -> RootlessChoice {
    if (given) throw Error("linux.cgroupsPath: " + why);
    return {"", why};
  };
  if (host.mode != Mode::unified)
    return refuse(std::string("the host has cgroup v1 (") + (host.mode == Mode::hybrid ? "hybrid" : "legacy") +
                  " mode); rootless husk uses only a cgroup v2 subtree delegated to the user");
  if (host.own.empty() || host.own[0] != '/')
    return refuse("husk's own cgroup v2 path is unknown (no \"0::\" line in /proc/self/cgroup)");
  std::string leaf;
  if (given && (*cgroups_path)[0] == '/') {
    leaf = resolve_path(*cgroups_path, id);
  } else {
    if (host.own == "/") return refuse("husk runs in the root cgroup: there is no parent to put the container in");
    // resolve_path normalises (and refuses "..") an absolute path: the
    // relative one is made absolute for it, then put under the parent.
    std::string rel = resolve_path("/" + (given ? *cgroups_path : id), id);
    std::string parent = parent_of(host.own);
    leaf = (parent == "/" ? "" : parent) + rel;
  }
  if (base::is_within(host.own, leaf)) return refuse("cgroup " + leaf + " holds husk's own process (its cgroup is " + host.own + ")");
  if (base::is_within(leaf, host.own))
    return refuse("cgroup " + leaf + " is below husk's own cgroup " + host.own +
                  ", which holds processes, so no controller can be enabled for it");
  const std::string uid = std::to_string(host.uid);
  // The deepest directory there: the rest is made in it (or it is the leaf).
  auto parts = prefixes(leaf);
  std::string deepest = "/";
  for (auto it = parts.rbegin(); it != parts.rend(); ++it)
    if (host.access(*it) != Access::missing) {
      deepest = *it;
      break;
    }
  if (host.access(deepest) != Access::writable)
    return refuse("cgroup " + deepest + " is not writable by uid " + uid + " (not delegated to it)");
  const std::string common = common_ancestor(host.own, leaf);
  if (host.access(common) != Access::writable)
    return refuse("moving the container from husk's cgroup " + host.own + " to " + leaf +
                  " needs write access to cgroup.procs of their common ancestor " + common + ", which uid " + uid +
                  " lacks (not delegated to it)");
  return {leaf, ""};
}

}  // namespace husk::cgroups
