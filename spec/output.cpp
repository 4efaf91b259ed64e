// state and features JSON as runc prints them (keys in runc's order).
#include <nlohmann/json.hpp>

#include "spec/spec.h"

namespace husk::spec {

using ojson = nlohmann::ordered_json;

namespace {

// Paths need not be UTF-8; never fail to print a state because of one.
std::string dump(const ojson& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

std::string state_to_json(const State& s, bool pretty) {
  ojson j = {
      {"ociVersion", s.oci_version}, {"id", s.id},         {"pid", s.pid},
      {"status", s.status},          {"bundle", s.bundle}, {"rootfs", s.rootfs},
      {"created", s.created},        {"owner", s.owner},
  };
  if (!s.annotations.empty()) j["annotations"] = s.annotations;
  return dump(j, pretty ? 2 : -1);
}

std::string features_to_json(const Features& f) {
  ojson linux_cfg = {
      {"namespaces", f.namespaces},
      {"capabilities", f.capabilities},
      {"cgroup",
       {{"v1", f.cgroup_v1},
        {"v2", f.cgroup_v2},
        {"systemd", f.cgroup_systemd},
        {"systemdUser", f.cgroup_systemd_user},
        {"rdma", f.cgroup_rdma}}},
      {"seccomp",
       {{"enabled", f.seccomp_enabled},
        {"actions", f.seccomp_actions},
        {"operators", f.seccomp_operators},
        {"archs", f.seccomp_archs},
        {"knownFlags", f.seccomp_known_flags},
        {"supportedFlags", f.seccomp_supported_flags}}},
      {"apparmor", {{"enabled", f.apparmor}}},
      {"selinux", {{"enabled", f.selinux}}},
      {"intelRdt", {{"enabled", f.intel_rdt}}},
      {"mountExtensions", {{"idmap", {{"enabled", f.mount_extensions_idmap}}}}},
  };
  ojson j = {
      {"ociVersionMin", f.oci_version_min},
      {"ociVersionMax", f.oci_version_max},
      {"hooks", f.hooks},
      {"mountOptions", f.mount_options},
      {"linux", linux_cfg},
      {"annotations", f.annotations},
  };
  return dump(j, 2) + "\n";
}

}  // namespace husk::spec
