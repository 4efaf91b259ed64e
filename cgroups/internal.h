// Helpers shared by the cgroups sources; not part of the library's interface.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cgroups/cgroups.h"

namespace husk::cgroups {

// Where containers go when cgroupsPath is empty or relative; husk owns it.
constexpr const char* kDefaultParent = "/husk";

// v1 realtime budgets (CONFIG_RT_GROUP_SCHED): the kernel refuses a group
// whose children's runtime/period shares add up to more than its own.
// kRtShift is the kernel's BW_SHIFT: shares are runtime * 2^20 / period.
constexpr int kRtShift = 20;
uint64_t rt_share(int64_t runtime, uint64_t period);  // -1 (unlimited) is 1 << kRtShift

// One cgroup on the way from the hierarchy root (first) to the container's
// parent (last), as read from cpu.rt_runtime_us / cpu.rt_period_us.
struct RtAncestor {
  std::string path;        // "" for the hierarchy root
  int64_t runtime = 0;     // -1: unlimited
  uint64_t period = 1000000;
  uint64_t others = 0;     // shares of its children not on the way to the container
  bool raisable = false;   // under kDefaultParent: husk may raise its budget
};

// The cpu.rt_runtime_us writes (top-down) that make room for a container
// asking for `runtime` per `period` under `chain`. Only raisable ancestors
// are raised; when the room is not there, the error names
// linux.resources.cpu.realtimeRuntime and the cgroup that lacks it.
std::vector<std::pair<std::string, int64_t>> plan_rt_budget(const std::vector<RtAncestor>& chain, int64_t runtime,
                                                            uint64_t period);

// "c 1:3 rwm" / "a" as devices.allow and devices.deny take it.
std::string device_rule_v1(const spec::DeviceRule& rule, const std::string& field);

// Load device_filter_program(rules), attach it to the cgroup directory fd with
// BPF_F_ALLOW_MULTI, then detach the husk programs that were attached before.
void attach_device_filter(int cgroup_fd, const std::string& cgroup_dir,
                          const std::vector<spec::DeviceRule>& rules);

// ------------------------------------------------------------ files (fs.cpp) ---

bool file_exists(const std::string& path);
bool is_dir(const std::string& path);
std::string trim(std::string s);
// Write one value in one write(2), as cgroup files require; returns errno or 0.
int write_raw(const std::string& path, const std::string& value);
void write_file(const std::string& path, const std::string& value);
// Strict: the whole (trimmed) text is the number, else an Error naming `file`.
// parse_u64 reads "max" as UINT64_MAX.
uint64_t parse_u64(const std::string& text, const std::string& file);
int64_t parse_i64(const std::string& text, const std::string& file);
// The number in `path`, 0 when the file does not exist.
uint64_t read_u64(const std::string& path);
// "key value" lines (cpu.stat, memory.stat, memory.events, ...); empty when missing.
std::map<std::string, uint64_t> read_kv(const std::string& path);
void sleep_ms(int ms);

// The error of a file in a cgroup removed meanwhile (systemd trims an emptied
// scope while delete looks into it): ENOENT at open, ENODEV at read or write.
bool cgroup_gone(const Error& e);
// Every pid in `dir`'s cgroup.procs and those of its descendants (none in a
// cgroup removed while it is read).
void collect_pids(const std::string& dir, std::vector<pid_t>& out);
// rmdir, retrying while the cgroup still has dying tasks (EBUSY) for ~1 s when
// `retry`. Returns 0, or the errno of the last attempt (ENOENT counts as success).
int rmdir_retry(const std::string& dir, bool retry);
// The container's own cgroup, with the sub-cgroups its processes made
// (nested runtimes, systemd inside), deepest first; 0 or an errno.
int remove_tree(const std::string& dir);
// Prefixes of a cgroup path: "/a/b/c" -> "/a", "/a/b", "/a/b/c".
std::vector<std::string> prefixes(const std::string& path);
// The host's huge page sizes as cgroup files name them ("2MB", "1GB").
std::vector<std::string> hugepage_sizes();

// Where rootless husk marks its cgroups (see Config::owner).
constexpr const char* kRootlessMark = "user.husk.owner";

// Config::owner_xattr = Config::owner on a directory: husk made it for that
// owner. Rootless: kRootlessMark on a directory owned by the caller's euid.
// An empty directory of the caller's with the sticky bit and no xattr is
// ours too: MadeDirs::make was stopped between its mkdir and the mark.
struct Mark {
  std::string xattr, owner;
  std::optional<uid_t> uid;
  explicit Mark(const Config& c)
      : xattr(c.rootless ? kRootlessMark : c.owner_xattr),
        owner(c.owner),
        uid(c.rootless ? std::optional<uid_t>(::geteuid()) : std::nullopt) {}
  void put(const std::string& dir) const;  // throws an Error naming dir and xattr
  enum class Found { missing, ours, other };
  Found find(const std::string& dir) const;  // lstat and lgetxattr; missing: no such dir
  bool on(const std::string& dir) const { return find(dir) == Found::ours; }
};

// The directories a prepare() makes, owned from the moment each exists:
// removed again (deepest first) unless keep() is called.
class MadeDirs {
 public:
  explicit MadeDirs(const Mark& mark) : mark_(mark) {}
  MadeDirs(const MadeDirs&) = delete;
  MadeDirs& operator=(const MadeDirs&) = delete;
  ~MadeDirs();
  // true: made (mode 01755 & ~umask) and marked it, then the sticky bit
  // cleared; false: it was there (and stays unmarked).
  // Other failures throw.
  bool make(const std::string& dir);
  void keep() { dirs_.clear(); }

 private:
  const Mark& mark_;
  std::vector<std::string> dirs_;
};

// destroy() in the hierarchy at `root`: the `created` paths carrying `mark`,
// deepest first; `leaf` with the sub-cgroups its processes made (throws when
// that fails), an ancestor only when empty (else it is someone else's too).
void remove_created(const std::string& root, const std::string& leaf, const std::vector<std::string>& created,
                    const Mark& mark);

// Write each (file, value); an EINVAL write is retried once after all the
// others, which orders pairs the kernel checks against each other (v1
// memory/memsw, cfs period/quota, rt period/runtime) whichever way the values move.
void apply_writes(const std::vector<std::pair<std::string, std::string>>& writes);
// memory.checkBeforeUpdate against the usage in `usage_file`.
void check_usage(const spec::Resources& r, const std::string& usage_file);
// Manager::kill_all of the cgroupfs managers, as cgroups.h describes it.
// `kill_file`: the cgroup's cgroup.kill (v2; "" on v1), written for SIGKILL
// when the kernel has it; `can_freeze`: m.freeze() works on the cgroup.
void kill_members(Manager& m, int sig, const std::string& kill_file, bool can_freeze);

// ------------------------------------------------------- cgroup v2 (v2.cpp) ---

// A cgroup in a cgroup2 hierarchy: the unified manager's, and the hybrid
// manager's unified half.
struct V2Dir {
  std::string root;  // hierarchy mount point
  std::string path;  // "/husk/id"
  std::string dir() const { return root + path; }

  std::set<std::string> controllers(const std::string& d) const;
  // Enable `wanted` (those available) in every ancestor's subtree_control,
  // from the root down, so the leaf gets their files. `best_effort`: a write
  // the kernel refuses leaves that controller off below, instead of throwing.
  void enable(const std::set<std::string>& wanted, bool best_effort = false) const;
  void add(pid_t pid) const;
  void freeze() const;
  void thaw() const;
  bool frozen() const;
  // hugetlb.<size>.current / .events of the cgroup, into s.hugetlb.
  void hugetlb_stats(Stats& s) const;
};

// ------------------------------------------------------------- the managers ---

std::unique_ptr<Manager> make_unified(const Config& c, const Hierarchies& h);  // v2.cpp
// A new cpu.max period alone keeps the quota in force: r gets the one in
// `cpu_max` (v2.cpp).
void keep_quota(spec::Resources& r, const std::string& cpu_max);
std::unique_ptr<Manager> make_legacy(const Config& c, const Hierarchies& h);   // v1.cpp
std::unique_ptr<Manager> make_none(const Config& c);                           // none.cpp
std::unique_ptr<Manager> make_systemd(const Config& c);                        // systemd.cpp
bool is_systemd_handle(const std::string& handle);                             // systemd.cpp

}  // namespace husk::cgroups
