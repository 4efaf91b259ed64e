// Helpers shared by the cgroups sources; not part of the library's interface.
#pragma once

#include <string>
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

}  // namespace husk::cgroups
