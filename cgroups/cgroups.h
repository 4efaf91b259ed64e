// Cgroup management: one Manager interface made by make_manager() from a
// Config: cgroupfs v2 (unified) and v1 (legacy/hybrid), or none.
// Translation of linux.resources to file writes is pure.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "spec/spec.h"

namespace husk::cgroups {

enum class Mode { unified, hybrid, legacy };

// Where a host's cgroup hierarchies are. unified: cgroup2 at the root;
// hybrid: v1 controllers plus cgroup2 at <root>/unified (v1 controllers are
// used; the unified hierarchy gets the same path and serves controllers only
// it has); legacy: v1 only.
struct Hierarchies {
  Mode mode = Mode::unified;
  std::string unified;                    // cgroup2 mount point; "" when legacy
  std::map<std::string, std::string> v1;  // v1 controller (and name=systemd) -> mount point
};
// This host's: statfs /sys/fs/cgroup and /sys/fs/cgroup/unified, the v1
// mounts from /proc/self/mountinfo; read once per process (`list` opens a
// manager for every container).
const Hierarchies& host_hierarchies();
Mode detect_mode();  // host_hierarchies().mode

// One file write: on v2 `controller` is empty; on v1 it names the hierarchy
// ("memory", "cpu", "pids", ...).
struct Write {
  std::string controller;
  std::string file;
  std::string value;
  bool operator==(const Write&) const = default;
};

// ---- pure ----
// Translate linux.resources to the writes, in the order they must happen.
// Invalid values throw Error naming the field ("linux.resources.memory.limit: ...").
// Devices are not part of v2_writes (they become an eBPF program, see below);
// v1_writes includes devices.deny/devices.allow when r.devices is non-empty.
// Values 0 for memory limit/reservation/swap, cpu shares/period/quota and
// blockIO weight mean "unset", as runc treats them.
// Ignored (documented) as runc does: memory.kernel everywhere (removed from
// the kernel); on v2 memory.kernelTCP, swappiness, disableOOMKiller,
// useHierarchy and network (v2 has no such knobs). Rejected on v2:
// cpu.realtime*, blockIO.leafWeight; on v1: unified.
// cpu.period without cpu.quota writes "max <period>" on v2 as runc does, so
// `update` should pass the stored quota along with a new period.
// `bfq_weight`: io.bfq.weight exists, so blockIO weights go there unconverted
// instead of io.weight.
std::vector<Write> v2_writes(const spec::Resources& r, bool bfq_weight = false);
std::vector<Write> v1_writes(const spec::Resources& r);
// runc's linear conversion: 1 + ((shares - 2) * 9999) / 262142, shares
// clamped to the kernel's [2, 262144] first; 0 -> 0 (unset).
uint64_t shares_to_weight(uint64_t shares);
// runc's blkio (10..1000) -> io.weight (1..10000): 1 + (w - 10) * 9999 / 990; 0 -> 0.
uint64_t blkio_weight_to_io_weight(uint64_t weight);
// memory.swap.max for OCI swap (= memory + swap, v1 semantics) and limit:
// swap - limit, "max" for -1 (or absent swap with limit -1); nullopt: leave unset.
std::optional<std::string> v2_swap_max(std::optional<int64_t> limit, std::optional<int64_t> swap);
// A linux.resources.unified key must be "<controller>.<file>" naming a file
// directly inside the cgroup; throws Error naming the key otherwise.
void validate_unified_key(const std::string& key);
// Parse a cpuset list ("0-3,7"); throws Error prefixed with `field` when malformed.
std::vector<unsigned> parse_cpu_list(const std::string& list, const std::string& field);
// cpu.cpus/cpu.mems against the online CPU / memory-node lists (same syntax).
void check_cpuset(const spec::Resources& r, const std::string& cpus_online,
                  const std::string& mems_online);
// ---- not pure: reads /sys/devices/system/{cpu,node}/online ----
void check_host(const spec::Resources& r);

// ---- devices ----
// runc's default allow list (mknod of any c/b, null zero full tty random
// urandom ptmx /dev/pts/*, /dev/net/tun), appended after the spec's rules.
// Not 5:1: that would open the host's console (a terminal's /dev/console is
// its pts).
std::vector<spec::DeviceRule> default_device_rules();
// The rules a container gets: a leading deny-all, linux.resources.devices in
// order, an rwm allow for each linux.devices entry, then default_device_rules().
std::vector<spec::DeviceRule> effective_device_rules(const std::vector<spec::DeviceRule>& resources_devices,
                                                      const std::vector<spec::Device>& linux_devices);
// The semantic both backends implement: per requested access bit, the last
// rule that matches the device and contains that bit decides; no rule: deny.
// type 'c' or 'b'; access a subset of "rwm". Empty rule access means "rwm",
// negative/absent major/minor and type 'a' are wildcards. (v1 kernels treat an
// "a" rule as all access whatever its access string; configs use "rwm" there.)
bool device_allowed(const std::vector<spec::DeviceRule>& rules, char type, int64_t major,
                    int64_t minor, const std::string& access);
// One eBPF instruction, layout-identical to the kernel's struct bpf_insn.
struct BpfInsn {
  uint8_t code;
  uint8_t dst_reg : 4;
  uint8_t src_reg : 4;
  int16_t off;
  int32_t imm;
};
// BPF_PROG_TYPE_CGROUP_DEVICE program implementing device_allowed() for `rules`.
std::vector<BpfInsn> device_filter_program(const std::vector<spec::DeviceRule>& rules);
// The cgroup path (relative to each hierarchy's root, starting with '/')
// for linux.cgroupsPath: absolute stays, relative goes under /husk, absent -> /husk/<id>.
// ".." components are rejected ("linux.cgroupsPath: ..."); "." and "//" are normalised.
std::string resolve_path(const std::optional<std::string>& cgroups_path, const std::string& id);

// ---- rootless (pure) ----
// The fields of linux.resources that ask for a limit, in spec order
// ("linux.resources.pids.limit", "linux.resources.unified[\"io.max\"]"):
// what a container without a cgroup must refuse. Unset and "unset" values
// (0 for memory limit, cpu shares, ...) ask for nothing; devices and
// memory.kernel (ignored everywhere) are no limit here.
std::vector<std::string> limit_fields(const spec::Resources& r);
// The v2 controllers v2_writes(r) needs, each after the field needing it
// (field, controller), first field first.
std::vector<std::pair<std::string, std::string>> v2_controllers(const spec::Resources& r);
// Each requested limit's controller is in `available` (the cgroup's
// cgroup.controllers), else an Error naming the field, the controller and
// `cgroup`: in a delegated subtree only the delegated controllers exist.
void check_delegated(const spec::Resources& r, const std::set<std::string>& available, const std::string& cgroup);

// What a rootless caller may do with a cgroup path (as resolve_path gives it).
// writable: it may make cgroups in it and write its cgroup.procs, as
// systemd's Delegate=yes (a chown of the directory and those files) allows.
enum class Access { missing, writable, not_writable };
struct RootlessHost {
  Mode mode = Mode::unified;
  std::string own;  // the caller's cgroup (the "0::" line of /proc/self/cgroup); "" unknown
  uid_t uid = 0;    // the caller's euid, for messages
  std::function<Access(const std::string&)> access;
};
// This process's: host_hierarchies().mode, /proc/self/cgroup, geteuid(),
// faccessat(AT_EACCESS) on the unified hierarchy.
RootlessHost rootless_host();
// A rootless container's cgroup: path "" and a reason when it gets none.
struct RootlessChoice {
  std::string path;
  std::string none_reason;
};
// The rule (runc's for relative paths): cgroupsPath absent -> a sibling of
// the caller's own cgroup, <parent of own>/<id>; relative -> <parent of
// own>/<path>; absolute -> as given. The caller must be able to write the
// deepest existing directory on the way and the cgroup.procs of the common
// ancestor of its own cgroup and the leaf (the kernel's rule for moving the
// init there), and the leaf must be neither its own cgroup, nor an ancestor,
// nor below it (that one holds processes: no controller could be enabled).
// Not met, or not a cgroup v2 host: with cgroupsPath absent the container
// gets no cgroup (the reason says why), a given cgroupsPath is an Error
// naming linux.cgroupsPath, as runc and crun refuse it.
RootlessChoice choose_rootless(const RootlessHost& host, const std::optional<std::string>& cgroups_path,
                               const std::string& id);

// True when a directory for `path` exists in any hierarchy a manager for it uses.
bool exists(const std::string& path, const Hierarchies& h = host_hierarchies());
// True when `path` is "/" or holds the calling process (itself or an ancestor
// of its cgroup) in any hierarchy: emptying or removing it would hit husk.
bool contains_self(const std::string& path);
// The cgroup v2 path ("0::" line) of /proc/<pid>/cgroup; "" when it has none.
std::string unified_cgroup_of(pid_t pid);
// pid's cgroup in the hierarchies husk manages (/proc/<pid>/cgroup); "" when
// it has none there or they differ.
std::string cgroup_of(pid_t pid, const Hierarchies& h = host_hierarchies());
// True when /proc/<pid>/cgroup puts pid at `path` or below it in every
// hierarchy husk manages.
bool process_in(pid_t pid, const std::string& path, const Hierarchies& h = host_hierarchies());

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
