// pause, resume, ps, update, events: the commands that act on a running
// container through its cgroup.
#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/dir.h"
#include "base/error.h"
#include "base/fd.h"
#include "cgroups/cgroups.h"
#include "container/args.h"
#include "container/commands.h"
#include "container/state.h"

namespace husk::rt {

using base::Fd;
namespace {
using json = nlohmann::json;

struct Loaded {
  Handle handle;
  Record rec;
  Status status;
  std::unique_ptr<cgroups::Manager> cg;
};

Loaded load(const Context& g, const std::string& id, bool lock = true) {
  Handle h = Handle::open(Store(g.root), id, lock);
  Record rec = h.load();
  const Status st = live_status(rec);
  auto cg = open_cgroup(rec);
  if (!cg) throw Error("container " + quote(id) + " has no cgroup");
  return {std::move(h), std::move(rec), st, std::move(cg)};
}

int64_t parse_int(const std::string& flag, const std::string& v) {
  try {
    size_t used;
    long long n = std::stoll(v, &used);
    if (used == v.size()) return n;
  } catch (const std::exception&) {
  }
  throw Error("--" + flag + ": invalid number \"" + v + "\"");
}

// Go-style durations: "5s", "100ms", "1m", "1m30s".
int interval_ms(const std::string& d) {
  double total = 0;
  size_t i = 0;
  while (i < d.size()) {
    size_t j = i;
    while (j < d.size() && (isdigit(static_cast<unsigned char>(d[j])) || d[j] == '.')) ++j;
    if (j == i) throw Error("--interval: invalid duration \"" + d + "\"");
    double n = std::stod(d.substr(i, j - i));
    size_t k = j;
    while (k < d.size() && isalpha(static_cast<unsigned char>(d[k]))) ++k;
    std::string unit = d.substr(j, k - j);
    double ms = unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : unit == "h" ? 3600000 : -1;
    if (ms < 0) throw Error("--interval: invalid duration \"" + d + "\"");
    total += n * ms;
    i = k;
  }
  if (total <= 0) throw Error("--interval: must be positive");
  return static_cast<int>(total);
}

json stats_json(const cgroups::Stats& s) {
  auto io = [](const std::vector<cgroups::Stats::IoEntry>& v) {
    json a = json::array();
    for (const auto& e : v) a.push_back({{"major", e.major}, {"minor", e.minor}, {"op", e.op}, {"value", e.value}});
    return a;
  };
  json hugetlb = json::object();
  for (const auto& [size, h] : s.hugetlb)
    hugetlb[size] = {{"usage", h.usage}, {"max", h.max_usage}, {"failcnt", h.failcnt}};
  return {
      {"cpu",
       {{"usage", {{"total", s.cpu_usage_ns}, {"kernel", s.cpu_system_ns}, {"user", s.cpu_user_ns}}},
        {"throttling", {{"throttledPeriods", s.cpu_throttled_periods}, {"throttledTime", s.cpu_throttled_time_ns}}}}},
      {"memory",
       {{"usage", {{"limit", s.memory_limit}, {"usage", s.memory_usage}, {"max", s.memory_max_usage},
                   {"failcnt", s.memory_failcnt}}},
        {"swap", {{"limit", s.swap_limit}, {"usage", s.swap_usage}}},
        {"raw", s.memory_raw}}},
      {"pids", {{"current", s.pids_current}, {"limit", s.pids_limit}}},
      {"blkio", {{"ioServiceBytesRecursive", io(s.io_service_bytes)}, {"ioServicedRecursive", io(s.io_serviced)}}},
      {"hugetlb", hugetlb},
  };
}

}  // namespace

int cmd_pause(const Context& g, const std::string& id) {
  Loaded c = load(g, id);
  require(Verb::pause, c.status, id);
  c.cg->freeze();
  return 0;
}

int cmd_resume(const Context& g, const std::string& id) {
  Loaded c = load(g, id);
  require(Verb::resume, c.status, id);
  c.cg->thaw();
  return 0;
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// A container without a cgroup (rootless): the processes in its init's pid
// namespace, processes exec'd into it included. Without a pid namespace of
// its own they cannot be told from the caller's.
std::vector<pid_t> pid_namespace_members(const Record& rec) {
  Fd init = open_init(rec);  // pins the init while its namespace is compared
  if (!init) return {};
  const std::string init_ns = "/proc/" + std::to_string(rec.oci.pid) + "/ns/pid";
  struct stat ns, own;
  if (::stat(init_ns.c_str(), &ns) != 0) throw sys_error("stat " + init_ns);
  if (::stat("/proc/self/ns/pid", &own) != 0) throw sys_error("stat /proc/self/ns/pid");
  if (same_file(ns, own))
    throw Error("ps: container " + quote(rec.oci.id) + " has no cgroup (" + rec.no_cgroup +
                ") and no pid namespace of its own: its processes cannot be told from others");
  base::Dir proc(::opendir("/proc"));
  if (!proc) throw sys_error("read /proc");
  std::vector<pid_t> out;
  while (dirent* e = ::readdir(proc.get())) {
    char* end;
    long pid = std::strtol(e->d_name, &end, 10);
    struct stat other;
    // Another user's processes cannot be stat'ed there: not ours either.
    if (*end || pid <= 0) continue;
    if (::stat(("/proc/" + std::string(e->d_name) + "/ns/pid").c_str(), &other) == 0 && same_file(other, ns))
      out.push_back(static_cast<pid_t>(pid));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<pid_t> container_pids(const Context& g, const std::string& id) {
  Loaded c = load(g, id, false);
  if (c.status == Status::stopped) return {};
  return c.rec.no_cgroup.empty() ? c.cg->pids() : pid_namespace_members(c.rec);
}

int cmd_update(const Context& g, const UpdateOptions& o) {
  spec::Resources r;
  if (!o.resources_file.empty()) {
    std::string text;
    if (o.resources_file == "-") {
      char chunk[65536];
      while (std::cin.read(chunk, sizeof chunk) || std::cin.gcount() > 0) {
        text.append(chunk, static_cast<size_t>(std::cin.gcount()));
        if (text.size() > spec::kMaxJsonSize) throw Error("--resources -: more than 64 MiB on stdin");
      }
    } else {
      text = spec::read_json_file(o.resources_file);
    }
    try {
      r = spec::parse_resources(text);
    } catch (const Error& e) {
      rethrow_with("--resources", e);
    }
  }
  auto mem = [&]() -> spec::Memory& {
    if (!r.memory) r.memory.emplace();
    return *r.memory;
  };
  auto cpu = [&]() -> spec::Cpu& {
    if (!r.cpu) r.cpu.emplace();
    return *r.cpu;
  };
  if (!o.memory.empty()) mem().limit = parse_bytes("memory", o.memory);
  if (!o.memory_reservation.empty()) mem().reservation = parse_bytes("memory-reservation", o.memory_reservation);
  if (!o.memory_swap.empty()) mem().swap = parse_bytes("memory-swap", o.memory_swap);
  if (!o.kernel_memory.empty()) mem().kernel = parse_bytes("kernel-memory", o.kernel_memory);
  if (!o.pids_limit.empty()) r.pids_limit = parse_int("pids-limit", o.pids_limit);
  if (!o.cpu_quota.empty()) cpu().quota = parse_int("cpu-quota", o.cpu_quota);
  if (!o.cpu_period.empty()) cpu().period = static_cast<uint64_t>(parse_int("cpu-period", o.cpu_period));
  if (!o.cpu_share.empty()) cpu().shares = static_cast<uint64_t>(parse_int("cpu-share", o.cpu_share));
  if (!o.cpu_rt_period.empty()) cpu().realtime_period = static_cast<uint64_t>(parse_int("cpu-rt-period", o.cpu_rt_period));
  if (!o.cpu_rt_runtime.empty()) cpu().realtime_runtime = parse_int("cpu-rt-runtime", o.cpu_rt_runtime);
  if (!o.cpuset_cpus.empty()) cpu().cpus = o.cpuset_cpus;
  if (!o.cpuset_mems.empty()) cpu().mems = o.cpuset_mems;
  if (!o.blkio_weight.empty()) {
    if (!r.block_io) r.block_io.emplace();
    r.block_io->weight = static_cast<uint16_t>(parse_int("blkio-weight", o.blkio_weight));
  }
  spec::validate_resources(r);
  cgroups::check_host(r);

  Loaded c = load(g, o.id);
  require(Verb::update, c.status, o.id);
  c.cg->apply(r);
  return 0;
}

void watch_events(const Context& g, const std::string& id, bool stats_once, const std::string& interval,
                  const std::function<void(const std::string&)>& emit) {
  const int every = interval_ms(interval);
  const int tick = std::min(every, 200);  // how quickly an OOM kill is reported
  uint64_t ooms_seen = 0;
  for (int elapsed = 0;; elapsed += tick) {
    {
      Loaded c = load(g, id, false);
      if (c.status == Status::stopped) {
        if (stats_once) throw Error("container not running");
        // An OOM kill that ended the container since the last tick is still
        // reported (a cgroup deleted meanwhile reads as 0 kills).
        if (elapsed > 0 && c.cg->oom_kills() > ooms_seen)
          emit(json{{"type", "oom"}, {"id", id}}.dump());
        return;
      }
      if (stats_once) {
        emit(json{{"type", "stats"}, {"id", id}, {"data", stats_json(c.cg->stats())}}.dump());
        return;
      }
      uint64_t ooms = c.cg->oom_kills();
      if (elapsed > 0 && ooms > ooms_seen) emit(json{{"type", "oom"}, {"id", id}}.dump());
      ooms_seen = ooms;
      if (elapsed > 0 && elapsed % every < tick)
        emit(json{{"type", "stats"}, {"id", id}, {"data", stats_json(c.cg->stats())}}.dump());
    }
    ::usleep(static_cast<useconds_t>(tick) * 1000);
  }
}

}  // namespace husk::rt
