// A container of an unprivileged caller: which limits it asks for, which
// controllers they need, and which cgroup (if any) it may have. Pure apart
// from rootless_host().
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cgroups/host.h"
#include "spec/spec.h"

namespace husk::cgroups {

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

}  // namespace husk::cgroups
