// prepare_rootfs: the container's mounts (executing the steps plan_mounts
// made), then /dev. Runs in the container init, as (namespaced) root, in the
// container's mount namespace.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/mountinfo.h"
#include "namespaces/internal.h"

namespace husk::ns {

using namespace detail;

namespace {

// Mounts below /proc could hide or fake what the kernel reports (and procfs
// files are how a container escapes). Only the files lxcfs emulates may be
// mounted over; on /proc itself only procfs (a proc mount, or a bind of one).
// `source_fd` is the bind source (-1 for other mounts).
void check_proc_destination(const std::string& dest, const spec::Mount& m, int source_fd,
                            const std::string& what) {
  if (dest != "/proc" && dest.rfind("/proc/", 0) != 0) return;
  if (dest == "/proc") {
    if (source_fd >= 0 && !on_procfs(source_fd))
      throw Error(what + ": only procfs may be mounted on /proc, " + m.source + " is not procfs");
    return;
  }
  static const char* const kAllowed[] = {
      "/proc/cpuinfo", "/proc/diskstats", "/proc/meminfo", "/proc/stat",      "/proc/swaps",
      "/proc/uptime",  "/proc/loadavg",   "/proc/slabinfo", "/proc/net/dev",
      "/proc/sys/kernel/ns_last_pid"};
  for (const char* a : kAllowed)
    if (dest == a) return;
  throw Error(what + ": " + dest + " is inside /proc; only the files lxcfs emulates may be mounted there");
}

// The fd a Bind or Idmapped step mounts: the source (O_PATH) of a bind, the
// detached tree of an idmapped one. Empty for the other kinds.
Fd step_source(const spec::Mount& m, const MountStep& step, const RootfsOptions& opts) {
  const std::string& what = step.what;
  if (step.kind == MountStep::Kind::Idmapped) {
    auto it = opts.idmapped.find(step.index);
    if (it != opts.idmapped.end()) {
      Fd premade(fcntl(it->second, F_DUPFD_CLOEXEC, 0));
      if (!premade) throw sys_error(what + ": idmapped mount fd");
      return premade;
    }
    // Inside the container's user namespace we lack CAP_SYS_ADMIN over the
    // source filesystem; only the runtime on the host can build it.
    if (opts.user_ns)
      throw Error(what + ": an idmapped mount in a user namespace must be prepared by the runtime (make_idmapped_mount)");
    auto judged = opts.judged_sources.find(step.index);
    return idmapped_tree(m, -1, what, judged != opts.judged_sources.end() ? &judged->second : nullptr);
  }
  if (step.kind != MountStep::Kind::Bind) return Fd();
  auto it = opts.sources.find(step.index);
  if (it != opts.sources.end()) {
    Fd source(fcntl(it->second, F_DUPFD_CLOEXEC, 0));
    if (!source) throw sys_error(what + ": bind source fd");
    return source;
  }
  auto judged = opts.judged_sources.find(step.index);
  if (judged != opts.judged_sources.end())
    return base::reopen_judged(judged->second, O_PATH, "mounts[" + std::to_string(step.index) + "].source");
  return open_source(m.source, what);
}

// After mount(2) the target fd still names the directory under the new
// mount: reach the mount itself, and make sure it is the new one.
Fd reopen_new_mount(int root_fd, const std::string& resolved, uint64_t before, const std::string& what) {
  Fd mounted(raw_openat2(root_fd, rel(resolved), O_PATH, kInRoot));
  if (!mounted) throw sys_error("open " + what + " after mounting");
  if (mount_id(mounted.get(), what) == before) throw Error(what + ": the new mount is not at its destination");
  return mounted;
}

// A filesystem made detached (fsopen, fsmount) with `data`'s options and the
// flags as mount attributes. Empty where mount(2) must make it: a flag only
// a superblock takes (sync, dirsync, ...), an option string a file system
// splits its own way (quotes, "\," escapes, ",," in a cifs password), or an
// option the new API refuses (mount(2) then says why, or takes it).
Fd detached_filesystem(const MountStep& step, unsigned long flags, const std::string& data) {
  constexpr unsigned long kMountFlags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NODIRATIME |
                                        MS_NOSYMFOLLOW | MS_NOATIME | MS_STRICTATIME | MS_RELATIME | MS_SILENT;
  if ((flags & ~kMountFlags) || data.find_first_of("\"\\") != std::string::npos ||
      data.find(",,") != std::string::npos)
    return Fd();
  std::vector<std::string> options;
  for (size_t i = 0; i <= data.size();) {
    const size_t comma = std::min(data.find(',', i), data.size());
    if (comma > i) options.push_back(data.substr(i, comma - i));
    i = comma + 1;
  }
  if (flags & MS_RDONLY) options.push_back("ro");  // mount(2)'s "ro" makes a new superblock read-only too
  return try_fs_mount(step.type, step.source, options, attrs_of_flags(flags).first);
}

// A Filesystem step: mount(2) on the resolved `target`, then tmpcopyup and
// what mount(2) cannot set (recursive attributes, propagation). Onto "/"
// (`onto_root` given) made detached when it can be, and attached: its fd,
// in *onto_root, is the root from then on, found by no lookup.
void mount_filesystem(int root_fd, const spec::Mount& m, const MountStep& step, int target,
                      const std::string& resolved, bool mode_from_dest, Fd* onto_root) {
  const spec::MountOptions& mo = step.options;
  const std::string& what = step.what;
  unsigned long flags = mo.flags;
  // /dev stays writable until the device nodes exist; finalize_rootfs makes it ro.
  if (resolved == "/dev") flags &= ~MS_RDONLY;
  std::string data = mo.data;
  if (mode_from_dest) {
    char mode[16];
    snprintf(mode, sizeof mode, "mode=%o", fd_stat(target, what).st_mode & 07777);
    data += (data.empty() ? "" : ",") + std::string(mode);
  }
  Fd lower;  // tmpcopyup: the image's directory that the tmpfs will cover
  bool ro_after_copy = false;
  if (mo.tmpcopyup) {
    lower = Fd(openat(target, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!lower) throw sys_error("open " + what + " for tmpcopyup");
    ro_after_copy = flags & MS_RDONLY;
    flags &= ~MS_RDONLY;
  }
  if (onto_root && !lower) {
    if (Fd tree = detached_filesystem(step, flags, data)) {
      set_recursive_attrs(tree.get(), mo, what);
      attach_tree(tree.get(), target, mo, what);
      *onto_root = std::move(tree);
      return;
    }
  }
  uint64_t before = mount_id(target, what);
  if (mount(step.source.c_str(), fd_path(target).c_str(), step.type.c_str(), flags,
            data.empty() ? nullptr : data.c_str()) < 0) {
    int err = errno;
    if (step.sysfs_fallback && err == EPERM) {
      spec::MountOptions fallback = mo;
      fallback.bind = fallback.recursive_bind = true;
      fallback.flags |= MS_NOSUID | MS_NODEV | MS_NOEXEC;
      // A read-only /sys is read-only below too: the host's cgroup mounts
      // under /sys/fs/cgroup must not come along writable (CVE-2023-25809).
      if (fallback.flags & MS_RDONLY) fallback.attr_set |= MOUNT_ATTR_RDONLY;
      bind_mount(open_source("/sys", what).get(), "/sys", target, fallback, what);
      return;
    }
    throw sys_error("mount " + m.type + " on " + m.destination, err);
  }
  if (!mo.propagation && !mo.attr_set && !mo.attr_clr && !mo.tmpcopyup) return;
  Fd mounted = reopen_new_mount(root_fd, resolved, before, what);
  if (lower) {
    copy_tree(lower.get(), mounted.get(), resolved);
    if (ro_after_copy) setattr(mounted.get(), 0, MOUNT_ATTR_RDONLY, 0, 0, what);
  }
  set_recursive_attrs(mounted.get(), mo, what);
  set_propagation(mounted.get(), mo, what);
}

// An overlay (not yet attached) from its judged `layers`, in
// overlay_layers' order: fsconfig(FSCONFIG_SET_FD) hands the kernel the
// fds themselves, and mountinfo shows their paths (Linux 6.13+). Empty when
// mount(2) must do it: an older kernel, or superblock flags (sync, dirsync,
// lazytime...) that only it takes.
Fd overlay_from_fds(const MountStep& step, const std::vector<Fd>& layers, const std::string& resolved) {
  const std::string& what = step.what;
  unsigned long flags = step.options.flags;
  if (resolved == "/dev") flags &= ~MS_RDONLY;  // as mount_filesystem: finalize_rootfs makes it ro
  const uint64_t attrs = attrs_of_flags(flags).first;
  if (flags & (MS_SYNCHRONOUS | MS_DIRSYNC | MS_LAZYTIME | MS_MANDLOCK)) return Fd();
  Fd fs(fsopen("overlay", FSOPEN_CLOEXEC));
  if (!fs) throw sys_error(what + ": fsopen overlay");
  if (fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", step.source.c_str(), 0) < 0)
    throw sys_error(what + ": set the source of overlay");
  size_t next = 0;
  auto layer = [&](const char* key) {
    int rc = fsconfig(fs.get(), FSCONFIG_SET_FD, key, nullptr, layers.at(next).get());
    if (rc < 0 && errno == EINVAL && next == 0) return false;  // no fd layers in this kernel
    if (rc < 0) throw sys_error(what + ": overlay " + key + " " + fd_link(layers.at(next).get()));
    ++next;
    return true;
  };
  const std::string& data = step.options.data;
  for (size_t start = 0; start < data.size();) {
    size_t comma = data.find(',', start);
    if (comma == std::string::npos) comma = data.size();
    const std::string o = data.substr(start, comma - start);
    start = comma + 1;
    if (o.empty()) continue;
    const size_t eq = o.find('=');
    const std::string key = o.substr(0, eq);
    if (key == "lowerdir") {
      // lowerdir=a:b is lowerdir+ a, then b: the first is the top layer either way.
      for (size_t from = eq + 1; from <= o.size();) {
        size_t colon = o.find(':', from);
        if (colon == std::string::npos) colon = o.size();
        if (colon > from && !layer("lowerdir+")) return Fd();
        from = colon + 1;
      }
    } else if (key == "lowerdir+" || key == "upperdir" || key == "workdir" || key == "datadir+") {
      if (eq + 1 < o.size() && !layer(key.c_str())) return Fd();
    } else {
      int rc = eq == std::string::npos ? fsconfig(fs.get(), FSCONFIG_SET_FLAG, o.c_str(), nullptr, 0)
                                       : fsconfig(fs.get(), FSCONFIG_SET_STRING, key.c_str(), o.substr(eq + 1).c_str(), 0);
      if (rc < 0) throw sys_error(what + ": overlay option " + o);
    }
  }
  if (next != layers.size()) throw Error(what + ": " + std::to_string(layers.size()) + " judged layers, " + std::to_string(next) + " in the options");
  if (fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) throw sys_error("mount overlay on " + step.destination);
  Fd tree(fsmount(fs.get(), FSMOUNT_CLOEXEC, static_cast<unsigned>(attrs)));
  if (!tree) throw sys_error(what + ": fsmount overlay");
  return tree;
}

// Where `target` is inside the root. A lookup that crosses no symlink and
// reaches the same object on the same mount means the (cleaned)
// destination itself: no readlink through /proc. The same inode alone would
// not do: a file system bound twice into the root (the host's /proc at
// /proc and at /host/proc) shows it at two places, and a symlink swapped in
// and out between the two lookups could pass one for the other. Else the
// kernel's name, the root's link read again beside the target's: a rename
// of the bundle meanwhile must not make a /proc target look like another path.
std::string resolved_in_root(int root_fd, const std::string& destination, int target) {
  Fd plain(raw_openat2(root_fd, rel(destination), O_PATH, kInRoot | RESOLVE_NO_SYMLINKS));
  // One mount is one file system: its id and the inode say the same object.
  auto where = [](int fd, struct statx& x) {
    return statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO | STATX_MNT_ID, &x) == 0 &&
           (x.stx_mask & STATX_MNT_ID);
  };
  struct statx a{}, b{};
  if (plain && where(plain.get(), a) && where(target, b) && a.stx_ino == b.stx_ino && a.stx_mnt_id == b.stx_mnt_id)
    return destination;
  return path_in_root(fd_link(root_fd), target);
}

// spec.mounts[step.index] on its destination, resolved inside the root.
// True when that is the root itself; `attached` then holds the new mount
// when it was attached from an fd (else mount_on_root finds it).
bool mount_one(int root_fd, const spec::Mount& m, const MountStep& step, const RootfsOptions& opts,
               const std::vector<HostHierarchy>& hierarchies, Fd& attached) {
  const std::string& what = step.what;
  Fd source = step_source(m, step, opts);
  bool as_file = source && !S_ISDIR(fd_stat(source.get(), what + ": bind source " + m.source).st_mode);
  bool mode_from_dest = step.inherit_mode && Fd(raw_openat2(root_fd, rel(step.destination), O_PATH, kInRoot));
  Fd target = step.real_directory ? real_dir_in_root(root_fd, step.destination, m.type, what)
                                  : ensure_in_root(root_fd, step.destination, as_file, what);
  std::string resolved = resolved_in_root(root_fd, step.destination, target.get());
  check_proc_destination(resolved, m, source.get(), what);
  const bool on_root = resolved == "/";
  switch (step.kind) {
    case MountStep::Kind::Idmapped:
      attach_tree(source.get(), target.get(), step.options, what);
      if (on_root) attached = std::move(source);
      return on_root;
    case MountStep::Kind::Bind:
      if (Fd tree = bind_mount(source.get(), m.source, target.get(), step.options, what); on_root)
        attached = std::move(tree);
      return on_root;
    case MountStep::Kind::CgroupV1:
      mount_cgroup_v1(target.get(), hierarchies, step);
      return on_root;
    case MountStep::Kind::Filesystem: {
      auto judged = opts.judged_layers.find(step.index);
      if (judged == opts.judged_layers.end()) {
        mount_filesystem(root_fd, m, step, target.get(), resolved, mode_from_dest, on_root ? &attached : nullptr);
        return on_root;
      }
      // The kernel gets the judged layers, found again here, as fds (or
      // /proc/self/fd/N): not their names.
      std::vector<Fd> layers;
      std::vector<std::string> paths;
      const auto found = spec::overlay_layers(m);
      for (size_t k = 0; k < judged->second.size() && k < found.size(); ++k) {
        const std::string field = "mounts[" + std::to_string(step.index) + "].options[" + std::to_string(found[k].option) + "]";
        layers.push_back(base::reopen_judged(judged->second[k], O_PATH | O_DIRECTORY, field));
        paths.push_back(fd_path(layers.back().get()));
      }
      if (Fd tree = overlay_from_fds(step, layers, resolved)) {
        set_recursive_attrs(tree.get(), step.options, what);
        attach_tree(tree.get(), target.get(), step.options, what);
        if (on_root) attached = std::move(tree);
        return on_root;
      }
      MountStep with_fds = step;
      with_fds.options.data = spec::replace_overlay_layers(step.options.data, paths);
      mount_filesystem(root_fd, m, with_fds, target.get(), resolved, mode_from_dest, nullptr);
      return on_root;
    }
  }
  return on_root;
}

// After a mount onto the root itself, the mount on top of `root_fd`'s (its
// child at the same mount point): later mounts land on it and the pivot enters
// it, as with runc. A mount point is crossed only by a lookup: the rootfs's
// name from the directory above, checked to reach that very mount.
Fd mount_on_root(int root_fd, const std::string& rootfs) {
  const std::string what = "rootfs " + rootfs + " after a mount onto /";
  const uint64_t below = mount_id(root_fd, what);
  const auto mounts = base::read_mountinfo();
  auto under = std::find_if(mounts.begin(), mounts.end(), [&](const base::MountInfo& mi) { return mi.id == below; });
  if (under == mounts.end()) throw Error(what + ": not in /proc/self/mountinfo");
  auto top = std::find_if(mounts.begin(), mounts.end(), [&](const base::MountInfo& mi) {
    return mi.parent == below && mi.mount_point == under->mount_point;
  });
  if (top == mounts.end()) throw Error(what + ": no mount on top of it");
  const size_t slash = rootfs.rfind('/');
  const std::string name = slash == std::string::npos ? rootfs : rootfs.substr(slash + 1);
  Fd up(openat(root_fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!up) throw sys_error("open the directory above " + what);
  Fd onto(name.empty() ? -1 : openat(up.get(), name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!onto) throw sys_error("open " + what);
  if (mount_id(onto.get(), what) != top->id) throw Error(what + ": the new root is not where it was mounted");
  return onto;
}

bool needs_mount_ns(const spec::Spec& spec) {
  if (!spec.mounts.empty() || (spec.root && spec.root->readonly)) return true;
  if (!spec.linux_) return false;
  const auto& l = *spec.linux_;
  return !l.devices.empty() || !l.masked_paths.empty() || !l.readonly_paths.empty() ||
         !l.rootfs_propagation.empty();
}


}  // namespace

Fd prepare_rootfs(const spec::Spec& spec, const RootfsOptions& opts) {
  // This mount namespace was copied from the host's after the runtime judged
  // root.path: what the path reaches here must be that directory.
  Fd judged = base::reopen_judged(opts.rootfs, O_PATH | O_DIRECTORY, "root.path");
  if (!opts.own_mount_ns) {
    if (needs_mount_ns(spec))
      throw Error("mounts, devices, maskedPaths, readonlyPaths, root.readonly and rootfsPropagation need a new mount namespace");
    return judged;
  }
  bool any_cgroup =
      std::any_of(spec.mounts.begin(), spec.mounts.end(), [](const spec::Mount& m) { return m.type == "cgroup"; });
  std::vector<HostHierarchy> hierarchies = any_cgroup ? host_v1_hierarchies() : std::vector<HostHierarchy>{};
  MountHost host;
  host.cgroup_v1 = !hierarchies.empty();
  // The init has unshared (or joined) the cgroup namespace by now.
  host.cgroup_ns = spec.linux_ && spec.linux_->has_namespace("cgroup");
  host.user_ns = opts.user_ns || opts.caller_user_ns;
  host.own_cgroup = opts.own_cgroup;
  std::vector<MountStep> steps = plan_mounts(spec, host);

  const std::string& rootfs = opts.rootfs.real;
  std::string prop = spec.linux_ ? spec.linux_->rootfs_propagation : "";
  if (mount(nullptr, "/", nullptr, rootfs_propagation_flag(prop), nullptr) < 0)
    throw sys_error("set propagation of / in the container's mount namespace");
  // pivot_root refuses a shared parent, and a bind onto a shared mount would
  // propagate to the host: make the mount holding the rootfs private first.
  Fd parent = mount_root_of(judged.get(), rootfs);
  setattr(parent.get(), 0, 0, 0, MS_PRIVATE, "the mount holding rootfs " + rootfs);
  // The rootfs must be a mount point of its own for pivot_root: a bind of
  // the judged directory on itself, and that bind is the root from now on.
  Fd root(open_tree(judged.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
  if (!root) throw sys_error("bind mount rootfs " + rootfs + " on itself");
  attach(root.get(), judged.get(), "rootfs " + rootfs);
  for (const auto& step : steps) {
    Fd attached;
    if (mount_one(root.get(), spec.mounts[step.index], step, opts, hierarchies, attached))
      root = attached ? std::move(attached) : mount_on_root(root.get(), rootfs);
  }

  // A /dev bound from the host is the host's: never create nodes in it.
  bool dev_is_bind = false;
  dev_mount(spec, &dev_is_bind);
  if (!dev_is_bind) setup_dev(root.get(), spec, opts);
  return root;
}

}  // namespace husk::ns
