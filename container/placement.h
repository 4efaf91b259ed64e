// Where a container's cgroup goes, decided once for create and for a
// delete that has only config.json left: pure, so it is tested without root.
#pragma once

#include <optional>
#include <string>

#include "cgroups/rootless.h"
#include "cgroups/systemd.h"
#include "container/context.h"

namespace husk::rt {

struct CgroupPlace {
  std::string path;                         // the cgroup; "" when the container gets none
  std::optional<cgroups::SystemdUnit> unit;  // --systemd-cgroup: the scope (path is where systemd will put it)
  std::string none_reason;                  // why there is no cgroup (rootless without a delegated subtree)
};

// cgroupfs: resolve_path of cgroupsPath; --systemd-cgroup: the scope's unit,
// the user's own systemd when rootless; rootless cgroupfs: a delegated subtree
// of `host` (cgroups::choose_rootless) or none, with the reason.
// `no_cgroup_reason` (husk sandbox without limits, or without a cgroup tree) means none.
CgroupPlace place_cgroup_on(const cgroups::RootlessHost& host, const Context& g,
                            const std::optional<std::string>& cgroups_path, const std::string& id,
                            const std::string& no_cgroup_reason);
// The same on this host (rootless_host() only when a rootless choice needs it).
CgroupPlace place_cgroup(const Context& g, const std::optional<std::string>& cgroups_path, const std::string& id,
                         const std::string& no_cgroup_reason);

}  // namespace husk::rt
