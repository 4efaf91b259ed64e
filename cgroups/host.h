// Where this host's cgroup hierarchies are, and where a process or a cgroup
// path is in them (/proc/<pid>/cgroup, /proc/self/mountinfo, statfs).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>

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

}  // namespace husk::cgroups
