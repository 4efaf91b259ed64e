#include "container/internal.h"

#include <sstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "cgroups/cgroups.h"
#include "checkpoint/criu.h"
#include "container/operator_policy.h"
#include "container/state.h"
#include "launch/host_objects.h"
#include "launch/lsm.h"
#include "launch/self_exe.h"
#include "policy/policy.h"
#include "seccomp/seccomp.h"
#include "spec/defaults.h"
#include "spec/mount_options.h"

namespace husk::rt {

int cmd_spec(const std::string& bundle, const spec::ConfigDefaults& d) {
  std::string path = bundle + "/config.json";
  if (::access(path.c_str(), F_OK) == 0) throw Error("File " + path + " exists. Remove it first");
  base::write_file_atomic(path, spec::default_config_json(d), 0644);
  return 0;
}

CheckResult check_bundle(const Context& g, const std::string& bundle, const std::string& policy_arg) {
  std::string arg = policy_arg.empty() ? operator_policy(g) : policy_arg;
  policy::Policy policy = policy::load_policy(arg.empty() ? "baseline" : arg);
  spec::Spec spec = spec::load_bundle(bundle);
  const std::string dir = absolute_dir(bundle, "bundle");
  // As create judges them, from the objects opened; one that cannot be opened is judged as written.
  const HostObjects host = open_host_objects(spec, dir, false);
  return {policy.name, policy::evaluate(spec, policy, dir, host.probe())};
}

spec::Features runtime_features() {
  spec::Features f;
  f.oci_version_max = "1.3.0";
  f.hooks = {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"};
  f.mount_options = spec::known_mount_options();
  f.namespaces = spec::known_namespaces();
  f.capabilities = spec::known_capabilities();
  auto mode = cgroups::detect_mode();
  f.cgroup_v1 = mode != cgroups::Mode::unified;
  f.cgroup_v2 = mode != cgroups::Mode::legacy;
  f.cgroup_rdma = true;
  // Built in, and its sd-bus helper installed with husk.
  f.cgroup_systemd = f.cgroup_systemd_user = ::access(companion_path("husk-systemd").c_str(), X_OK) == 0;
  f.mount_extensions_idmap = true;
  // checkpoint/restore need husk's CRIU bridge (built with libcriu) and criu itself.
  f.annotations["org.husk.checkpoint"] =
      ::access(companion_path("husk-criu").c_str(), X_OK) != 0 ? "not built (no libcriu at build time)"
      : ckpt::criu_in_path()                                ? "criu"
                                                               : "needs criu (not in PATH)";
  // features-linux.md: the runtime's support, "irrelevant to the availability
  // of AppArmor [SELinux] on the host"; what this host enforces is an annotation.
  f.apparmor = f.selinux = true;
  const lsm::HostLsm host = lsm::probe_host();
  f.annotations["org.husk.apparmor.host"] = host.apparmor ? "enabled" : "not enabled";
  f.annotations["org.husk.selinux.host"] = host.selinux ? "enabled" : "not enabled";
  // features.md has no field for these; annotations carry what was found.
  f.annotations["org.husk.cgroup.mode"] = mode == cgroups::Mode::unified  ? "unified"
                                          : mode == cgroups::Mode::hybrid ? "hybrid"
                                                                          : "legacy";
  std::string controllers;
  try {
    std::istringstream lines(base::read_file("/proc/cgroups"));
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream cols(line);
      std::string name, hierarchy, count, enabled;
      if (cols >> name >> hierarchy >> count >> enabled && name[0] != '#' && enabled == "1")
        controllers += (controllers.empty() ? "" : ",") + name;
    }
  } catch (const Error&) {
  }
  f.annotations["org.husk.cgroup.controllers"] = controllers;
  f.seccomp_enabled = true;
  f.seccomp_actions = seccomp::known_actions();
  f.seccomp_operators = seccomp::known_operators();
  f.seccomp_archs = seccomp::known_archs();
  f.seccomp_known_flags = seccomp::known_flags();
  f.seccomp_supported_flags = seccomp::supported_flags();
  return f;
}

}  // namespace husk::rt
