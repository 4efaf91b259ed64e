// Pure translation of the spec's namespace, mount plan, propagation and
// sysctl settings. No syscalls here, so all of it is unit-testable without root.
#include <sched.h>
#include <sys/mount.h>

#include <array>
#include <span>
#include <string_view>

#include "namespaces/namespaces.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

namespace husk::ns {

// Also the setns order: the user namespace first so that the later joins are
// checked against the credentials it grants; mount last because once it is
// joined the other paths (usually /proc/<pid>/ns/*) may no longer resolve.
constexpr std::array<NamespaceKind, 8> kNsOrder{{
    {"user", CLONE_NEWUSER, "user"},
    {"ipc", CLONE_NEWIPC, "ipc"},
    {"uts", CLONE_NEWUTS, "uts"},
    {"network", CLONE_NEWNET, "net"},
    {"pid", CLONE_NEWPID, "pid"},
    {"cgroup", CLONE_NEWCGROUP, "cgroup"},
    {"time", CLONE_NEWTIME, "time"},
    {"mount", CLONE_NEWNS, "mnt"},
}};

std::span<const NamespaceKind> namespace_kinds() { return kNsOrder; }

int clone_flag(const std::string& type) {
  for (const auto& t : kNsOrder)
    if (t.type == type) return t.flag;
  throw Error("linux.namespaces: unknown namespace type \"" + type + "\"");
}

std::string proc_ns_file(const std::string& type) {
  for (const auto& t : kNsOrder)
    if (t.type == type) return std::string(t.proc_file);
  throw Error("linux.namespaces: unknown namespace type \"" + type + "\"");
}

NamespacePlan plan_namespaces(const spec::Linux& linux_cfg) {
  NamespacePlan plan;
  for (const auto& n : linux_cfg.namespaces) {
    int flag = clone_flag(n.type);
    if (n.path.empty())
      plan.clone_flags |= flag;
  }
  for (const auto& t : kNsOrder) {
    for (size_t i = 0; i < linux_cfg.namespaces.size(); ++i) {
      const auto& n = linux_cfg.namespaces[i];
      if (n.type == t.type && !n.path.empty()) plan.joins.push_back({n.type, n.path, t.flag, i});
    }
  }
  return plan;
}

std::string id_map_text(const std::vector<spec::IdMapping>& maps) {
  std::string out;
  for (const auto& m : maps)
    out += std::to_string(m.container_id) + " " + std::to_string(m.host_id) + " " +
           std::to_string(m.size) + "\n";
  return out;
}

std::string mount_what(size_t index, const spec::Mount& m) {
  return "mounts[" + std::to_string(index) + "] (" + m.destination + ")";
}

MountStep plan_mount(const spec::Mount& m, size_t index, const MountHost& host) {
  MountStep s;
  s.index = index;
  s.what = mount_what(index, m);
  if (m.destination.empty()) throw Error("mounts[" + std::to_string(index) + "].destination: must not be empty");
  s.destination = clean_path(m.destination);
  s.type = m.type;
  s.source = m.source;
  s.options = spec::parse_mount_options(m.options);
  s.real_directory = m.type == "proc" || m.type == "sysfs";
  bool bind = spec::is_bind(m);
  if (spec::is_idmapped(m)) {
    if (!bind) throw Error(s.what + ": idmap is only supported on bind mounts");
    s.kind = MountStep::Kind::Idmapped;
    return s;
  }
  if (bind) {
    s.kind = MountStep::Kind::Bind;
    return s;
  }
  if (m.type.empty()) throw Error(s.what + ": type is required for a non-bind mount");
  if ((m.type == "cgroup" || m.type == "cgroup2") && !host.own_cgroup) {
    // Its cgroup would be the caller's, other tenants' names and all: a
    // read-only empty directory instead (runc binds the caller's trees).
    s.type = s.source = "tmpfs";
    s.options.flags |= MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
    s.options.data = "mode=755";
    return s;
  }
  if (m.type == "cgroup") {
    if (host.cgroup_v1) {
      s.kind = MountStep::Kind::CgroupV1;
      s.cgroup_fresh = host.cgroup_ns;
      return s;
    }
    // A unified host: /sys/fs/cgroup is cgroup2 itself. v1 controller names
    // in the options would be invalid for it.
    s.type = "cgroup2";
    s.options.data.clear();
  }
  if (s.options.tmpcopyup && s.type != "tmpfs") throw Error(s.what + ": tmpcopyup is only for tmpfs mounts");
  // runc gives a tmpfs without mode= the mode of the directory it covers; one
  // husk has to make keeps tmpfs's own default (1777), as there.
  s.inherit_mode = s.type == "tmpfs" && ("," + s.options.data).find(",mode=") == std::string::npos;
  // A user namespace that does not own the network namespace may not mount
  // sysfs; runc shows the host's /sys instead.
  s.sysfs_fallback = s.type == "sysfs" && host.user_ns;
  if (s.source.empty()) s.source = s.type;
  return s;
}

std::vector<MountStep> plan_mounts(const spec::Spec& spec, const MountHost& host) {
  std::vector<MountStep> steps;
  for (size_t i = 0; i < spec.mounts.size(); ++i) steps.push_back(plan_mount(spec.mounts[i], i, host));
  return steps;
}

unsigned long rootfs_propagation_flag(const std::string& value) {
  // Like runc: by default the container's copy of the host mounts becomes a
  // recursive slave, so host mounts still show up but nothing flows back.
  if (value.empty()) return MS_SLAVE | MS_REC;
  // Only the eight propagation names set a propagation.
  if (unsigned long flag = spec::parse_mount_options({value}).propagation) return flag;
  throw Error("linux.rootfsPropagation: unknown value \"" + value + "\"");
}

std::string clean_path(const std::string& path) {
  std::vector<std::string_view> parts;
  std::string_view p = path;
  size_t i = 0;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    std::string_view c = p.substr(i, j - i);
    if (c == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!c.empty() && c != ".") {
      parts.push_back(c);
    }
    i = j + 1;
  }
  std::string out;
  for (auto c : parts) {
    out += '/';
    out += c;
  }
  return out.empty() ? "/" : out;
}

std::string sysctl_namespace(const std::string& key) {
  auto starts = [&](std::string_view pfx) { return key.compare(0, pfx.size(), pfx) == 0; };
  if (starts("net.")) return "network";
  if (starts("kernel.msg") || starts("kernel.sem") || starts("kernel.shm") ||
      starts("fs.mqueue."))
    return "ipc";
  if (key == "kernel.hostname" || key == "kernel.domainname") return "uts";
  return "";
}

void check_sysctl(const spec::Spec& spec) {
  if (!spec.linux_) return;
  const auto& l = *spec.linux_;
  for (const auto& [key, value] : l.sysctl) {
    std::string where = "linux.sysctl: \"" + key + "\"";
    if (key.empty() || key.front() == '.' || key.back() == '.' ||
        key.find("..") != std::string::npos || key.find('/') != std::string::npos ||
        key.find('\0') != std::string::npos)
      throw Error(where + " is not a valid sysctl name");
    std::string ns = sysctl_namespace(key);
    if (ns.empty())
      throw Error(where + " is not namespaced; refusing to change it for the whole host");
    if (!l.has_namespace(ns))
      throw Error(where + " needs its own " + ns + " namespace, but the container shares the host's");
  }
}

}  // namespace husk::ns
