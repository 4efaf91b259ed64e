// The Manager interface every driver implements (cgroupfs v2 and v1, systemd,
// none), the Config make_manager() builds one from, and the Stats it reads.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cgroups/host.h"
#include "spec/spec.h"

namespace husk::cgroups {

struct Stats {
  uint64_t cpu_usage_ns = 0, cpu_user_ns = 0, cpu_system_ns = 0;
  uint64_t cpu_throttled_periods = 0, cpu_throttled_time_ns = 0;
  // Limits read "max" on v2 are UINT64_MAX; v1 reports its own huge number.
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

// How a container's cgroup is managed. cgroupfs: directories in the
// hierarchies; none: no cgroup at all (e.g. rootless without delegation):
// limits, freeze, pids, kill_all, stats and oom_kills throw naming why;
// systemd: a transient scope unit systemd makes (cgroups/systemd.h), its
// files written as cgroupfs writes them.
enum class Driver { cgroupfs, none, systemd };

// What make_manager() needs, for a new container or one recorded earlier.
struct Config {
  std::string path;  // as from resolve_path(); unused by Driver::none
  Driver driver = Driver::cgroupfs;
  std::string container_id;
  // Recorded from an earlier prepare(): its handle ("" in a state.json from
  // before handles) and the cgroups it made (for destroy()).
  std::string handle;
  std::vector<std::string> created;
  // prepare() marks every directory it makes with the xattr owner_xattr =
  // owner; owned() and destroy() trust only directories with that mark, so a
  // record naming someone else's cgroup (a planted state.json, a config's
  // cgroupsPath of an existing one) never gets it emptied or removed.
  // trusted.* needs CAP_SYS_ADMIN: nobody else can forge it. The runtime's
  // owner is the container id.
  // Rootless: user.husk.owner instead (nobody can set trusted.* without
  // CAP_SYS_ADMIN on the host, and a user.* mark is forgeable by whoever can
  // write the directory), so a mark only counts on a directory owned by the
  // caller's euid.
  std::string owner;
  std::string owner_xattr = "trusted.husk.owner";
  // A cgroup in a subtree delegated to an unprivileged caller (v2 only): the
  // controllers are enabled where the caller may (elsewhere they stay off, and
  // a limit needing one fails naming its field); no device program (loading
  // one needs CAP_SYS_ADMIN on the host: host device permissions apply, and a
  // user namespace refuses mknod), said on `debug`.
  bool rootless = false;
  std::string none_reason;  // Driver::none: why the container has no cgroup
  // Where the drivers say what the caller should know (once: why there is no cgroup).
  std::function<void(const std::string&)> log;
  std::function<void(const std::string&)> debug;  // what only --debug shows
  std::optional<Hierarchies> hierarchies;  // nullopt: host_hierarchies(); tests give a fake tree
  // Driver::systemd, new container: the scope and its slice (systemd_unit());
  // `path` is where the system manager puts it, replaced by systemd's answer
  // once started. A recorded one is known by its handle ("systemd:<unit>",
  // "systemd-user:<unit>"). user_manager: the caller's own systemd (the
  // user bus), for an unprivileged caller. bridge: husk-systemd's path.
  std::string unit, slice;
  bool user_manager = false;
  std::string bridge;
};

class Manager {
 public:
  virtual ~Manager() = default;

  virtual const std::string& path() const = 0;
  // Before the container's init exists: mkdir the cgroup(s), enabling needed
  // controllers in ancestors (v2). When it throws, what it made is removed
  // again. Returns the driver's handle for the container record, given back
  // as Config::handle when the container is managed again (cgroupfs: the path).
  virtual std::string prepare() = 0;
  // Write the limits. An empty r.devices leaves the device policy as it is
  // (so `update` does not reset it); pass effective_device_rules() at create.
  // v2: devices become an eBPF program replacing the previous husk one.
  // memory.checkBeforeUpdate: refuse a limit below the current usage.
  virtual void apply(const spec::Resources& r) = 0;
  // An O_CLOEXEC directory fd for clone3 CLONE_INTO_CGROUP: the cgroup (v2)
  // or its unified part (hybrid); -1 when there is none (v1). The caller owns
  // and closes it.
  virtual int clone_into_fd() = 0;
  // With the pid: move that process into the cgroup(s). `cloned_into`: it was
  // made by clone3 into clone_into_fd(), which needs no further move.
  virtual void attach(pid_t pid, bool cloned_into) = 0;
  // What attach(getpid(), cloned_into) does, by the process itself, which
  // must be single-threaded and have prepare()'s privileges (no user
  // namespace of its own yet). A pid written to cgroup.procs waits for an RCU
  // grace period (the host-wide cgroup_threadgroup_rwsem; 7-15 ms measured
  // on v1 when no other move ran just before), a thread writing 0 to a v1
  // `tasks` file does not.
  virtual void attach_self(bool cloned_into) = 0;
  // False when only attach() can place a process (systemd moves the init
  // into the scope it starts for it).
  virtual bool self_attachable() const { return true; }
  virtual void freeze() = 0;
  virtual void thaw() = 0;
  virtual bool frozen() = 0;
  // Every process in the cgroup and its descendants (recursive), from cgroup.procs.
  virtual std::vector<pid_t> pids() = 0;
  // cgroup.kill for SIGKILL on v2 when present; otherwise freeze, signal every
  // pid(), thaw (unless it was frozen already). No-op when the cgroup is gone.
  virtual void kill_all(int sig) = 0;
  // Remove the cgroup(s) with any sub-cgroups the container made; retries for
  // ~1 s while dying tasks leave (then throws EBUSY). Missing dirs are fine.
  // Only created() directories carrying the owner's mark are removed.
  virtual void destroy() = 0;
  // Values the kernel would never write (not a number) throw an Error naming the file.
  virtual Stats stats() = 0;
  // memory.events oom_kill (v2) / memory.oom_control (v1) counter, for `events`.
  virtual uint64_t oom_kills() = 0;
  // The cgroup paths (as path()) that prepare() made, outermost first;
  // destroy() removes the leaf plus these ancestors when empty. A later
  // process (husk delete) passes them back as Config::created.
  virtual std::vector<std::string> created() const = 0;
  // The leaf carries Config::owner's mark wherever it exists, in at least one
  // hierarchy (v1: every controller's, plus the unified one on hybrid hosts;
  // a create killed midway or a destroy stopped by EBUSY leaves it in some
  // only, and a missing directory holds nobody). none: false.
  virtual bool owned() const = 0;
};

// The manager for config.driver; cgroupfs picks v2 or v1 by the hierarchies'
// mode. Throws for a path resolve_path() would not give, or a handle that
// is not the driver's.
std::unique_ptr<Manager> make_manager(const Config& config);

}  // namespace husk::cgroups
