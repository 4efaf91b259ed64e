// The cgroup v2 (unified) manager, and the cgroup2 directory it shares with
// the hybrid manager.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <climits>
#include <sstream>

#include "base/fd.h"
#include "base/file.h"
#include "cgroups/cgroups.h"
#include "cgroups/internal.h"

namespace husk::cgroups {

std::set<std::string> V2Dir::controllers(const std::string& d) const {
  std::set<std::string> out;
  if (auto s = base::try_read_file(d + "/cgroup.controllers")) {
    std::istringstream in(*s);
    for (std::string c; in >> c;) out.insert(c);
  }
  return out;
}

void V2Dir::enable(const std::set<std::string>& wanted, bool best_effort) const {
  auto parts = prefixes(path);
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string cur = root + (i == 0 ? "" : parts[i - 1]);
    auto avail = controllers(cur);
    auto enabled = base::try_read_file(cur + "/cgroup.subtree_control").value_or("");
    std::set<std::string> on;
    std::istringstream in(enabled);
    for (std::string c; in >> c;) on.insert(c);
    for (const auto& c : wanted) {
      if (!avail.count(c) || on.count(c)) continue;
      int err = write_raw(cur + "/cgroup.subtree_control", "+" + c);
      if (err && !best_effort)
        throw sys_error("enable the " + c + " controller in " + cur + "/cgroup.subtree_control", err);
    }
  }
}

void V2Dir::add(pid_t pid) const { write_file(dir() + "/cgroup.procs", std::to_string(pid)); }

void V2Dir::freeze() const {
  write_file(dir() + "/cgroup.freeze", "1");
  for (int i = 0; i < 1000; ++i) {
    if (frozen()) return;
    sleep_ms(i < 100 ? 1 : 10);
  }
  write_raw(dir() + "/cgroup.freeze", "0");
  throw Error("freeze " + dir() + ": timed out waiting for cgroup.events to say frozen");
}

void V2Dir::thaw() const {
  write_file(dir() + "/cgroup.freeze", "0");
  for (int i = 0; i < 1000 && frozen(); ++i) sleep_ms(1);
}

bool V2Dir::frozen() const { return read_kv(dir() + "/cgroup.events")["frozen"] == 1; }

void V2Dir::hugetlb_stats(Stats& s) const {
  for (const auto& size : hugepage_sizes()) {
    std::string base = dir() + "/hugetlb." + size;
    if (!file_exists(base + ".current")) continue;
    s.hugetlb[size] = {read_u64(base + ".current"), 0, read_kv(base + ".events")["max"]};
  }
}

namespace {

// io.stat: "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0" per device
// (iocost adds keys with other values: only those used are parsed).
void io_stats(const std::string& file, Stats& s) {
  auto io = base::try_read_file(file);
  if (!io) return;
  std::istringstream in(*io);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ls(line);
    std::string dev, kv;
    ls >> dev;
    int64_t maj = 0, min = 0;
    if (std::sscanf(dev.c_str(), "%ld:%ld", &maj, &min) != 2) continue;
    while (ls >> kv) {
      auto eq = kv.find('=');
      if (eq == std::string::npos) continue;
      std::string k = kv.substr(0, eq);
      auto* list = k == "rbytes" || k == "wbytes" ? &s.io_service_bytes
                   : k == "rios" || k == "wios"   ? &s.io_serviced
                                                  : nullptr;
      if (list) list->push_back({maj, min, k[0] == 'r' ? "Read" : "Write", parse_u64(kv.substr(eq + 1), file)});
    }
  }
}

class UnifiedManager : public Manager {
 public:
  UnifiedManager(const Config& c, const Hierarchies& h)
      : cg_{h.unified, c.path}, created_(c.created), mark_(c), rootless_(c.rootless), debug_(c.debug) {}

  const std::string& path() const override { return cg_.path; }

  std::string prepare() override {
    created_.clear();
    MadeDirs made(mark_);
    // Ancestors get the controllers in subtree_control; the leaf enables
    // nothing, since it holds the tasks (no-internal-process rule).
    // Rootless: above the delegated subtree the writes fail; the controllers
    // missing then fail apply() naming the field that needs one.
    std::vector<std::string> created;
    for (const auto& p : prefixes(cg_.path))
      if (made.make(cg_.root + p)) created.push_back(p);
    cg_.enable({"cpu", "memory", "pids", "io", "cpuset", "hugetlb", "rdma", "misc"}, rootless_);
    made.keep();
    created_ = std::move(created);
    return cg_.path;
  }

  void apply(const spec::Resources& res) override {
    const std::string d = cg_.dir();
    if (rootless_) check_delegated(res, cg_.controllers(d), cg_.path);
    check_usage(res, d + "/memory.current");
    // cpu.max holds quota and period together: a new period alone (`update
    // --cpu-period`) keeps the quota in force, as on v1 and in runc.
    spec::Resources r = res;
    keep_quota(r, d + "/cpu.max");
    std::vector<std::pair<std::string, std::string>> writes;
    for (const auto& w : v2_writes(r, file_exists(d + "/io.bfq.weight")))
      writes.emplace_back(d + "/" + w.file, w.value);
    apply_writes(writes);
    if (!r.devices.empty() && rootless_) {
      // runc and crun ignore the failure; husk does not try.
      if (debug_)
        debug_("cgroup " + cg_.path + ": no device program (an unprivileged user cannot load "
               "BPF_PROG_TYPE_CGROUP_DEVICE): the host's device node permissions apply");
    } else if (!r.devices.empty()) {
      base::Fd fd(::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!fd) throw sys_error("open " + d);
      attach_device_filter(fd.get(), d, r.devices);
    }
  }

  int clone_into_fd() override {
    int fd = ::open(cg_.dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw sys_error("open " + cg_.dir());
    return fd;
  }

  void attach(pid_t pid, bool cloned_into) override {
    if (!cloned_into) cg_.add(pid);
  }
  // No cheaper way on v2: cgroup.threads moves threads within a domain only.
  void attach_self(bool cloned_into) override { attach(0, cloned_into); }
  void freeze() override { cg_.freeze(); }
  void thaw() override { cg_.thaw(); }
  bool frozen() override { return cg_.frozen(); }

  std::vector<pid_t> pids() override {
    std::vector<pid_t> out;
    collect_pids(cg_.dir(), out);
    return out;
  }

  void kill_all(int sig) override { kill_members(*this, sig, cg_.dir() + "/cgroup.kill", true); }

  void destroy() override { remove_created(cg_.root, cg_.path, created_, mark_); }

  Stats stats() override {
    Stats s;
    const std::string d = cg_.dir();
    auto cpu = read_kv(d + "/cpu.stat");
    s.cpu_usage_ns = cpu["usage_usec"] * 1000;
    s.cpu_user_ns = cpu["user_usec"] * 1000;
    s.cpu_system_ns = cpu["system_usec"] * 1000;
    s.cpu_throttled_periods = cpu["nr_throttled"];
    s.cpu_throttled_time_ns = cpu["throttled_usec"] * 1000;
    s.memory_usage = read_u64(d + "/memory.current");
    s.memory_limit = file_exists(d + "/memory.max") ? read_u64(d + "/memory.max") : 0;
    s.memory_max_usage = read_u64(d + "/memory.peak");
    s.swap_usage = read_u64(d + "/memory.swap.current");
    s.swap_limit = file_exists(d + "/memory.swap.max") ? read_u64(d + "/memory.swap.max") : 0;
    s.memory_raw = read_kv(d + "/memory.stat");
    auto events = read_kv(d + "/memory.events");
    s.memory_failcnt = events["max"];
    s.oom_kill = events["oom_kill"];
    s.pids_current = read_u64(d + "/pids.current");
    uint64_t pmax = read_u64(d + "/pids.max");
    s.pids_limit = pmax == UINT64_MAX ? 0 : pmax;
    io_stats(d + "/io.stat", s);
    cg_.hugetlb_stats(s);
    return s;
  }

  uint64_t oom_kills() override { return read_kv(cg_.dir() + "/memory.events")["oom_kill"]; }

  std::vector<std::string> created() const override { return created_; }
  bool owned() const override { return mark_.on(cg_.dir()); }

 private:
  V2Dir cg_;
  std::vector<std::string> created_;
  Mark mark_;
  bool rootless_;
  std::function<void(const std::string&)> debug_;
};

}  // namespace

void keep_quota(spec::Resources& r, const std::string& cpu_max) {
  if (!r.cpu || r.cpu->period.value_or(0) == 0 || r.cpu->quota.value_or(0) != 0) return;
  if (auto cur = base::try_read_file(cpu_max); cur && cur->rfind("max", 0) != 0)
    r.cpu->quota = parse_i64(cur->substr(0, cur->find(' ')), cpu_max);
}

std::unique_ptr<Manager> make_unified(const Config& c, const Hierarchies& h) {
  return std::make_unique<UnifiedManager>(c, h);
}

}  // namespace husk::cgroups
