// Helpers shared by the cgroups sources; not part of the library's interface.
#pragma once

#include <string>
#include <vector>

#include "cgroups/cgroups.h"

namespace husk::cgroups {

// "c 1:3 rwm" / "a" as devices.allow and devices.deny take it.
std::string device_rule_v1(const spec::DeviceRule& rule, const std::string& field);

// Load device_filter_program(rules), attach it to the cgroup directory fd with
// BPF_F_ALLOW_MULTI, then detach the husk programs that were attached before.
void attach_device_filter(int cgroup_fd, const std::string& cgroup_dir,
                          const std::vector<spec::DeviceRule>& rules);

}  // namespace husk::cgroups
