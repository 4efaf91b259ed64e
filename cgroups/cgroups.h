// Cgroup management: one interface, a v2 (unified) and a v1 (legacy/hybrid)
// implementation. Translation of linux.resources to file writes is pure.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::cgroups {

enum class Mode { unified, hybrid, legacy };
// Read /proc/self/mountinfo (or statfs /sys/fs/cgroup) once.
Mode detect_mode();

// One file write: on v2 `controller` is empty; on v1 it names the hierarchy
// ("memory", "cpu", "pids", ...).
struct Write {
  std::string controller;
  std::string file;
  std::string value;
  bool operator==(const Write&) const = default;
};

// ---- pure ----
std::vector<Write> v2_writes(const spec::Resources& r);
std::vector<Write> v1_writes(const spec::Resources& r);
uint64_t shares_to_weight(uint64_t shares);  // the runc/crun conversion
// The cgroup path (relative to each hierarchy's root, starting with '/')
// for linux.cgroupsPath: absolute stays, relative goes under /husk, absent -> /husk/<id>.
std::string resolve_path(const std::optional<std::string>& cgroups_path, const std::string& id);

struct Stats {
  uint64_t cpu_usage_ns = 0, cpu_user_ns = 0, cpu_system_ns = 0;
  uint64_t cpu_throttled_periods = 0, cpu_throttled_time_ns = 0;
  uint64_t memory_usage = 0, memory_limit = 0, memory_max_usage = 0, memory_failcnt = 0;
  uint64_t swap_usage = 0, swap_limit = 0;
  std::map<std::string, uint64_t> memory_raw;  // memory.stat
  uint64_t pids_current = 0, pids_limit = 0;   // limit 0 == max
  uint64_t oom_kill = 0;                        // memory.events oom_kill
  // blkio/hugetlb as runc's events --stats reports them
  struct IoEntry { int64_t major, minor; std::string op; uint64_t value; };
  std::vector<IoEntry> io_service_bytes, io_serviced;
  struct Hugetlb { uint64_t usage, max_usage, failcnt; };
  std::map<std::string, Hugetlb> hugetlb;
};

class Manager {
 public:
  virtual ~Manager() = default;
  // `path` as from resolve_path().
  static std::unique_ptr<Manager> open(const std::string& path, Mode mode);

  virtual const std::string& path() const = 0;
  // mkdir the cgroup(s), enabling needed controllers in ancestors (v2).
  virtual void create() = 0;
  virtual void apply(const spec::Resources& r) = 0;
  // An O_CLOEXEC directory fd for clone3 CLONE_INTO_CGROUP, or -1 when not possible (v1).
  virtual int clone_into_fd() = 0;
  virtual void add_process(pid_t pid) = 0;
  virtual void freeze() = 0;
  virtual void thaw() = 0;
  virtual bool frozen() = 0;
  virtual std::vector<pid_t> pids() = 0;
  virtual void kill_all(int sig) = 0;  // cgroup.kill for SIGKILL on v2 when present
  // Remove the cgroup(s); retries briefly while dying tasks leave. Missing dirs are fine.
  virtual void destroy() = 0;
  virtual Stats stats() = 0;
  // memory.events oom_kill (v2) / memory.oom_control (v1) counter, for `events`.
  virtual uint64_t oom_kills() = 0;
};

}  // namespace husk::cgroups
