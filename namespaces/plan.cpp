// Pure translation of the spec's namespace, mount (options and plan), propagation and
// sysctl settings. No syscalls here, so all of it is unit-testable without root.
#include <sched.h>
#include <sys/mount.h>

#include <algorithm>
#include <array>
#include <functional>
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

namespace {

struct FlagOpt {
  std::string_view name;
  bool clear;
  unsigned long flag;
};
constexpr FlagOpt kFlagOpts[] = {
    {"defaults", false, 0},
    {"ro", false, MS_RDONLY},
    {"rw", true, MS_RDONLY},
    {"nosuid", false, MS_NOSUID},
    {"suid", true, MS_NOSUID},
    {"nodev", false, MS_NODEV},
    {"dev", true, MS_NODEV},
    {"noexec", false, MS_NOEXEC},
    {"exec", true, MS_NOEXEC},
    {"sync", false, MS_SYNCHRONOUS},
    {"async", true, MS_SYNCHRONOUS},
    {"dirsync", false, MS_DIRSYNC},
    {"remount", false, MS_REMOUNT},
    {"mand", false, MS_MANDLOCK},
    {"nomand", true, MS_MANDLOCK},
    {"noatime", false, MS_NOATIME},
    {"atime", true, MS_NOATIME},
    {"nodiratime", false, MS_NODIRATIME},
    {"diratime", true, MS_NODIRATIME},
    {"relatime", false, MS_RELATIME},
    {"norelatime", true, MS_RELATIME},
    {"strictatime", false, MS_STRICTATIME},
    {"nostrictatime", true, MS_STRICTATIME},
    {"lazytime", false, MS_LAZYTIME},
    {"nolazytime", true, MS_LAZYTIME},
    {"iversion", false, MS_I_VERSION},
    {"noiversion", true, MS_I_VERSION},
    {"silent", false, MS_SILENT},
    {"loud", true, MS_SILENT},
    {"nosymfollow", false, MS_NOSYMFOLLOW},
    {"symfollow", true, MS_NOSYMFOLLOW},
};

struct PropOpt {
  std::string_view name;
  unsigned long flag;
};
constexpr PropOpt kPropOpts[] = {
    {"shared", MS_SHARED},          {"rshared", MS_SHARED | MS_REC},
    {"slave", MS_SLAVE},            {"rslave", MS_SLAVE | MS_REC},
    {"private", MS_PRIVATE},        {"rprivate", MS_PRIVATE | MS_REC},
    {"unbindable", MS_UNBINDABLE},  {"runbindable", MS_UNBINDABLE | MS_REC},
};

struct AttrOpt {
  std::string_view name;
  uint64_t set;
  uint64_t clr;
};
// Recursive mount_setattr(2) attributes. The atime modes are one field in the
// kernel (relatime is 0), so changing it must clear the whole MOUNT_ATTR__ATIME
// mask; "ratime"/"rnostrictatime" go back to the kernel default, relatime.
constexpr AttrOpt kAttrOpts[] = {
    {"rro", MOUNT_ATTR_RDONLY, 0},
    {"rrw", 0, MOUNT_ATTR_RDONLY},
    {"rnosuid", MOUNT_ATTR_NOSUID, 0},
    {"rsuid", 0, MOUNT_ATTR_NOSUID},
    {"rnodev", MOUNT_ATTR_NODEV, 0},
    {"rdev", 0, MOUNT_ATTR_NODEV},
    {"rnoexec", MOUNT_ATTR_NOEXEC, 0},
    {"rexec", 0, MOUNT_ATTR_NOEXEC},
    {"rnodiratime", MOUNT_ATTR_NODIRATIME, 0},
    {"rdiratime", 0, MOUNT_ATTR_NODIRATIME},
    {"rrelatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME},
    {"rnorelatime", 0, MOUNT_ATTR_RELATIME},
    {"rnoatime", MOUNT_ATTR_NOATIME, MOUNT_ATTR__ATIME},
    {"ratime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME},
    {"rstrictatime", MOUNT_ATTR_STRICTATIME, MOUNT_ATTR__ATIME},
    {"rnostrictatime", MOUNT_ATTR_RELATIME, MOUNT_ATTR__ATIME},
    {"rnosymfollow", MOUNT_ATTR_NOSYMFOLLOW, 0},
    {"rsymfollow", 0, MOUNT_ATTR_NOSYMFOLLOW},
};

}  // namespace

MountOptions parse_mount_options(const std::vector<std::string>& options) {
  MountOptions mo;
  for (const auto& o : options) {
    if (o == "bind") {
      mo.bind = true;
      continue;
    }
    if (o == "rbind") {
      mo.bind = mo.recursive_bind = true;
      continue;
    }
    if (o == "idmap" || o == "ridmap") {
      mo.recursive_idmap = o == "ridmap";
      continue;
    }
    if (o == "tmpcopyup") {
      mo.tmpcopyup = true;
      continue;
    }
    bool done = false;
    for (const auto& f : kFlagOpts) {
      if (f.name != o) continue;
      if (f.clear)
        mo.flags &= ~f.flag;
      else
        mo.flags |= f.flag;
      done = true;
      break;
    }
    for (const auto& p : kPropOpts) {
      if (done || p.name != o) continue;
      mo.propagation = p.flag;
      done = true;
    }
    for (const auto& a : kAttrOpts) {
      if (done || a.name != o) continue;
      // A later option overrides an earlier one for the same attribute.
      mo.attr_set &= ~(a.clr | a.set);
      mo.attr_clr &= ~a.set;
      mo.attr_set |= a.set;
      mo.attr_clr |= a.clr;
      done = true;
    }
    if (done) continue;
    if (!mo.data.empty()) mo.data += ',';
    mo.data += o;
  }
  return mo;
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
  s.options = parse_mount_options(m.options);
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
  for (const auto& p : kPropOpts)
    if (p.name == value) return p.flag;
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

namespace {

// Calls `dir` with each host directory an overlay data string names and
// returns the string with what it answered in their place.
std::string map_overlay_layers(const std::string& data, const std::function<std::string(const std::string&)>& dir) {
  std::string out;
  size_t start = 0;
  while (start <= data.size()) {
    size_t comma = data.find(',', start);
    if (comma == std::string::npos) comma = data.size();
    std::string o = data.substr(start, comma - start);
    const size_t eq = o.find('=');
    const std::string key = eq == std::string::npos ? "" : o.substr(0, eq);
    if (key == "lowerdir" || key == "lowerdir+" || key == "upperdir" || key == "workdir" || key == "datadir+") {
      std::string dirs = key + "=";
      size_t from = eq + 1;
      while (from <= o.size()) {
        size_t colon = o.find(':', from);
        if (colon == std::string::npos) colon = o.size();
        const std::string d = o.substr(from, colon - from);
        dirs += d.empty() ? d : dir(d);
        if (colon < o.size()) dirs += ":";
        from = colon + 1;
      }
      o = dirs;
    }
    out += (start ? "," : "") + o;
    start = comma + 1;
  }
  return out;
}

}  // namespace

std::vector<OverlayLayer> overlay_layers(const spec::Mount& m) {
  std::vector<OverlayLayer> out;
  if (m.type != "overlay") return out;
  for (size_t j = 0; j < m.options.size(); ++j)
    map_overlay_layers(parse_mount_options({m.options[j]}).data, [&](const std::string& d) {
      out.push_back({j, d});
      return d;
    });
  return out;
}

std::string replace_overlay_layers(const std::string& data, const std::vector<std::string>& layers) {
  size_t next = 0;
  std::string out = map_overlay_layers(data, [&](const std::string& d) {
    if (next >= layers.size()) throw Error("overlay layer " + d + ": no replacement for it");
    return layers[next++];
  });
  if (next != layers.size()) throw Error("overlay: " + std::to_string(layers.size()) + " layers given, " + std::to_string(next) + " in the options");
  return out;
}

std::vector<std::string> known_mount_options() {
  std::vector<std::string> out{"bind", "rbind", "idmap", "ridmap", "tmpcopyup"};
  for (const auto& f : kFlagOpts) out.emplace_back(f.name);
  for (const auto& p : kPropOpts) out.emplace_back(p.name);
  for (const auto& a : kAttrOpts) out.emplace_back(a.name);
  return out;
}

}  // namespace husk::ns
