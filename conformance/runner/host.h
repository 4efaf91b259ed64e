// What this host offers, for the cases' `requires:`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runner.h"

namespace conformance {

struct HostInfo {
  bool root = false;
  bool cgroup_v2 = false;  // unified hierarchy at /sys/fs/cgroup
  std::map<std::string, fs::path> v1_mounts;  // controller -> mount point
  std::vector<fs::path> cgroup_mounts;         // every cgroup/cgroup2 mount
  bool userns = false;
  bool timens = false;
  bool apparmor = false;
  bool selinux = false;
  bool resctrl = false;
  bool numa = false;
  bool shared_root = false;  // host "/" is a shared mount
  std::string machine;       // uname -m
  std::string oom_score_adj; // ours, inherited by the runtime

  static HostInfo probe();
  // Empty when `req` holds on this host, else the reason to skip.
  std::string missing(const std::string& req) const;
};

}  // namespace conformance
