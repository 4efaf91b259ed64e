// The cgroup managers: Unified (cgroup v2 only) and Legacy (v1 controllers,
// plus the cgroup2 hierarchy on hybrid hosts for what only it has).
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "base/file.h"
#include "base/mountinfo.h"
#include "cgroups/cgroups.h"
#include "cgroups/internal.h"

namespace husk::cgroups {

namespace {

constexpr const char* kRoot = "/sys/fs/cgroup";
constexpr const char* kUnifiedHybrid = "/sys/fs/cgroup/unified";

// ---------------------------------------------------------------- files ---

bool exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

using base::try_read_file;
using base::read_file;

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Write one value in one write(2), as cgroup files require; returns errno or 0.
int write_raw(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  ssize_t n = write(fd, value.data(), value.size());
  int err = n < 0 ? errno : 0;
  close(fd);
  return err;
}

void write_file(const std::string& path, const std::string& value) {
  if (int err = write_raw(path, value)) throw sys_error("write \"" + value + "\" to " + path, err);
}

uint64_t parse_u64(const std::string& s) {
  std::string t = trim(s);
  if (t == "max") return UINT64_MAX;
  try {
    return std::stoull(t);
  } catch (...) {
    return 0;
  }
}

uint64_t read_u64(const std::string& path) {
  auto s = try_read_file(path);
  return s ? parse_u64(*s) : 0;
}

// "key value" lines (cpu.stat, memory.stat, memory.events, ...).
std::map<std::string, uint64_t> read_kv(const std::string& path) {
  std::map<std::string, uint64_t> out;
  auto s = try_read_file(path);
  if (!s) return out;
  std::istringstream in(*s);
  std::string k, v;
  while (in >> k >> v) out[k] = parse_u64(v);
  return out;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// Every pid in `dir`'s cgroup.procs and those of its descendants.
// closedir on every path out, throws included.
struct CloseDir {
  void operator()(DIR* d) const { closedir(d); }
};
using Dir = std::unique_ptr<DIR, CloseDir>;

void collect_pids(const std::string& dir, std::vector<pid_t>& out) {
  if (auto procs = try_read_file(dir + "/cgroup.procs")) {
    std::istringstream in(*procs);
    pid_t p;
    while (in >> p) out.push_back(p);
  }
  Dir d(opendir(dir.c_str()));
  if (!d) return;
  while (dirent* e = readdir(d.get())) {
    if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      collect_pids(dir + "/" + e->d_name, out);
  }
}

// rmdir, retrying while the cgroup still has dying tasks (EBUSY) for ~1 s.
// Returns 0, or the errno of the last attempt (ENOENT counts as success).
int rmdir_retry(const std::string& dir, bool retry) {
  for (int i = 0;; ++i) {
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) return 0;
    if (!retry || errno != EBUSY || i >= 100) return errno;
    sleep_ms(10);
  }
}

// The container's own cgroup, with the sub-cgroups its processes made
// (nested runtimes, systemd inside), deepest first.
int remove_tree(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    std::vector<std::string> subs;
    while (dirent* e = readdir(d))
      if (e->d_type == DT_DIR && std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        subs.push_back(dir + "/" + e->d_name);
    closedir(d);
    for (const auto& sub : subs)
      if (int err = remove_tree(sub)) return err;
  }
  return rmdir_retry(dir, true);
}

// "/a/b" is within "/a" and "/a/b", not within "/ab".
bool within(const std::string& p, const std::string& base) {
  return base == "/" || p == base || (p.size() > base.size() && p.compare(0, base.size(), base) == 0 && p[base.size()] == '/');
}

// Prefixes of a cgroup path: "/a/b/c" -> "/a", "/a/b", "/a/b/c".
std::vector<std::string> prefixes(const std::string& path) {
  std::vector<std::string> out;
  for (size_t i = 1; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') out.push_back(path.substr(0, i));
  return out;
}

std::vector<std::string> hugepage_sizes() {
  std::vector<std::string> out;
  DIR* d = opendir("/sys/kernel/mm/hugepages");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    unsigned long kb = 0;
    if (std::sscanf(e->d_name, "hugepages-%lukB", &kb) != 1) continue;
    if (kb % (1024 * 1024) == 0) out.push_back(std::to_string(kb / (1024 * 1024)) + "GB");
    else if (kb % 1024 == 0) out.push_back(std::to_string(kb / 1024) + "MB");
    else out.push_back(std::to_string(kb) + "KB");
  }
  closedir(d);
  return out;
}

// ------------------------------------------------------- cgroup v2 parts ---

// A cgroup in a cgroup2 hierarchy: shared by the unified manager and the
// hybrid manager's unified half.
struct V2Dir {
  std::string root;  // hierarchy mount point
  std::string path;  // "/husk/id"
  std::string dir() const { return root + path; }

  std::set<std::string> controllers(const std::string& d) const {
    std::set<std::string> out;
    if (auto s = try_read_file(d + "/cgroup.controllers")) {
      std::istringstream in(*s);
      std::string c;
      while (in >> c) out.insert(c);
    }
    return out;
  }

  // Enable `wanted` (those available) in every ancestor's subtree_control,
  // from the root down, so the leaf gets their files.
  void enable(const std::set<std::string>& wanted) const {
    auto parts = prefixes(path);
    for (size_t i = 0; i < parts.size(); ++i) {
      std::string cur = root + (i == 0 ? "" : parts[i - 1]);
      auto avail = controllers(cur);
      auto enabled = try_read_file(cur + "/cgroup.subtree_control").value_or("");
      std::set<std::string> on;
      std::istringstream in(enabled);
      for (std::string c; in >> c;) on.insert(c);
      for (const auto& c : wanted) {
        if (!avail.count(c) || on.count(c)) continue;
        if (int err = write_raw(cur + "/cgroup.subtree_control", "+" + c))
          throw sys_error("enable the " + c + " controller in " + cur + "/cgroup.subtree_control", err);
      }
    }
  }

  void add(pid_t pid) const { write_file(dir() + "/cgroup.procs", std::to_string(pid)); }

  void freeze() const {
    write_file(dir() + "/cgroup.freeze", "1");
    for (int i = 0; i < 1000; ++i) {
      if (frozen()) return;
      sleep_ms(i < 100 ? 1 : 10);
    }
    write_raw(dir() + "/cgroup.freeze", "0");
    throw Error("freeze " + dir() + ": timed out waiting for cgroup.events to say frozen");
  }

  void thaw() const {
    write_file(dir() + "/cgroup.freeze", "0");
    for (int i = 0; i < 1000 && frozen(); ++i) sleep_ms(1);
  }

  bool frozen() const { return read_kv(dir() + "/cgroup.events")["frozen"] == 1; }
};

// Writes that may be skipped when the file is absent: hugetlb reservations
// (older kernels), and swap values that only say "no swap limit" / "no swap"
// on a kernel without swap accounting (runc's rule).
bool optional_when_missing(const std::string& path, const std::string& value) {
  auto ends = [&](const std::string& f) {
    return path.size() >= f.size() && path.compare(path.size() - f.size(), f.size(), f) == 0;
  };
  if (path.find(".rsvd.") != std::string::npos) return true;
  if (ends("/memory.swap.max")) return value == "max" || value == "0";
  if (ends("/memory.memsw.limit_in_bytes")) return value == "-1";
  return false;
}

// Apply writes; an EINVAL write is retried once after all the others, which
// orders pairs the kernel checks against each other (v1 memory/memsw,
// cfs period/quota, rt period/runtime) whichever way the values move.
void apply_writes(const std::vector<std::pair<std::string, std::string>>& writes) {
  std::vector<std::pair<std::string, std::string>> later;
  for (const auto& [path, value] : writes) {
    int err = write_raw(path, value);
    if (err == ENOENT && optional_when_missing(path, value)) continue;
    if (err == EINVAL) {
      later.emplace_back(path, value);
      continue;
    }
    if (err == ENOENT)
      throw Error("write \"" + value + "\" to " + path +
                      ": no such file (its controller is not enabled for this cgroup or the kernel lacks it)",
                  err);
    if (err) throw sys_error("write \"" + value + "\" to " + path, err);
  }
  for (const auto& [path, value] : later) write_file(path, value);
}

void check_usage(const spec::Resources& r, const std::string& usage_file) {
  if (!r.memory || !r.memory->check_before_update.value_or(false)) return;
  int64_t limit = r.memory->limit.value_or(0);
  if (limit <= 0) return;
  uint64_t usage = read_u64(usage_file);
  if (static_cast<uint64_t>(limit) < usage)
    throw Error("linux.resources.memory.limit: " + std::to_string(limit) + " is below the current usage of " +
                std::to_string(usage) + " bytes (checkBeforeUpdate)");
}

void kill_listed(const std::vector<pid_t>& pids, int sig) {
  for (pid_t p : pids)
    if (kill(p, sig) != 0 && errno != ESRCH) throw sys_error("kill " + std::to_string(p));
}

// -------------------------------------------------------------- unified ---

class UnifiedManager : public Manager {
 public:
  explicit UnifiedManager(std::string path) : cg_{kRoot, std::move(path)} {}

  const std::string& path() const override { return cg_.path; }

  void create() override {
    created_.clear();
    // Ancestors get the controllers in subtree_control; the leaf enables
    // nothing, since it holds the tasks (no-internal-process rule).
    for (const auto& p : prefixes(cg_.path)) {
      std::string d = kRoot + p;
      if (mkdir(d.c_str(), 0755) == 0) created_.push_back(p);
      else if (errno != EEXIST) throw sys_error("mkdir " + d);
    }
    cg_.enable({"cpu", "memory", "pids", "io", "cpuset", "hugetlb", "rdma", "misc"});
  }

  void apply(const spec::Resources& res) override {
    const std::string d = cg_.dir();
    check_usage(res, d + "/memory.current");
    // cpu.max holds quota and period together: a new period alone (`update
    // --cpu-period`) keeps the quota in force, as on v1 and in runc.
    spec::Resources r = res;
    if (r.cpu && r.cpu->period.value_or(0) != 0 && r.cpu->quota.value_or(0) == 0)
      if (auto cur = try_read_file(d + "/cpu.max"); cur && cur->rfind("max", 0) != 0)
        r.cpu->quota = std::stoll(*cur);
    std::vector<std::pair<std::string, std::string>> writes;
    for (const auto& w : v2_writes(r, exists(d + "/io.bfq.weight"))) writes.emplace_back(d + "/" + w.file, w.value);
    apply_writes(writes);
    if (!r.devices.empty()) {
      int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) throw sys_error("open " + d);
      try {
        attach_device_filter(fd, d, r.devices);
      } catch (...) {
        close(fd);
        throw;
      }
      close(fd);
    }
  }

  int clone_into_fd() override {
    int fd = ::open(cg_.dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw sys_error("open " + cg_.dir());
    return fd;
  }

  void add_process(pid_t pid) override { cg_.add(pid); }
  void freeze() override { cg_.freeze(); }
  void thaw() override { cg_.thaw(); }
  bool frozen() override { return cg_.frozen(); }

  std::vector<pid_t> pids() override {
    std::vector<pid_t> out;
    collect_pids(cg_.dir(), out);
    return out;
  }

  void kill_all(int sig) override {
    if (!exists(cg_.dir())) return;  // already gone: nothing left to signal
    if (sig == SIGKILL && exists(cg_.dir() + "/cgroup.kill")) {
      write_file(cg_.dir() + "/cgroup.kill", "1");
      return;
    }
    // Frozen, nothing can fork between listing and signalling.
    bool was_frozen = cg_.frozen();
    if (!was_frozen) cg_.freeze();
    try {
      kill_listed(pids(), sig);
    } catch (...) {
      if (!was_frozen) cg_.thaw();
      throw;
    }
    if (!was_frozen) cg_.thaw();
  }

  void destroy() override {
    if (int err = remove_tree(cg_.dir())) throw sys_error("rmdir " + cg_.dir(), err);
    remove_created_ancestors({kRoot});
  }

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
    s.memory_limit = exists(d + "/memory.max") ? read_u64(d + "/memory.max") : 0;
    s.memory_max_usage = read_u64(d + "/memory.peak");
    s.swap_usage = read_u64(d + "/memory.swap.current");
    s.swap_limit = exists(d + "/memory.swap.max") ? read_u64(d + "/memory.swap.max") : 0;
    s.memory_raw = read_kv(d + "/memory.stat");
    auto events = read_kv(d + "/memory.events");
    s.memory_failcnt = events["max"];
    s.oom_kill = events["oom_kill"];
    s.pids_current = read_u64(d + "/pids.current");
    uint64_t pmax = read_u64(d + "/pids.max");
    s.pids_limit = pmax == UINT64_MAX ? 0 : pmax;
    if (auto io = try_read_file(d + "/io.stat")) {
      std::istringstream in(*io);
      std::string line;
      while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string dev, kv;
        ls >> dev;
        int64_t maj = 0, min = 0;
        if (std::sscanf(dev.c_str(), "%ld:%ld", &maj, &min) != 2) continue;
        while (ls >> kv) {
          auto eq = kv.find('=');
          if (eq == std::string::npos) continue;
          std::string k = kv.substr(0, eq);
          uint64_t v = parse_u64(kv.substr(eq + 1));
          if (k == "rbytes") s.io_service_bytes.push_back({maj, min, "Read", v});
          else if (k == "wbytes") s.io_service_bytes.push_back({maj, min, "Write", v});
          else if (k == "rios") s.io_serviced.push_back({maj, min, "Read", v});
          else if (k == "wios") s.io_serviced.push_back({maj, min, "Write", v});
        }
      }
    }
    v2_hugetlb_stats(d, s);
    return s;
  }

  uint64_t oom_kills() override { return read_kv(cg_.dir() + "/memory.events")["oom_kill"]; }

  std::vector<std::string> created() const override { return created_; }
  void set_created(std::vector<std::string> paths) override { created_ = std::move(paths); }

  static void v2_hugetlb_stats(const std::string& d, Stats& s) {
    for (const auto& size : hugepage_sizes()) {
      std::string base = d + "/hugetlb." + size;
      if (!exists(base + ".current")) continue;
      s.hugetlb[size] = {read_u64(base + ".current"), 0, read_kv(base + ".events")["max"]};
    }
  }

 private:
  // Ancestors this manager (or the one that recorded created()) made, deepest
  // first; a non-empty one belongs to someone else too and stays.
  void remove_created_ancestors(const std::vector<std::string>& roots) {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      if (*it == cg_.path) continue;
      for (const auto& root : roots) rmdir_retry(root + *it, false);
    }
  }

  V2Dir cg_;
  std::vector<std::string> created_;
};

// --------------------------------------------------------- v1 / hybrid ---

const char* const kV1Controllers[] = {"cpu",     "cpuacct",  "cpuset", "memory",     "devices", "freezer", "blkio",
                                      "pids",    "net_cls",  "net_prio", "hugetlb",  "perf_event", "rdma", "misc"};

// controller -> mount point of its v1 hierarchy, from /proc/self/mountinfo.
std::map<std::string, std::string> read_v1_mounts() {
  std::map<std::string, std::string> out;
  for (const auto& m : base::read_mountinfo()) {
    if (m.fstype != "cgroup") continue;
    std::istringstream os(m.super_options);
    for (std::string o; std::getline(os, o, ',');) {
      for (const char* c : kV1Controllers)
        if (o == c && !out.count(o)) out[o] = m.mount_point;
      // No controller, but runc places containers there too (systemd and
      // tools reading /proc/<pid>/cgroup expect the same path in it).
      if (o == "name=systemd" && !out.count(o)) out[o] = m.mount_point;
    }
  }
  return out;
}

// The hierarchies as this process first saw them.
// Read once per process: `list` opens a manager for every container.
const std::map<std::string, std::string>& v1_mounts() {
  static const std::map<std::string, std::string> mounts = read_v1_mounts();
  return mounts;
}

// The v2 controller that does the job of a v1 one, for hybrid fallbacks.
std::string v2_equivalent(const std::string& v1) {
  if (v1 == "hugetlb" || v1 == "pids" || v1 == "rdma" || v1 == "misc") return v1;
  return "";
}

class LegacyManager : public Manager {
 public:
  LegacyManager(std::string path, bool hybrid) : path_(std::move(path)), mounts_(v1_mounts()) {
    if (hybrid) unified_ = V2Dir{kUnifiedHybrid, path_};
    for (const auto& [c, m] : mounts_) dirs_.insert(m);
  }

  const std::string& path() const override { return path_; }

  void create() override {
    created_.clear();
    std::vector<std::string> roots(dirs_.begin(), dirs_.end());
    if (unified_) roots.push_back(unified_->root);
    for (const auto& p : prefixes(path_)) {
      bool made = false, existed = false;
      for (const auto& root : roots) {
        std::string d = root + p;
        if (mkdir(d.c_str(), 0755) == 0) made = true;
        else if (errno == EEXIST) existed = true;
        else throw sys_error("mkdir " + d);
      }
      // Ours only when no hierarchy had it: a host cgroup that lacks one
      // controller is still someone else's, never to be emptied or removed.
      if (made && !existed) created_.push_back(p);
      // A new v1 cpuset starts with no CPUs or nodes and refuses tasks: inherit.
      if (auto cs = mount("cpuset")) {
        std::string d = *cs + p, parent = d.substr(0, d.rfind('/'));
        for (const char* f : {"cpuset.cpus", "cpuset.mems"})
          if (trim(read_file(d + "/" + f)).empty()) write_file(d + "/" + f, trim(read_file(parent + "/" + f)));
      }
    }
  }

  void apply(const spec::Resources& r) override {
    if (auto mem = mount("memory")) check_usage(r, *mem + path_ + "/memory.usage_in_bytes");
    // Held until the container's own rt write: concurrent creates under
    // /husk would otherwise plan from the same tree and overbook it.
    int rt_lock = -1;
    if (r.cpu && r.cpu->realtime_runtime.value_or(0) > 0)
      if (auto cpu = mount("cpu")) rt_lock = make_rt_room(*cpu, *r.cpu);
    struct CloseLock {
      int fd;
      ~CloseLock() {
        if (fd >= 0) ::close(fd);
      }
    } rt_unlock{rt_lock};
    std::vector<std::pair<std::string, std::string>> writes;
    std::set<std::string> fallback;
    for (const auto& w : v1_writes(r)) {
      if (auto m = mount(w.controller)) {
        std::string file = *m + path_ + "/" + w.file;
        // Without CFQ only BFQ has weights; they take the same values (as runc).
        if (w.file == "blkio.weight" || w.file == "blkio.weight_device") {
          std::string bfq = *m + path_ + "/blkio.bfq." + w.file.substr(6);
          if (!exists(file) && exists(bfq)) file = bfq;
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
    if (fallback.empty()) return;
    // Controllers only the unified hierarchy has (hybrid hosts).
    spec::Resources sub;
    if (fallback.count("hugetlb")) sub.hugepage_limits = r.hugepage_limits;
    if (fallback.count("pids")) sub.pids_limit = r.pids_limit;
    if (fallback.count("rdma")) sub.rdma = r.rdma;
    unified_->enable(fallback);
    writes.clear();
    for (const auto& w : v2_writes(sub)) writes.emplace_back(unified_->dir() + "/" + w.file, w.value);
    apply_writes(writes);
  }

  int clone_into_fd() override { return -1; }

  void add_process(pid_t pid) override {
    for (const auto& d : dirs_) write_file(d + path_ + "/cgroup.procs", std::to_string(pid));
    if (unified_ && exists(unified_->dir())) unified_->add(pid);
  }

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
      if (trim(read_file(state)) == "FROZEN") return;
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
    return trim(try_read_file(*f + path_ + "/freezer.state").value_or("")) == "FROZEN";
  }

  std::vector<pid_t> pids() override {
    std::vector<pid_t> out;
    for (const char* c : {"pids", "freezer", "devices", "memory", "cpu"})
      if (auto m = mount(c)) {
        collect_pids(*m + path_, out);
        return out;
      }
    if (!dirs_.empty()) collect_pids(*dirs_.begin() + path_, out);
    return out;
  }

  void kill_all(int sig) override {
    auto f = mount("freezer");
    bool can_freeze = f ? exists(*f + path_) : unified_ && exists(unified_->dir());
    bool was_frozen = can_freeze && frozen();
    if (can_freeze && !was_frozen) freeze();
    try {
      kill_listed(pids(), sig);
    } catch (...) {
      if (can_freeze && !was_frozen) thaw();
      throw;
    }
    if (can_freeze && !was_frozen) thaw();
  }

  void destroy() override {
    std::vector<std::string> roots(dirs_.begin(), dirs_.end());
    if (unified_) roots.push_back(unified_->root);
    for (const auto& root : roots)
      if (int err = remove_tree(root + path_)) throw sys_error("rmdir " + root + path_, err);
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      if (*it == path_) continue;
      for (const auto& root : roots) rmdir_retry(root + *it, false);
    }
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
    if (auto m = mount("memory")) {
      std::string d = *m + path_;
      s.memory_usage = read_u64(d + "/memory.usage_in_bytes");
      s.memory_limit = read_u64(d + "/memory.limit_in_bytes");
      s.memory_max_usage = read_u64(d + "/memory.max_usage_in_bytes");
      s.memory_failcnt = read_u64(d + "/memory.failcnt");
      s.swap_usage = read_u64(d + "/memory.memsw.usage_in_bytes");
      s.swap_limit = read_u64(d + "/memory.memsw.limit_in_bytes");
      s.memory_raw = read_kv(d + "/memory.stat");
      s.oom_kill = read_kv(d + "/memory.oom_control")["oom_kill"];
    }
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
      UnifiedManager::v2_hugetlb_stats(unified_->dir(), s);
    }
    return s;
  }

  uint64_t oom_kills() override {
    auto m = mount("memory");
    return m ? read_kv(*m + path_ + "/memory.oom_control")["oom_kill"] : 0;
  }

  std::vector<std::string> created() const override { return created_; }
  void set_created(std::vector<std::string> paths) override { created_ = std::move(paths); }

 private:
  std::optional<std::string> mount(const std::string& controller) const {
    auto it = mounts_.find(controller);
    if (it == mounts_.end()) return std::nullopt;
    return it->second;
  }

  // A new v1 cgroup has no realtime budget, so neither would containers under
  // husk's own parent: raise the budgets of kDefaultParent and below as far
  // as the container asks (other parents are the host's to give).
  // Returns a locked fd of the hierarchy root, or -1 when there is nothing to plan.
  int make_rt_room(const std::string& root, const spec::Cpu& cpu) const {
    auto rt = [&](const std::string& dir, RtAncestor& a) {
      a.runtime = std::stoll(trim(read_file(dir + "/cpu.rt_runtime_us")));
      a.period = std::stoull(trim(read_file(dir + "/cpu.rt_period_us")));
    };
    if (!exists(root + "/cpu.rt_runtime_us")) return -1;  // no RT group scheduling: the write fails clearly
    int lock = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock < 0) throw sys_error("open " + root);
    if (flock(lock, LOCK_EX) < 0) {
      int err = errno;
      ::close(lock);
      throw sys_error("lock " + root, err);
    }
    try {
      uint64_t period = cpu.realtime_period.value_or(0);
      if (!period) period = std::stoull(trim(read_file(root + path_ + "/cpu.rt_period_us")));
      std::vector<RtAncestor> chain;
      auto parts = prefixes(path_);
      for (size_t i = 0; i < parts.size(); ++i) {
        RtAncestor a;
        a.path = i == 0 ? "" : parts[i - 1];
        a.raisable = within(a.path, kDefaultParent);
        const std::string dir = root + a.path, next = root + parts[i];
        rt(dir, a);
        Dir d(opendir(dir.c_str()));
        if (!d) throw sys_error("open " + dir);
        while (dirent* e = readdir(d.get())) {
          std::string child = dir + "/" + e->d_name;
          if (e->d_type != DT_DIR || e->d_name[0] == '.' || child == next) continue;
          // A sibling removed meanwhile holds no budget.
          auto runtime = try_read_file(child + "/cpu.rt_runtime_us"), period = try_read_file(child + "/cpu.rt_period_us");
          if (runtime && period) a.others += rt_share(std::stoll(trim(*runtime)), std::stoull(trim(*period)));
        }
        chain.push_back(a);
      }
      for (const auto& [path, runtime] : plan_rt_budget(chain, *cpu.realtime_runtime, period))
        write_file(root + path + "/cpu.rt_runtime_us", std::to_string(runtime));
    } catch (...) {
      ::close(lock);
      throw;
    }
    return lock;
  }

  // "8:0 Read 4096" lines; the "Total" line has no device.
  static void blkio_stat(const std::string& file, std::vector<Stats::IoEntry>& out) {
    auto s = try_read_file(file);
    if (!s) return;
    std::istringstream in(*s);
    std::string line;
    while (std::getline(in, line)) {
      char op[32];
      int64_t maj, min;
      unsigned long long v;
      if (std::sscanf(line.c_str(), "%ld:%ld %31s %llu", &maj, &min, op, &v) == 4) out.push_back({maj, min, op, v});
    }
  }

  std::string path_;
  std::map<std::string, std::string> mounts_;
  std::set<std::string> dirs_;  // distinct hierarchy mount points
  std::optional<V2Dir> unified_;
  std::vector<std::string> created_;
};

bool is_cgroup2(const std::string& path) {
  struct statfs st;
  return statfs(path.c_str(), &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC;
}

}  // namespace

Mode detect_mode() {
  static const Mode mode = [] {
    if (is_cgroup2(kRoot)) return Mode::unified;
    if (is_cgroup2(kUnifiedHybrid)) return Mode::hybrid;
    return Mode::legacy;
  }();
  return mode;
}

std::unique_ptr<Manager> Manager::open(const std::string& path, Mode mode) {
  if (path.empty() || path[0] != '/' || path == "/" || path.find("/..") != std::string::npos)
    throw Error("cgroup path \"" + path + "\" must be absolute, not the root and without \"..\" (use resolve_path)");
  if (mode == Mode::unified) return std::make_unique<UnifiedManager>(path);
  return std::make_unique<LegacyManager>(path, mode == Mode::hybrid);
}

namespace {

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// /proc/<pid>/cgroup as (hierarchy id, controllers, path); empty when unreadable.
struct ProcCgroup {
  std::string id, controllers, path;
};
std::vector<ProcCgroup> read_proc_cgroup(const std::string& file) {
  std::vector<ProcCgroup> out;
  std::optional<std::string> text;
  try {
    text = try_read_file(file);
  } catch (const Error&) {
    return out;  // the process is gone
  }
  std::istringstream in(text.value_or(""));
  for (std::string line; std::getline(in, line);) {
    auto a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    out.push_back({line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)});
  }
  return out;
}

bool managed(const ProcCgroup& c, Mode mode) {
  if (c.id == "0") return mode != Mode::legacy;
  if (mode == Mode::unified) return false;
  std::istringstream in(c.controllers);
  // Not name=systemd: husk placed nothing there before, so its containers
  // from then sit at / in it and must still be recognised.
  for (std::string ctl; std::getline(in, ctl, ',');)
    if (ctl != "name=systemd" && v1_mounts().count(ctl)) return true;
  return false;
}

}  // namespace

bool exists(const std::string& path) {
  Mode mode = detect_mode();
  if (mode == Mode::unified) return is_dir(kRoot + path);
  if (mode == Mode::hybrid && is_dir(kUnifiedHybrid + path)) return true;
  for (const auto& [c, mnt] : v1_mounts())
    if (is_dir(mnt + path)) return true;
  return false;
}

bool contains_self(const std::string& path) {
  if (path == "/") return true;
  for (const auto& c : read_proc_cgroup("/proc/self/cgroup"))
    if (within(c.path, path)) return true;
  return false;
}

bool process_in(pid_t pid, const std::string& path) {
  Mode mode = detect_mode();
  bool any = false;
  for (const auto& c : read_proc_cgroup("/proc/" + std::to_string(pid) + "/cgroup")) {
    if (!managed(c, mode)) continue;
    if (!within(c.path, path)) return false;
    any = true;
  }
  return any;
}

void check_host(const spec::Resources& r) {
  if (!r.cpu || (r.cpu->cpus.empty() && r.cpu->mems.empty())) return;
  auto cpus = try_read_file("/sys/devices/system/cpu/online").value_or("");
  // Kernels without NUMA have no node directory: node 0 only.
  auto mems = try_read_file("/sys/devices/system/node/online").value_or("0");
  check_cpuset(r, cpus, mems);
}

}  // namespace husk::cgroups
