// The cgroup v1 manager: one directory per v1 hierarchy, plus the cgroup2
// hierarchy on hybrid hosts for the controllers only it has.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <sstream>

#include "base/dir.h"
#include "base/fd.h"
#include "base/file.h"
#include "base/path.h"
#include "cgroups/cgroups.h"
#include "cgroups/internal.h"

namespace husk::cgroups {

namespace {

// The v2 controller that does the job of a v1 one, for hybrid fallbacks.
std::string v2_equivalent(const std::string& v1) {
  if (v1 == "hugetlb" || v1 == "pids" || v1 == "rdma" || v1 == "misc") return v1;
  return "";
}

// A cgroup's realtime budget: cpu.rt_runtime_us (-1: unlimited) and cpu.rt_period_us.
std::pair<int64_t, uint64_t> read_rt(const std::string& dir) {
  const std::string runtime = dir + "/cpu.rt_runtime_us", period = dir + "/cpu.rt_period_us";
  return {parse_i64(base::read_file(runtime), runtime), parse_u64(base::read_file(period), period)};
}

// The realtime shares the children of `dir` other than `next` hold.
uint64_t siblings_share(const std::string& dir, const std::string& next) {
  base::Dir d(opendir(dir.c_str()));
  if (!d) throw sys_error("open " + dir);
  uint64_t total = 0;
  while (dirent* e = readdir(d.get())) {
    std::string child = dir + "/" + e->d_name;
    if (e->d_type != DT_DIR || e->d_name[0] == '.' || child == next) continue;
    // A sibling removed meanwhile holds no budget.
    const std::string rf = child + "/cpu.rt_runtime_us", pf = child + "/cpu.rt_period_us";
    auto runtime = base::try_read_file(rf), period = base::try_read_file(pf);
    if (runtime && period) total += rt_share(parse_i64(*runtime, rf), parse_u64(*period, pf));
  }
  return total;
}

// "8:0 Read 4096" lines; the "Total" line has no device.
void blkio_stat(const std::string& file, std::vector<Stats::IoEntry>& out) {
  auto s = base::try_read_file(file);
  if (!s) return;
  std::istringstream in(*s);
  for (std::string line; std::getline(in, line);) {
    char op[32];
    int64_t maj, min;
    unsigned long long v;
    if (std::sscanf(line.c_str(), "%ld:%ld %31s %llu", &maj, &min, op, &v) == 4) out.push_back({maj, min, op, v});
  }
}

class LegacyManager : public Manager {
 public:
  LegacyManager(const Config& c, const Hierarchies& h)
      : path_(c.path), mounts_(h.v1), created_(c.created), mark_(c) {
    if (h.mode == Mode::hybrid) unified_ = V2Dir{h.unified, path_};
    for (const auto& [ctl, m] : mounts_) roots_.insert(m);
  }

  const std::string& path() const override { return path_; }

  std::string prepare() override {
    created_.clear();
    MadeDirs made(mark_);
    std::vector<std::string> created;
    for (const auto& p : prefixes(path_)) {
      bool any_made = false, existed = false;
      for (const auto& root : all_roots()) {
        if (made.make(root + p)) any_made = true;
        else existed = true;
      }
      // Ours only when no hierarchy had it: a host cgroup that lacks one
      // controller is still someone else's, never to be emptied or removed.
      if (any_made && !existed) created.push_back(p);
      // A new v1 cpuset starts with no CPUs or nodes and refuses tasks: inherit.
      if (auto cs = mount("cpuset")) {
        std::string d = *cs + p, parent = d.substr(0, d.rfind('/'));
        for (const char* f : {"cpuset.cpus", "cpuset.mems"})
          if (trim(base::read_file(d + "/" + f)).empty())
            write_file(d + "/" + f, trim(base::read_file(parent + "/" + f)));
      }
    }
    made.keep();
    created_ = std::move(created);
    return path_;
  }

  void apply(const spec::Resources& r) override {
    if (auto mem = mount("memory")) check_usage(r, *mem + path_ + "/memory.usage_in_bytes");
    // Held until the container's own rt write: concurrent creates under
    // /husk would otherwise plan from the same tree and overbook it.
    base::Fd rt_lock;
    if (r.cpu && r.cpu->realtime_runtime.value_or(0) > 0)
      if (auto cpu = mount("cpu")) rt_lock = make_rt_room(*cpu, *r.cpu);
    std::vector<std::pair<std::string, std::string>> writes;
    std::set<std::string> fallback;
    for (const auto& w : v1_writes(r)) {
      if (auto m = mount(w.controller)) {
        std::string file = *m + path_ + "/" + w.file;
        // Without CFQ only BFQ has weights; they take the same values (as runc).
        if (w.file == "blkio.weight" || w.file == "blkio.weight_device") {
          std::string bfq = *m + path_ + "/blkio.bfq." + w.file.substr(6);
          if (!file_exists(file) && file_exists(bfq)) file = bfq;
        }
        writes.emplace_back(file, w.value);
        continue;
      }
      std::string v2 = v2_equivalent(w.controller);
      if (unified_ && !v2.empty() && unified_->controllers(unified_->root).count(v2)) {
        fallback.insert(v2);
        continue;
      }
      throw Error("linux.resources: cannot set " + w.file + ": the " + w.controller +
                  " cgroup controller is not available on this host");
    }
    apply_writes(writes);
    if (!fallback.empty()) apply_unified(r, fallback);
  }

  int clone_into_fd() override {
    if (!unified_) return -1;
    int fd = ::open(unified_->dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno != ENOENT) throw sys_error("open " + unified_->dir());
    return fd;
  }

  void attach(pid_t pid, bool cloned_into) override { move(pid, "cgroup.procs", cloned_into); }

  // "0" in `tasks` moves the writing thread, the whole process when it has
  // one; the kernel then skips the host-wide lock a cgroup.procs write takes.
  void attach_self(bool cloned_into) override { move(0, "tasks", cloned_into); }

  void freeze() override {
    auto f = mount("freezer");
    if (!f) {
      if (unified_) return unified_->freeze();
      throw Error("freeze " + path_ + ": the freezer cgroup controller is not mounted");
    }
    const std::string state = *f + path_ + "/freezer.state";
    for (int i = 0; i < 1000; ++i) {
      // A write can leave it FREEZING when a task is busy; writing again retries.
      if (i % 50 == 0) write_file(state, "FROZEN");
      if (trim(base::read_file(state)) == "FROZEN") return;
      sleep_ms(i < 100 ? 1 : 10);
    }
    write_raw(state, "THAWED");
    throw Error("freeze " + *f + path_ + ": timed out in FREEZING");
  }

  void thaw() override {
    auto f = mount("freezer");
    if (!f) {
      if (unified_) return unified_->thaw();
      throw Error("thaw " + path_ + ": the freezer cgroup controller is not mounted");
    }
    write_file(*f + path_ + "/freezer.state", "THAWED");
  }

  bool frozen() override {
    auto f = mount("freezer");
    if (!f) return unified_ && unified_->frozen();
    return trim(base::try_read_file(*f + path_ + "/freezer.state").value_or("")) == "FROZEN";
  }

  std::vector<pid_t> pids() override {
    std::vector<pid_t> out;
    for (const char* c : {"pids", "freezer", "devices", "memory", "cpu"})
      if (auto m = mount(c)) {
        collect_pids(*m + path_, out);
        return out;
      }
    if (!roots_.empty()) collect_pids(*roots_.begin() + path_, out);
    return out;
  }

  void kill_all(int sig) override {
    auto f = mount("freezer");
    kill_members(*this, sig, "", f ? file_exists(*f + path_) : unified_ && file_exists(unified_->dir()));
  }

  void destroy() override {
    // Every hierarchy is tried: one a process still holds keeps only its own.
    std::optional<Error> first;
    for (const auto& root : all_roots()) {
      try {
        remove_created(root, path_, created_, mark_);
      } catch (const Error& e) {
        if (!first) first = e;
      }
    }
    if (first) throw *first;
  }

  Stats stats() override {
    Stats s;
    if (auto m = mount("cpuacct")) {
      std::string d = *m + path_;
      s.cpu_usage_ns = read_u64(d + "/cpuacct.usage");
      // cpuacct.stat counts USER_HZ ticks.
      auto st = read_kv(d + "/cpuacct.stat");
      uint64_t hz = static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
      if (hz) {
        s.cpu_user_ns = st["user"] * 1000000000ULL / hz;
        s.cpu_system_ns = st["system"] * 1000000000ULL / hz;
      }
    }
    if (auto m = mount("cpu")) {
      auto st = read_kv(*m + path_ + "/cpu.stat");
      s.cpu_throttled_periods = st["nr_throttled"];
      s.cpu_throttled_time_ns = st["throttled_time"];
    }
    if (auto m = mount("memory")) memory_stats(*m + path_, s);
    if (auto m = mount("pids")) {
      s.pids_current = read_u64(*m + path_ + "/pids.current");
      uint64_t pmax = read_u64(*m + path_ + "/pids.max");
      s.pids_limit = pmax == UINT64_MAX ? 0 : pmax;
    }
    if (auto m = mount("blkio")) {
      std::string d = *m + path_;
      blkio_stat(d + "/blkio.throttle.io_service_bytes_recursive", s.io_service_bytes);
      blkio_stat(d + "/blkio.throttle.io_serviced_recursive", s.io_serviced);
    }
    if (auto m = mount("hugetlb")) {
      for (const auto& size : hugepage_sizes()) {
        std::string base = *m + path_ + "/hugetlb." + size;
        s.hugetlb[size] = {read_u64(base + ".usage_in_bytes"), read_u64(base + ".max_usage_in_bytes"),
                           read_u64(base + ".failcnt")};
      }
    } else if (unified_) {
      unified_->hugetlb_stats(s);
    }
    return s;
  }

  uint64_t oom_kills() override {
    auto m = mount("memory");
    return m ? read_kv(*m + path_ + "/memory.oom_control")["oom_kill"] : 0;
  }

  std::vector<std::string> created() const override { return created_; }

  bool owned() const override {
    bool any = false;
    for (const auto& root : all_roots()) {
      Mark::Found f = mark_.find(root + path_);
      if (f == Mark::Found::other) return false;
      any |= f == Mark::Found::ours;
    }
    return any;
  }

 private:
  std::optional<std::string> mount(const std::string& controller) const {
    auto it = mounts_.find(controller);
    if (it == mounts_.end()) return std::nullopt;
    return it->second;
  }

  // `pid` (0: the caller) into every v1 hierarchy through `file`, and into
  // the unified one unless it was born there.
  void move(pid_t pid, const char* file, bool cloned_into) {
    for (const auto& d : roots_) write_file(d + path_ + "/" + file, std::to_string(pid));
    if (unified_ && !cloned_into && file_exists(unified_->dir())) unified_->add(pid);
  }

  // Every hierarchy the cgroup has a directory in.
  std::vector<std::string> all_roots() const {
    std::vector<std::string> roots(roots_.begin(), roots_.end());
    if (unified_) roots.push_back(unified_->root);
    return roots;
  }

  static void memory_stats(const std::string& d, Stats& s) {
    s.memory_usage = read_u64(d + "/memory.usage_in_bytes");
    s.memory_limit = read_u64(d + "/memory.limit_in_bytes");
    s.memory_max_usage = read_u64(d + "/memory.max_usage_in_bytes");
    s.memory_failcnt = read_u64(d + "/memory.failcnt");
    s.swap_usage = read_u64(d + "/memory.memsw.usage_in_bytes");
    s.swap_limit = read_u64(d + "/memory.memsw.limit_in_bytes");
    s.memory_raw = read_kv(d + "/memory.stat");
    s.oom_kill = read_kv(d + "/memory.oom_control")["oom_kill"];
  }

  // Controllers only the unified hierarchy has (hybrid hosts).
  void apply_unified(const spec::Resources& r, const std::set<std::string>& controllers) {
    spec::Resources sub;
    if (controllers.count("hugetlb")) sub.hugepage_limits = r.hugepage_limits;
    if (controllers.count("pids")) sub.pids_limit = r.pids_limit;
    if (controllers.count("rdma")) sub.rdma = r.rdma;
    unified_->enable(controllers);
    std::vector<std::pair<std::string, std::string>> writes;
    for (const auto& w : v2_writes(sub)) writes.emplace_back(unified_->dir() + "/" + w.file, w.value);
    apply_writes(writes);
  }

  // A new v1 cgroup has no realtime budget, so neither would containers under
  // husk's own parent: raise the budgets of kDefaultParent and below as far
  // as the container asks (other parents are the host's to give).
  // Returns the hierarchy root, locked, or no fd when there is nothing to plan.
  base::Fd make_rt_room(const std::string& root, const spec::Cpu& cpu) const {
    if (!file_exists(root + "/cpu.rt_runtime_us")) return {};  // no RT group scheduling: the write fails clearly
    base::Fd lock(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!lock) throw sys_error("open " + root);
    if (flock(lock.get(), LOCK_EX) < 0) throw sys_error("lock " + root);
    uint64_t period = cpu.realtime_period.value_or(0);
    if (!period) {
      const std::string f = root + path_ + "/cpu.rt_period_us";
      period = parse_u64(base::read_file(f), f);
    }
    for (const auto& [path, runtime] : plan_rt_budget(rt_chain(root), *cpu.realtime_runtime, period))
      write_file(root + path + "/cpu.rt_runtime_us", std::to_string(runtime));
    return lock;
  }

  // The hierarchy root down to the container's parent, with their budgets.
  std::vector<RtAncestor> rt_chain(const std::string& root) const {
    std::vector<RtAncestor> chain;
    auto parts = prefixes(path_);
    for (size_t i = 0; i < parts.size(); ++i) {
      RtAncestor a;
      a.path = i == 0 ? "" : parts[i - 1];
      a.raisable = base::is_within(a.path, kDefaultParent);
      const std::string dir = root + a.path;
      std::tie(a.runtime, a.period) = read_rt(dir);
      a.others = siblings_share(dir, root + parts[i]);
      chain.push_back(a);
    }
    return chain;
  }

  std::string path_;
  std::map<std::string, std::string> mounts_;
  std::set<std::string> roots_;  // distinct v1 hierarchy mount points
  std::optional<V2Dir> unified_;
  std::vector<std::string> created_;
  Mark mark_;
};

}  // namespace

std::unique_ptr<Manager> make_legacy(const Config& c, const Hierarchies& h) {
  return std::make_unique<LegacyManager>(c, h);
}

}  // namespace husk::cgroups
