#include "host.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <sstream>

#include "base/error.h"
#include "base/file.h"
#include "base/mountinfo.h"

namespace conformance {

using husk_test::trim;

namespace {

std::string read_or_empty(const std::string& path) {
  try {
    return husk::base::try_read_file(path).value_or("");
  } catch (const husk::Error&) {
    return "";
  }
}

// The cgroup hierarchies, resctrl and the propagation of "/".
void probe_mounts(HostInfo& h) {
  for (const auto& m : husk::base::read_mountinfo()) {
    if (m.mount_point == "/" && (" " + m.optional).find(" shared:") != std::string::npos) h.shared_root = true;
    if (m.fstype == "resctrl") h.resctrl = true;
    if (m.fstype == "cgroup" || m.fstype == "cgroup2") h.cgroup_mounts.push_back(m.mount_point);
    if (m.fstype != "cgroup") continue;
    std::istringstream so(m.super_options);
    for (std::string o; std::getline(so, o, ',');)
      if (o != "rw" && o != "ro" && o.find('=') == std::string::npos) h.v1_mounts.emplace(o, m.mount_point);
  }
}

}  // namespace

HostInfo HostInfo::probe() {
  HostInfo h;
  h.root = ::geteuid() == 0;
  h.cgroup_v2 = fs::exists("/sys/fs/cgroup/cgroup.controllers");
  probe_mounts(h);
  auto max_userns = read_or_empty("/proc/sys/user/max_user_namespaces");
  h.userns = fs::exists("/proc/self/ns/user") && !max_userns.empty() && trim(max_userns) != "0";
  h.timens = fs::exists("/proc/self/timens_offsets");
  h.apparmor = trim(read_or_empty("/sys/module/apparmor/parameters/enabled")) == "Y";
  h.selinux = fs::exists("/sys/fs/selinux/enforce");
  h.numa = fs::exists("/proc/self/numa_maps") && fs::exists("/sys/devices/system/node/node0");
  struct utsname u;
  if (::uname(&u) == 0) h.machine = u.machine;
  h.oom_score_adj = trim(read_or_empty("/proc/self/oom_score_adj"));
  return h;
}

std::string HostInfo::missing(const std::string& req) const {
  if (req == "root") return root ? "" : "needs root";
  if (req == "cgroup-v2") return cgroup_v2 ? "" : "host cgroups are not unified (v2)";
  if (req == "cgroup-v1") return cgroup_v2 ? "host cgroups are unified (v2), not v1" : "";
  if (req.rfind("cgroup-v1:", 0) == 0) {
    auto ctrl = req.substr(10);
    if (cgroup_v2) return "host cgroups are unified (v2), not v1";
    return v1_mounts.count(ctrl) ? "" : "cgroup v1 controller " + ctrl + " is not mounted";
  }
  if (req.rfind("cgroup-controller:", 0) == 0) {
    // The controller the runtime would use on this host: v1 mount, or enabled in v2.
    auto ctrl = req.substr(18);
    if (!cgroup_v2) return v1_mounts.count(ctrl) ? "" : "cgroup v1 controller " + ctrl + " is not mounted";
    std::istringstream in(read_or_empty("/sys/fs/cgroup/cgroup.controllers"));
    for (std::string c; in >> c;)
      if (c == ctrl) return "";
    return "cgroup v2 controller " + ctrl + " is not available";
  }
  if (req.rfind("file:", 0) == 0) {
    auto p = req.substr(5);
    return fs::exists(p) ? "" : p + " does not exist on this host";
  }
  if (req == "userns") return userns ? "" : "user namespaces are not available";
  if (req == "timens") return timens ? "" : "no time namespace (/proc/self/timens_offsets missing)";
  if (req == "apparmor") return apparmor ? "" : "AppArmor is not enabled";
  if (req == "selinux") return selinux ? "" : "SELinux is not enabled";
  if (req == "no-apparmor") return apparmor ? "AppArmor is enabled" : "";
  if (req == "no-selinux") return selinux ? "SELinux is enabled" : "";
  if (req == "resctrl") return resctrl ? "" : "no resctrl filesystem mounted";
  if (req == "no-resctrl") return resctrl ? "a resctrl filesystem is mounted" : "";
  if (req == "numa") return numa ? "" : "no NUMA support (/proc/self/numa_maps)";
  if (req == "shared-root") return shared_root ? "" : "host / is not a shared mount, so propagation cannot be observed";
  if (req == "x86_64") return machine == "x86_64" ? "" : "host is " + machine + ", not x86_64";
  if (req.rfind("env:", 0) == 0) {
    auto v = req.substr(4);
    const char* e = std::getenv(v.c_str());
    return (e && *e) ? "" : "opt-in: set " + v + "=1 to run";
  }
  if (req.rfind("cmd:", 0) == 0) {
    auto c = req.substr(4);
    for (auto d : {"/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/"})
      if (::access((std::string(d) + c).c_str(), X_OK) == 0) return "";
    return "host command " + c + " not found";
  }
  throw SuiteError("unknown requirement '" + req + "'");
}

}  // namespace conformance
