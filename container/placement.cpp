#include "container/placement.h"

#include "cgroups/host.h"

namespace husk::rt {

CgroupPlace place_cgroup_on(const cgroups::RootlessHost& host, const Context& g,
                            const std::optional<std::string>& cgroups_path, const std::string& id,
                            const std::string& no_cgroup_reason) {
  CgroupPlace p;
  if (!no_cgroup_reason.empty()) {
    p.none_reason = no_cgroup_reason;
  } else if (g.systemd_cgroup) {
    p.unit = cgroups::systemd_unit(cgroups_path, id, g.rootless);
    p.path = p.unit->cgroup;
  } else if (g.rootless) {
    auto choice = cgroups::choose_rootless(host, cgroups_path, id);
    p.path = choice.path;
    p.none_reason = choice.none_reason;
  } else {
    p.path = cgroups::resolve_path(cgroups_path, id);
  }
  return p;
}

CgroupPlace place_cgroup(const Context& g, const std::optional<std::string>& cgroups_path, const std::string& id,
                         const std::string& no_cgroup_reason) {
  const bool probe = g.rootless && !g.systemd_cgroup && no_cgroup_reason.empty();
  return place_cgroup_on(probe ? cgroups::rootless_host() : cgroups::RootlessHost{}, g, cgroups_path, id,
                         no_cgroup_reason);
}

}  // namespace husk::rt
