// "cgroup" mounts on a cgroup v1 or hybrid host, as runc does them: a tmpfs
// holding a directory per hierarchy the host mounted below /sys/fs/cgroup.
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <sstream>

#include "base/file.h"
#include "base/mountinfo.h"
#include "namespaces/internal.h"

namespace husk::ns::detail {

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

// The init's own cgroup in hierarchy `h`, from the text of /proc/self/cgroup
// ("4:memory:/a/b", "9:name=systemd:/a/b", "0::/a/b" for cgroup2).
std::string own_cgroup(const HostHierarchy& h, const std::string& proc_cgroup, const std::string& what) {
  std::istringstream in(proc_cgroup);
  for (std::string line; std::getline(in, line);) {
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    auto controllers = split(line.substr(a + 1, b - a - 1), ',');
    bool match = h.v2 ? controllers.empty()
                      : !controllers.empty() &&
                            std::find(h.options.begin(), h.options.end(), controllers[0]) != h.options.end();
    if (match) return line.substr(b + 1);
  }
  throw Error(what + ": the container's cgroup in " + h.mount_point + " is not in /proc/self/cgroup");
}

// Without a cgroup namespace: a bind of the container's own cgroup directory
// in `h` (the init is already in its cgroups).
Fd own_cgroup_tree(const HostHierarchy& h, const std::string& proc_cgroup, unsigned long flags,
                    const std::string& what) {
  std::string path = own_cgroup(h, proc_cgroup, what), rel_path;
  if (h.root == "/")
    rel_path = path;
  else if (path == h.root)
    rel_path = "/";
  else if (path.rfind(h.root + "/", 0) == 0)
    rel_path = path.substr(h.root.size());
  else
    throw Error(what + ": the container's cgroup " + path + " is outside the host's mount " + h.mount_point);
  spec::MountOptions bmo;
  bmo.flags = flags | MS_NOSUID | MS_NODEV | MS_NOEXEC;
  bmo.recursive_bind = true;
  std::string source = h.mount_point + (rel_path == "/" ? "" : rel_path);
  return bind_tree(open_source(source, what).get(), source, bmo, what);
}

}  // namespace

// /sys/fs/cgroup is a tmpfs holding v1 mounts there. The init's mount
// namespace is a copy of the host's, so its mountinfo lists them.
std::vector<HostHierarchy> host_v1_hierarchies() {
  struct statfs sf{};
  if (statfs("/sys/fs/cgroup", &sf) < 0 || sf.f_type == CGROUP2_SUPER_MAGIC) return {};
  const std::string base = "/sys/fs/cgroup/";
  std::vector<HostHierarchy> out;
  bool any_v1 = false;
  for (const auto& mi : base::read_mountinfo()) {
    if ((mi.fstype != "cgroup" && mi.fstype != "cgroup2") || mi.mount_point.rfind(base, 0) != 0) continue;
    HostHierarchy h;
    h.name = mi.mount_point.substr(base.size());
    if (h.name.empty() || h.name.find('/') != std::string::npos) continue;
    h.mount_point = mi.mount_point;
    h.root = mi.root;
    h.v2 = mi.fstype == "cgroup2";
    if (!h.v2) {
      // The host's release agent is never handed to a container's mount.
      for (auto& o : split(mi.super_options, ','))
        if (o != "rw" && o != "ro" && o.rfind("release_agent=", 0) != 0) h.options.push_back(o);
      any_v1 = true;
    }
    // A later mount on the same directory covers the earlier one.
    std::erase_if(out, [&](const HostHierarchy& o) { return o.name == h.name; });
    out.push_back(std::move(h));
  }
  if (!any_v1) out.clear();
  return out;
}

// With a cgroup namespace each directory gets a fresh mount of its hierarchy
// (the namespace makes the container's cgroup its root); without one, a bind
// of the container's own cgroup directory from the host. "ro" makes the tmpfs
// and every hierarchy read-only.
void mount_cgroup_v1(int target, const std::vector<HostHierarchy>& hierarchies, const MountStep& step) {
  const spec::MountOptions& mo = step.options;
  const std::string& what = step.what;
  uint64_t set = attrs_of_flags(mo.flags).first;  // fresh mounts have nothing to clear
  bool ro = set & MOUNT_ATTR_RDONLY;
  Fd tmpfs = new_fs_mount("tmpfs", {"mode=755"}, set & ~MOUNT_ATTR_RDONLY, what);
  attach(tmpfs.get(), target, what);
  // The cgroup filesystems never need setuid, devices or executables.
  uint64_t sub_attrs = set | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  // Read once for all hierarchies: the binds name the init's own cgroups.
  std::string proc_cgroup;
  if (!step.cgroup_fresh) {
    try {
      proc_cgroup = base::read_file("/proc/self/cgroup");
    } catch (const Error& e) {
      rethrow_with(what, e);
    }
  }
  for (const auto& h : hierarchies) {
    std::string sub = what + ": " + h.name;
    // The tmpfs is new and not reachable by the container yet: plain *at calls are safe.
    if (mkdirat(tmpfs.get(), h.name.c_str(), 0755) < 0 && errno != EEXIST) throw sys_error(sub + ": mkdir");
    Fd dir(openat(tmpfs.get(), h.name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) throw sys_error(sub + ": open");
    Fd tree = !step.cgroup_fresh ? own_cgroup_tree(h, proc_cgroup, mo.flags, sub)
              : h.v2             ? new_fs_mount("cgroup2", {}, sub_attrs, sub)
                                 : new_fs_mount("cgroup", h.options, sub_attrs, sub);
    attach(tree.get(), dir.get(), sub);
  }
  // A merged hierarchy ("cpu,cpuacct") is reachable under each controller name.
  for (const auto& h : hierarchies) {
    if (h.name.find(',') == std::string::npos) continue;
    for (const auto& c : split(h.name, ','))
      if (symlinkat(h.name.c_str(), tmpfs.get(), c.c_str()) < 0 && errno != EEXIST)
        throw sys_error(what + ": symlink " + c + " -> " + h.name);
  }
  if (ro) setattr(tmpfs.get(), 0, MOUNT_ATTR_RDONLY, 0, 0, what);
  set_recursive_attrs(tmpfs.get(), mo, what);
  set_propagation(tmpfs.get(), mo, what);
}

}  // namespace husk::ns::detail
