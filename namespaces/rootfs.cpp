// The container's root filesystem: mounts, /dev, pivot_root and the
// hardening done after it. Runs in the container init, as (namespaced) root,
// in the container's new mount namespace.
//
// The rootfs is untrusted: any path inside it may be a symlink meant to make us
// mount over a host path. So every target is resolved with openat2
// RESOLVE_IN_ROOT to an O_PATH fd, created component by component relative to
// an already-verified parent fd, and mounts are attached to that fd (via the
// new mount API or /proc/self/fd/N), never to a path string re-resolved later.
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <utility>

#include "base/fd.h"
#include "base/fdpass.h"
#include "base/file.h"
#include "base/mountinfo.h"
#include "namespaces/namespaces.h"

namespace husk::ns {

namespace {

using base::Fd;

constexpr uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;

// openat2 without throwing: returns -1 with errno set.
int raw_openat2(int dirfd, const std::string& path, uint64_t flags, uint64_t resolve,
                uint64_t mode = 0) {
  struct open_how how{};
  how.flags = flags | O_CLOEXEC;
  how.mode = mode;
  how.resolve = resolve;
  int fd = -1;
  // A concurrent rename or mount makes RESOLVE_IN_ROOT answer EAGAIN: retry a few times.
  for (int tries = 0; tries < 32; ++tries) {
    fd = static_cast<int>(syscall(SYS_openat2, dirfd, path.c_str(), &how, sizeof how));
    if (fd >= 0 || errno != EAGAIN) break;
  }
  return fd;
}

// "/a/b" -> "a/b"; "/" -> "." (openat2 needs a non-empty path).
std::string rel(const std::string& container_path) {
  std::string c = clean_path(container_path);
  return c == "/" ? "." : c.substr(1);
}

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

struct stat fd_stat(int fd, const std::string& what) {
  struct stat st{};
  if (fstat(fd, &st) < 0) throw sys_error("stat " + what);
  return st;
}

uint64_t mount_id(int fd, const std::string& what) {
  struct statx stx{};
  if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_MNT_ID, &stx) < 0)
    throw sys_error("statx " + what);
  return stx.stx_mnt_id;
}

void setattr(int fd, unsigned flags, uint64_t set, uint64_t clr, uint64_t propagation,
             const std::string& what) {
  struct mount_attr a{};
  a.attr_set = set;
  a.attr_clr = clr;
  a.propagation = propagation;
  if (mount_setattr(fd, "", AT_EMPTY_PATH | flags, &a, sizeof a) < 0)
    throw sys_error("set mount attributes on " + what);
}

// Attach the detached mount `tree` on top of `target` (both fds).
void attach(int tree, int target, const std::string& what) {
  if (move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
    throw sys_error("mount on " + what);
}

// MS_* per-mount flags -> MOUNT_ATTR_* (for the fd-based API).
std::pair<uint64_t, uint64_t> attrs_of_flags(unsigned long f) {
  uint64_t set = 0, clr = 0;
  if (f & MS_RDONLY) set |= MOUNT_ATTR_RDONLY;
  if (f & MS_NOSUID) set |= MOUNT_ATTR_NOSUID;
  if (f & MS_NODEV) set |= MOUNT_ATTR_NODEV;
  if (f & MS_NOEXEC) set |= MOUNT_ATTR_NOEXEC;
  if (f & MS_NODIRATIME) set |= MOUNT_ATTR_NODIRATIME;
  if (f & MS_NOSYMFOLLOW) set |= MOUNT_ATTR_NOSYMFOLLOW;
  if (f & (MS_NOATIME | MS_STRICTATIME | MS_RELATIME)) {
    clr |= MOUNT_ATTR__ATIME;
    set |= (f & MS_NOATIME) ? MOUNT_ATTR_NOATIME
           : (f & MS_STRICTATIME) ? MOUNT_ATTR_STRICTATIME
                                  : MOUNT_ATTR_RELATIME;
  }
  return {set, clr};
}

std::string canonical(const std::string& path) {
  char buf[PATH_MAX];
  if (!realpath(path.c_str(), buf)) throw sys_error("resolve rootfs " + path);
  return buf;
}

// Where `fd` is, as a path inside the root `root_fd` ("/" for the root itself).
std::string path_in_root(int root_fd, int fd) {
  auto link = [](int f) {
    char buf[PATH_MAX];
    ssize_t n = readlink(fd_path(f).c_str(), buf, sizeof buf - 1);
    if (n < 0) throw sys_error("readlink " + fd_path(f));
    return std::string(buf, static_cast<size_t>(n));
  };
  std::string root = link(root_fd), p = link(fd);
  if (root == "/") return p;
  if (p == root) return "/";
  if (p.compare(0, root.size() + 1, root + "/") == 0) return p.substr(root.size());
  throw Error(p + " is outside the rootfs " + root);
}

// Resolve `path` inside the root, creating what is missing: directories for
// the parents, and for the last component a directory or (as_file) an empty
// file. Each missing component is created relative to the fd of its parent,
// which was itself resolved within the root, so a symlink can only redirect us
// to somewhere else inside the root. A dangling symlink is followed (inside
// the root) and its target created, as runc does for images with e.g.
// /var/run -> /run and no /run.
Fd ensure_in_root(int root_fd, const std::string& path, bool as_file, const std::string& what) {
  std::string r = rel(path);
  int fd = raw_openat2(root_fd, r, O_PATH, kInRoot);
  if (fd >= 0) return Fd(fd);
  if (errno != ENOENT) throw sys_error("open " + what);

  for (int links = 0; links < 40; ++links) {
    Fd parent(raw_openat2(root_fd, ".", O_PATH | O_DIRECTORY, kInRoot));
    if (!parent) throw sys_error("open the rootfs");
    std::string prefix;
    size_t i = 0;
    bool restart = false;
    while (i < r.size() && !restart) {
      size_t j = r.find('/', i);
      if (j == std::string::npos) j = r.size();
      std::string comp = r.substr(i, j - i);
      bool last = j == r.size();
      prefix += (prefix.empty() ? "" : "/") + comp;
      Fd cur(raw_openat2(root_fd, prefix, O_PATH, kInRoot));
      if (!cur) {
        if (errno != ENOENT) throw sys_error("open /" + prefix + " in the rootfs for " + what);
        int rc;
        if (last && as_file) {
          rc = openat(parent.get(), comp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
          if (rc >= 0) close(rc);
        } else {
          rc = mkdirat(parent.get(), comp.c_str(), 0755);
        }
        if (rc < 0 && errno != EEXIST) throw sys_error("create /" + prefix + " in the rootfs for " + what);
        cur = Fd(raw_openat2(root_fd, prefix, O_PATH, kInRoot));
        if (!cur && errno == ENOENT) {
          // A dangling symlink is in the way: splice its target into the path
          // (relative to the real location of its directory) and walk again.
          char target[PATH_MAX];
          ssize_t n = readlinkat(parent.get(), comp.c_str(), target, sizeof target - 1);
          if (n < 0) throw sys_error("open /" + prefix + " in the rootfs for " + what);
          std::string t(target, static_cast<size_t>(n));
          std::string base = t[0] == '/' ? "" : path_in_root(root_fd, parent.get());
          r = rel(base + "/" + t + "/" + r.substr(std::min(j + 1, r.size())));
          restart = true;
          continue;
        }
        if (!cur) throw sys_error("open /" + prefix + " in the rootfs for " + what);
      }
      if (!last && !S_ISDIR(fd_stat(cur.get(), what).st_mode))
        throw Error("open " + what + ": /" + prefix + " in the rootfs is not a directory", ENOTDIR);
      parent = std::move(cur);
      i = j + 1;
    }
    if (!restart) return parent;
  }
  throw Error("open " + what + ": too many levels of symbolic links", ELOOP);
}

bool on_procfs(int fd) {
  struct statfs sf{};
  return fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

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

// A bind source, symlinks followed: sources are host paths the caller chose.
Fd open_source(const std::string& source, const std::string& what) {
  Fd fd(open(source.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) throw sys_error(what + ": open bind source " + source);
  return fd;
}

// A bind mount of `source_fd` (named `source`) built detached (open_tree) so
// that its flags, recursive attributes (and idmapping) are set before anything
// in the container can see it, and without remounting (which could clear
// locked flags).
Fd bind_tree(int source_fd, const std::string& source, const MountOptions& mo, const std::string& what) {
  unsigned ot = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (mo.recursive_bind ? AT_RECURSIVE : 0);
  Fd tree(open_tree(source_fd, "", ot));
  if (!tree) throw sys_error(what + ": clone bind source " + source);
  // Only attributes are set here, never cleared: "rw" on a bind of a
  // read-only mount keeps it read-only, like a plain MS_BIND does.
  auto [set, clr] = attrs_of_flags(mo.flags);
  if (set || clr) setattr(tree.get(), 0, set, clr, 0, what);
  if (mo.attr_set || mo.attr_clr) setattr(tree.get(), AT_RECURSIVE, mo.attr_set, mo.attr_clr, 0, what);
  return tree;
}

// Attach a detached tree and then set its propagation (the kernel does not
// take propagation changes on a detached mount).
void attach_tree(int tree, int target, const MountOptions& mo, const std::string& what) {
  attach(tree, target, what);
  if (mo.propagation)
    setattr(tree, (mo.propagation & MS_REC) ? AT_RECURSIVE : 0, 0, 0, mo.propagation & ~MS_REC, what);
}

void bind_mount(int source_fd, const std::string& source, int target, const MountOptions& mo,
                const std::string& what) {
  Fd tree = bind_tree(source_fd, source, mo, what);
  attach_tree(tree.get(), target, mo, what);
}

// A user namespace holding only the given mappings, for an idmapped mount:
// a child unshares it and waits while we write its maps and open it. The
// child names itself as /proc sees it: in a new pid namespace whose /proc is
// still the host's (the init before pivot) fork()'s answer is the wrong
// number there (2 is the host's kthreadd).
Fd userns_with_mappings(const spec::Mount& m, const std::string& what) {
  int ready[2], hold[2];
  if (pipe2(ready, O_CLOEXEC) < 0) throw sys_error("pipe");
  if (pipe2(hold, O_CLOEXEC) < 0) {
    close(ready[0]);
    close(ready[1]);
    throw sys_error("pipe");
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    close(hold[1]);
    char msg[32] = "n";
    ssize_t n = 1;
    if (unshare(CLONE_NEWUSER) == 0) {
      n = readlink("/proc/self", msg + 1, sizeof msg - 2);
      msg[0] = n > 0 ? 'y' : 'p';
      n = n > 0 ? n + 1 : 1;
    }
    if (write(ready[1], msg, static_cast<size_t>(n)) != n) _exit(1);
    (void)!read(hold[0], msg, 1);  // until the parent is done with us
    _exit(0);
  }
  int fork_err = errno;
  close(ready[1]);
  close(hold[0]);
  Fd hold_w(hold[1]);
  Fd ready_r(ready[0]);
  if (pid < 0) throw sys_error("fork for the user namespace of " + what, fork_err);
  Fd ns;
  std::string err;
  char msg[32];
  ssize_t n = read(ready_r.get(), msg, sizeof msg);
  if (n == 1 && msg[0] == 'p') {
    err = what + ": the helper for the idmapped mount's user namespace cannot find itself in /proc";
  } else if (n < 2 || msg[0] != 'y') {
    err = what + ": could not create a user namespace for the idmapped mount";
  } else {
    std::string dir = "/proc/" + std::string(msg + 1, static_cast<size_t>(n - 1)) + "/";
    auto put = [&](const std::string& file, const std::string& text) {
      int fd = open((dir + file).c_str(), O_WRONLY | O_CLOEXEC);
      bool ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      if (!ok && err.empty()) err = sys_error(what + ": write " + dir + file).what();
      if (fd >= 0) close(fd);
    };
    put("uid_map", id_map_text(m.uid_mappings));
    put("gid_map", id_map_text(m.gid_mappings));
    if (err.empty()) {
      ns = Fd(open((dir + "ns/user").c_str(), O_RDONLY | O_CLOEXEC));
      if (!ns) err = sys_error(what + ": open " + dir + "ns/user").what();
    }
  }
  hold_w.reset();
  waitpid(pid, nullptr, 0);
  if (!err.empty()) throw Error(err);
  return ns;
}

Fd idmapped_tree(const spec::Mount& m, int userns_fd, const std::string& what) {
  MountOptions mo = parse_mount_options(m.options);
  if (!mo.bind && m.type != "bind") throw Error(what + ": idmap is only supported on bind mounts");
  if (m.uid_mappings.empty() != m.gid_mappings.empty())
    throw Error(what + ": uidMappings and gidMappings must be given together");
  Fd own;
  if (!m.uid_mappings.empty()) {
    own = userns_with_mappings(m, what);
    userns_fd = own.get();
  }
  if (userns_fd < 0) throw Error(what + ": an idmapped mount needs uidMappings/gidMappings or a user namespace");
  Fd tree = bind_tree(open_source(m.source, what).get(), m.source, mo, what);
  struct mount_attr a{};
  a.attr_set = MOUNT_ATTR_IDMAP;
  a.userns_fd = static_cast<uint64_t>(userns_fd);
  if (mount_setattr(tree.get(), "", AT_EMPTY_PATH | (mo.recursive_idmap ? AT_RECURSIVE : 0), &a, sizeof a) < 0)
    throw sys_error(what + ": idmap " + m.source);
  return tree;
}

// tmpcopyup: copy the directory tree under `from` (the image's content at a
// tmpfs destination) into `to` (the new tmpfs). Everything is done relative to
// the two directory fds and no symlink is followed: they are copied as links.
void copy_tree(int from, int to, const std::string& where, int depth = 0) {
  if (depth > 128) throw Error("tmpcopyup " + where + ": directory tree too deep", ELOOP);
  int dup_fd = fcntl(from, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) throw sys_error("tmpcopyup " + where);
  DIR* dir = fdopendir(dup_fd);
  if (!dir) {
    close(dup_fd);
    throw sys_error("tmpcopyup: read " + where);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> guard(dir, closedir);
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = where + "/" + name;
    struct stat st{};
    if (fstatat(from, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) throw sys_error("tmpcopyup: stat " + path);
    if (S_ISDIR(st.st_mode)) {
      if (mkdirat(to, name.c_str(), 0700) < 0) throw sys_error("tmpcopyup: mkdir " + path);
      Fd sub_from(openat(from, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      Fd sub_to(openat(to, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub_from || !sub_to) throw sys_error("tmpcopyup: open " + path);
      copy_tree(sub_from.get(), sub_to.get(), path, depth + 1);
    } else if (S_ISREG(st.st_mode)) {
      Fd in(openat(from, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
      Fd out(openat(to, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
      if (!in || !out) throw sys_error("tmpcopyup: open " + path);
      for (off_t left = st.st_size; left > 0;) {
        ssize_t n = sendfile(out.get(), in.get(), nullptr, static_cast<size_t>(left));
        if (n < 0) throw sys_error("tmpcopyup: copy " + path);
        if (n == 0) break;  // the file shrank meanwhile
        left -= n;
      }
    } else if (S_ISLNK(st.st_mode)) {
      std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
      ssize_t n = readlinkat(from, name.c_str(), target.data(), target.size());
      if (n < 0) throw sys_error("tmpcopyup: readlink " + path);
      target.resize(static_cast<size_t>(n));
      if (symlinkat(target.c_str(), to, name.c_str()) < 0) throw sys_error("tmpcopyup: symlink " + path);
    } else if (S_ISSOCK(st.st_mode)) {
      continue;  // a socket file is meaningless without its listener
    } else if (mknodat(to, name.c_str(), st.st_mode, st.st_rdev) < 0) {
      throw sys_error("tmpcopyup: mknod " + path);
    }
    if (fchownat(to, name.c_str(), st.st_uid, st.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
      throw sys_error("tmpcopyup: chown " + path);
    // After chown, which clears set-id bits; symlinks have no mode of their own.
    if (!S_ISLNK(st.st_mode) && fchmodat(to, name.c_str(), st.st_mode & 07777, 0) < 0)
      throw sys_error("tmpcopyup: chmod " + path);
    timespec times[2] = {st.st_atim, st.st_mtim};
    if (utimensat(to, name.c_str(), times, AT_SYMLINK_NOFOLLOW) < 0) throw sys_error("tmpcopyup: utimes " + path);
  }
}

using base::MountInfo;
using base::read_mountinfo;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string part; std::getline(in, part, sep);)
    if (!part.empty()) out.push_back(part);
  return out;
}

// One cgroup hierarchy mounted by the host directly below /sys/fs/cgroup.
struct HostHierarchy {
  std::string name;                  // "memory", "cpu,cpuacct", "systemd", "unified"
  std::string mount_point, root;     // on the host; root is the mount's root in the hierarchy
  bool v2 = false;
  std::vector<std::string> options;  // v1 super options naming it: {"memory"}, {"name=systemd"}
};

// The hierarchies of a cgroup v1 or hybrid host (where /sys/fs/cgroup is a
// tmpfs holding v1 mounts), in mount order; empty on a unified host. The
// init's mount namespace is a copy of the host's, so its mountinfo lists them.
std::vector<HostHierarchy> host_v1_hierarchies() {
  struct statfs sf{};
  if (statfs("/sys/fs/cgroup", &sf) < 0 || sf.f_type == CGROUP2_SUPER_MAGIC) return {};
  const std::string base = "/sys/fs/cgroup/";
  std::vector<HostHierarchy> out;
  bool any_v1 = false;
  for (const auto& mi : read_mountinfo()) {
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

// The init's own cgroup in hierarchy `h`, from /proc/self/cgroup
// ("4:memory:/a/b", "9:name=systemd:/a/b", "0::/a/b" for cgroup2).
std::string own_cgroup(const HostHierarchy& h, const std::string& what) {
  std::string text;
  try {
    text = base::read_file("/proc/self/cgroup");
  } catch (const Error& e) {
    rethrow_with(what, e);
  }
  std::istringstream in(text);
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

// A new detached mount of `fstype` with `options` ("key=value" or a flag) and
// the MOUNT_ATTR_* `attrs`.
Fd new_fs_mount(const std::string& fstype, const std::vector<std::string>& options, uint64_t attrs,
                const std::string& what) {
  Fd fs(fsopen(fstype.c_str(), FSOPEN_CLOEXEC));
  if (!fs) throw sys_error(what + ": fsopen " + fstype);
  if (fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", fstype.c_str(), 0) < 0)
    throw sys_error(what + ": set the source of " + fstype);
  for (const auto& o : options) {
    size_t eq = o.find('=');
    int rc = eq == std::string::npos
                 ? fsconfig(fs.get(), FSCONFIG_SET_FLAG, o.c_str(), nullptr, 0)
                 : fsconfig(fs.get(), FSCONFIG_SET_STRING, o.substr(0, eq).c_str(), o.substr(eq + 1).c_str(), 0);
    if (rc < 0) throw sys_error(what + ": " + fstype + " option " + o);
  }
  if (fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) throw sys_error(what + ": create " + fstype);
  Fd mnt(fsmount(fs.get(), FSMOUNT_CLOEXEC, static_cast<unsigned>(attrs)));
  if (!mnt) throw sys_error(what + ": fsmount " + fstype);
  return mnt;
}

// A "cgroup" mount on a v1/hybrid host, as runc does it: a tmpfs with one
// directory per host hierarchy. With a cgroup namespace each directory gets a
// fresh mount of its hierarchy (the namespace makes the container's cgroup its
// root); without one, a bind of the container's own cgroup directory from the
// host. "ro" makes the tmpfs and every hierarchy read-only.
void mount_cgroup_v1(int target, const std::vector<HostHierarchy>& hierarchies, const MountOptions& mo,
                     bool cgroup_ns, const std::string& what) {
  uint64_t set = attrs_of_flags(mo.flags).first;  // fresh mounts have nothing to clear
  bool ro = set & MOUNT_ATTR_RDONLY;
  Fd tmpfs = new_fs_mount("tmpfs", {"mode=755"}, set & ~MOUNT_ATTR_RDONLY, what);
  attach(tmpfs.get(), target, what);
  // The cgroup filesystems never need setuid, devices or executables.
  uint64_t sub_attrs = set | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
  for (const auto& h : hierarchies) {
    std::string sub = what + ": " + h.name;
    // The tmpfs is new and not reachable by the container yet: plain *at calls are safe.
    if (mkdirat(tmpfs.get(), h.name.c_str(), 0755) < 0 && errno != EEXIST) throw sys_error(sub + ": mkdir");
    Fd dir(openat(tmpfs.get(), h.name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) throw sys_error(sub + ": open");
    Fd tree;
    if (cgroup_ns) {
      tree = h.v2 ? new_fs_mount("cgroup2", {}, sub_attrs, sub) : new_fs_mount("cgroup", h.options, sub_attrs, sub);
    } else {
      std::string path = own_cgroup(h, sub), rel_path;
      if (h.root == "/")
        rel_path = path;
      else if (path == h.root)
        rel_path = "/";
      else if (path.rfind(h.root + "/", 0) == 0)
        rel_path = path.substr(h.root.size());
      else
        throw Error(sub + ": the container's cgroup " + path + " is outside the host's mount " + h.mount_point);
      MountOptions bmo;
      bmo.flags = mo.flags | MS_NOSUID | MS_NODEV | MS_NOEXEC;
      bmo.recursive_bind = true;
      std::string source = h.mount_point + (rel_path == "/" ? "" : rel_path);
      tree = bind_tree(open_source(source, sub).get(), source, bmo, sub);
    }
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
  if (mo.attr_set || mo.attr_clr) setattr(tmpfs.get(), AT_RECURSIVE, mo.attr_set, mo.attr_clr, 0, what);
  if (mo.propagation)
    setattr(tmpfs.get(), (mo.propagation & MS_REC) ? AT_RECURSIVE : 0, 0, 0, mo.propagation & ~MS_REC, what);
}

// CVE-2019-16884, CVE-2019-19921: procfs and sysfs only land on a real
// directory; a symlink as the last component is refused even if it points
// inside the rootfs (LSM policies are written against the path /proc).
Fd real_dir_in_root(int root_fd, const std::string& dest, const std::string& type, const std::string& what) {
  size_t slash = dest.rfind('/');
  Fd parent = ensure_in_root(root_fd, dest.substr(0, slash), false, what);
  std::string base = dest.substr(slash + 1);
  if (base.empty()) return parent;
  if (mkdirat(parent.get(), base.c_str(), 0755) < 0 && errno != EEXIST) throw sys_error("create " + what);
  Fd self(openat(parent.get(), base.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!self) throw sys_error("open " + what);
  if (!S_ISDIR(fd_stat(self.get(), what).st_mode))
    throw Error(what + ": " + type + " must be mounted on a directory, not a symlink or file", ENOTDIR);
  return self;
}

// Is the mount at /dev a bind mount? Then its devices are the host's and we
// leave them alone (as runc does); otherwise we populate it.
const spec::Mount* dev_mount(const spec::Spec& spec, bool* is_bind) {
  const spec::Mount* found = nullptr;
  for (const auto& m : spec.mounts)
    if (clean_path(m.destination) == "/dev") found = &m;
  if (found) {
    MountOptions mo = parse_mount_options(found->options);
    *is_bind = mo.bind || found->type == "bind";
  }
  return found;
}

void mount_one(int root_fd, const spec::Mount& m, size_t index,
               const RootfsOptions& opts, bool cgroup_ns) {
  std::string what = "mounts[" + std::to_string(index) + "] (" + m.destination + ")";
  // config.md: a relative destination is relative to "/" (clean_path does that).
  if (m.destination.empty()) throw Error("mounts[" + std::to_string(index) + "].destination: must not be empty");
  MountOptions mo;
  try {
    mo = parse_mount_options(m.options);
  } catch (const Error& e) {
    rethrow_with(what, e);
  }
  bool bind = mo.bind || m.type == "bind";
  Fd premade;      // a detached idmapped tree
  Fd bind_source;  // otherwise, for a bind mount, the source (O_PATH)
  if (spec::is_idmapped(m)) {
    auto it = opts.idmapped.find(index);
    if (it != opts.idmapped.end()) {
      premade = Fd(fcntl(it->second, F_DUPFD_CLOEXEC, 0));
      if (!premade) throw sys_error(what + ": idmapped mount fd");
    } else if (opts.user_ns) {
      // Inside the container's user namespace we lack CAP_SYS_ADMIN over the
      // source filesystem; only the runtime on the host can build it.
      throw Error(what + ": an idmapped mount in a user namespace must be prepared by the runtime (make_idmapped_mount)");
    } else {
      premade = idmapped_tree(m, -1, what);
    }
  } else if (bind) {
    auto it = opts.sources.find(index);
    bind_source = it != opts.sources.end() ? Fd(fcntl(it->second, F_DUPFD_CLOEXEC, 0)) : open_source(m.source, what);
    if (!bind_source) throw sys_error(what + ": bind source fd");
  }
  int source_fd = premade ? premade.get() : bind_source.get();
  bool as_file = bind && !S_ISDIR(fd_stat(source_fd, what + ": bind source " + m.source).st_mode);
  std::string dest = clean_path(m.destination);
  // runc gives a tmpfs without mode= the mode of the directory it covers; one
  // husk has to make keeps tmpfs's own default (1777), as there.
  bool mode_from_dest = m.type == "tmpfs" && ("," + mo.data).find(",mode=") == std::string::npos &&
                        Fd(raw_openat2(root_fd, rel(dest), O_PATH, kInRoot));
  Fd target = (m.type == "proc" || m.type == "sysfs") ? real_dir_in_root(root_fd, dest, m.type, what)
                                                      : ensure_in_root(root_fd, dest, as_file, what);
  std::string resolved = path_in_root(root_fd, target.get());
  check_proc_destination(resolved, m, bind ? source_fd : -1, what);

  if (premade) {
    attach_tree(premade.get(), target.get(), mo, what);
    return;
  }
  if (bind) {
    bind_mount(bind_source.get(), m.source, target.get(), mo, what);
    return;
  }
  if (m.type.empty()) throw Error(what + ": type is required for a non-bind mount");

  unsigned long flags = mo.flags;
  // /dev stays writable until the device nodes exist; finalize_rootfs makes it ro.
  if (resolved == "/dev") flags &= ~MS_RDONLY;
  std::string type = m.type, data = mo.data;
  if (mode_from_dest) {
    char mode[16];
    snprintf(mode, sizeof mode, "mode=%o", fd_stat(target.get(), what).st_mode & 07777);
    data += (data.empty() ? "" : ",") + std::string(mode);
  }
  if (type == "cgroup") {
    auto hierarchies = host_v1_hierarchies();
    if (!hierarchies.empty()) {
      mount_cgroup_v1(target.get(), hierarchies, mo, cgroup_ns, what);
      return;
    }
    // A unified host: /sys/fs/cgroup is cgroup2 itself. v1 controller names
    // in the options would be invalid for it.
    type = "cgroup2";
    data.clear();
  }
  Fd lower;  // tmpcopyup: the image's directory that the tmpfs will cover
  bool ro_after_copy = false;
  if (mo.tmpcopyup) {
    if (type != "tmpfs") throw Error(what + ": tmpcopyup is only for tmpfs mounts");
    lower = Fd(openat(target.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!lower) throw sys_error("open " + what + " for tmpcopyup");
    ro_after_copy = flags & MS_RDONLY;
    flags &= ~MS_RDONLY;
  }
  std::string source = m.source.empty() ? type : m.source;
  uint64_t before = mount_id(target.get(), what);
  if (mount(source.c_str(), fd_path(target.get()).c_str(), type.c_str(), flags,
            data.empty() ? nullptr : data.c_str()) < 0) {
    int err = errno;
    if (type == "sysfs" && err == EPERM && opts.user_ns) {
      // A user namespace that does not own the network namespace may not
      // mount sysfs; show the host's /sys instead (read-only as requested).
      MountOptions fallback = mo;
      fallback.bind = fallback.recursive_bind = true;
      fallback.flags |= MS_NOSUID | MS_NODEV | MS_NOEXEC;
      bind_mount(open_source("/sys", what).get(), "/sys", target.get(), fallback, what);
      return;
    }
    throw sys_error("mount " + m.type + " on " + m.destination, err);
  }
  if (!mo.propagation && !mo.attr_set && !mo.attr_clr && !mo.tmpcopyup) return;
  // Reach the new mount itself (the target fd still names the directory under it).
  Fd mounted(raw_openat2(root_fd, rel(resolved), O_PATH, kInRoot));
  if (!mounted) throw sys_error("open " + what + " after mounting");
  if (mount_id(mounted.get(), what) == before) throw Error(what + ": the new mount is not at its destination");
  if (lower) {
    copy_tree(lower.get(), mounted.get(), resolved);
    if (ro_after_copy) setattr(mounted.get(), 0, MOUNT_ATTR_RDONLY, 0, 0, what);
  }
  if (mo.attr_set || mo.attr_clr) setattr(mounted.get(), AT_RECURSIVE, mo.attr_set, mo.attr_clr, 0, what);
  if (mo.propagation)
    setattr(mounted.get(), (mo.propagation & MS_REC) ? AT_RECURSIVE : 0, 0, 0, mo.propagation & ~MS_REC, what);
}

struct DefaultDevice {
  const char* path;
  int64_t major, minor;
};
constexpr DefaultDevice kDefaultDevices[] = {
    {"/dev/null", 1, 3},    {"/dev/zero", 1, 5},    {"/dev/full", 1, 7},
    {"/dev/random", 1, 8},  {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0},
};

void make_device(int root_fd, const spec::Device& d, bool user_ns, const std::string& what) {
  std::string path = clean_path(d.path);
  if (d.path.empty() || d.path[0] != '/' || path == "/") throw Error(what + ".path: must be an absolute file path");
  mode_t type;
  if (d.type == "c" || d.type == "u")
    type = S_IFCHR;
  else if (d.type == "b")
    type = S_IFBLK;
  else if (d.type == "p")
    type = S_IFIFO;
  else
    throw Error(what + ".type: must be c, b, u or p");
  size_t slash = path.rfind('/');
  Fd dir = ensure_in_root(root_fd, path.substr(0, slash), false, what);
  std::string name = path.substr(slash + 1);

  if (user_ns && type != S_IFIFO) {
    // mknod of devices is not allowed in a user namespace: bind the host's node.
    int fd = openat(dir.get(), name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) throw sys_error("create " + path + " in the rootfs");
    if (fd >= 0) close(fd);
    Fd target(openat(dir.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!target) throw sys_error("open " + path + " in the rootfs");
    mode_t m = fd_stat(target.get(), path).st_mode;
    if (!S_ISREG(m) && !S_ISCHR(m) && !S_ISBLK(m)) throw Error(what + ": " + path + " exists in the rootfs and is not a file");
    Fd tree(open_tree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (!tree) throw sys_error(what + ": open host device " + path);
    mode_t hm = fd_stat(tree.get(), path).st_mode;
    if ((hm & S_IFMT) != type) throw Error(what + ": host " + path + " is not a device of type " + d.type);
    attach(tree.get(), target.get(), path);
    return;
  }

  mode_t perm = d.file_mode ? (*d.file_mode & 07777) : 0666;
  dev_t dev = type == S_IFIFO ? 0 : makedev(static_cast<unsigned>(d.major), static_cast<unsigned>(d.minor));
  mode_t old = umask(0);
  int rc = mknodat(dir.get(), name.c_str(), type | perm, dev);
  int err = errno;
  umask(old);
  if (rc < 0) {
    if (err != EEXIST) throw sys_error("mknod " + path, err);
    // config-linux.md: an existing file that is not the requested device is an error.
    struct stat st;
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throw sys_error("stat " + path);
    if ((st.st_mode & S_IFMT) != type || (type != S_IFIFO && st.st_rdev != dev))
      throw Error(what + ": " + path + " already exists in the rootfs and is not the requested device");
    return;  // the rootfs already has it; keep what the image ships
  }
  uid_t uid = d.uid.value_or(0);
  gid_t gid = d.gid.value_or(0);
  if (fchownat(dir.get(), name.c_str(), uid, gid, AT_SYMLINK_NOFOLLOW) < 0) throw sys_error("chown " + path);
}

// The default devices (unless linux.devices lists the same path), the /dev
// symlinks, linux.devices, then /dev/ptmx.
void setup_dev(int root_fd, const spec::Spec& spec, const RootfsOptions& opts) {
  static const std::vector<spec::Device> kNone;
  const auto& devices = spec.linux_ ? spec.linux_->devices : kNone;
  Fd dev = ensure_in_root(root_fd, "/dev", false, "/dev");
  for (const auto& d : kDefaultDevices) {
    bool listed = false;
    for (const auto& sd : devices) listed |= clean_path(sd.path) == d.path;
    if (listed) continue;
    spec::Device sd;
    sd.type = "c";
    sd.path = d.path;
    sd.major = d.major;
    sd.minor = d.minor;
    make_device(root_fd, sd, opts.user_ns, d.path);
  }
  std::vector<std::pair<const char*, const char*>> links = {
      {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
      {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}};
  if (access("/proc/kcore", F_OK) == 0) links.emplace_back("/proc/kcore", "core");
  for (const auto& [target, name] : links)
    if (symlinkat(target, dev.get(), name) < 0 && errno != EEXIST)
      throw sys_error(std::string("symlink /dev/") + name);
  for (size_t i = 0; i < devices.size(); ++i)
    make_device(root_fd, devices[i], opts.user_ns, "linux.devices[" + std::to_string(i) + "]");
  // The devpts instance mounted at /dev/pts has its own ptmx. After
  // linux.devices: privileged configs list the host's /dev/ptmx (5:2) too,
  // and runc replaces that node as well.
  if (unlinkat(dev.get(), "ptmx", 0) < 0 && errno != ENOENT) throw sys_error("remove /dev/ptmx");
  if (symlinkat("pts/ptmx", dev.get(), "ptmx") < 0) throw sys_error("symlink /dev/ptmx");
}

// The mount point of the mount holding `path`.
std::string mount_point_of(const std::string& path) {
  Fd fd(open(path.c_str(), O_PATH | O_CLOEXEC));
  if (!fd) throw sys_error("open " + path);
  uint64_t id = mount_id(fd.get(), path);
  for (const auto& mi : read_mountinfo())
    if (mi.id == id) return mi.mount_point;
  throw Error("find the mount holding " + path + " in /proc/self/mountinfo");
}

// --no-pivot leaves the old root underneath. While a fully visible host procfs
// or sysfs is anywhere in the mount namespace, the kernel lets the container
// mount a fresh, unmasked one; so detach those first (or cover them).
void hide_host_proc_sys(const std::string& rootfs) {
  auto infos = read_mountinfo();
  for (auto it = infos.rbegin(); it != infos.rend(); ++it) {  // children before parents
    const std::string& p = it->mount_point;
    if (it->fstype != "proc" && it->fstype != "sysfs") continue;
    if (p == rootfs || p.rfind(rootfs + "/", 0) == 0) continue;
    // The unmount must not propagate to the host.
    if (mount(nullptr, p.c_str(), nullptr, MS_SLAVE | MS_REC, nullptr) < 0) {
      if (errno == ENOENT || errno == EINVAL) continue;  // already gone with a parent
      throw sys_error("make " + p + " rslave");
    }
    if (umount2(p.c_str(), MNT_DETACH) == 0) continue;
    if (errno != EINVAL && errno != EPERM) throw sys_error("detach host " + it->fstype + " at " + p);
    // Locked under a user namespace: cover it with an empty tmpfs instead.
    if (mount("tmpfs", p.c_str(), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) < 0)
      throw sys_error("cover host " + it->fstype + " at " + p);
  }
}

bool needs_mount_ns(const spec::Spec& spec) {
  if (!spec.mounts.empty() || (spec.root && spec.root->readonly)) return true;
  if (!spec.linux_) return false;
  const auto& l = *spec.linux_;
  return !l.devices.empty() || !l.masked_paths.empty() || !l.readonly_paths.empty() ||
         !l.rootfs_propagation.empty();
}

}  // namespace

int make_idmapped_mount(const spec::Mount& m, int userns_fd) {
  std::string what = "mount " + m.destination;
  Fd tree = idmapped_tree(m, userns_fd, what);
  return tree.release();
}

std::vector<size_t> runtime_opened_sources(const spec::Spec& spec) {
  std::vector<size_t> out;
  if (!spec.linux_ || !spec.linux_->has_namespace("user") || !spec.linux_->has_namespace("mount")) return out;
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const auto& m = spec.mounts[i];
    if (!spec::is_idmapped(m) && (m.type == "bind" || parse_mount_options(m.options).bind)) out.push_back(i);
  }
  return out;
}

std::vector<int> open_bind_sources(const spec::Spec& spec, const std::vector<size_t>& indexes, int init_pid,
                                   int userns_fd) {
  if (indexes.empty()) return {};
  const std::string proc = "/proc/" + std::to_string(init_pid) + "/";
  const spec::Namespace* mnt = spec.linux_ ? spec.linux_->find_namespace("mount") : nullptr;
  bool joined = mnt && !mnt->path.empty();
  std::string ns_path = joined ? mnt->path : proc + "ns/mnt";
  Fd ns(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) throw sys_error("open the container's mount namespace " + ns_path);
  // setns() into a joined namespace moves the init to its root, as it does the helper.
  Fd cwd;
  if (!joined) {
    cwd = Fd(open((proc + "cwd").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!cwd) throw sys_error("open " + proc + "cwd");
  }
  // A mount's own uidMappings/gidMappings namespace is made here, on the
  // host: the helper's /proc may be a joined namespace's, where it is not.
  std::vector<Fd> own_userns(indexes.size());
  for (size_t k = 0; k < indexes.size(); ++k) {
    const auto& m = spec.mounts[indexes[k]];
    if (spec::is_idmapped(m) && !m.uid_mappings.empty())
      own_userns[k] = userns_with_mappings(m, "mount " + m.destination);
  }
  // One message per source: {stage, errno, why} and, when it opened, the fd.
  struct Reply {
    char stage;
    int err;
    char why[1024];
  };
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) throw sys_error("socketpair for bind sources");
  Fd mine(sv[0]), theirs(sv[1]);
  pid_t pid = fork();
  if (pid < 0) throw sys_error("fork to open bind sources");
  if (pid == 0) {
    auto reply = [&](char stage, int err, const char* why, int fd) {
      Reply r{stage, err, {}};
      if (why) strncpy(r.why, why, sizeof r.why - 1);
      if (base::send_with_fd(theirs.get(), &r, sizeof r, fd) < 0) _exit(1);
    };
    if (setns(ns.get(), CLONE_NEWNS) < 0) {
      reply('n', errno, nullptr, -1);
      _exit(1);
    }
    if (cwd && fchdir(cwd.get()) < 0) {
      reply('c', errno, nullptr, -1);
      _exit(1);
    }
    for (size_t k = 0; k < indexes.size(); ++k) {
      const auto& m = spec.mounts[indexes[k]];
      if (spec::is_idmapped(m)) {
        // Cloned from the container's copy of the source's mount, so the
        // host's locked flags (a read-only host mount) hold in the idmapped one.
        try {
          spec::Mount with_ns = m;
          if (own_userns[k]) {
            with_ns.uid_mappings.clear();
            with_ns.gid_mappings.clear();
          }
          Fd tree(make_idmapped_mount(with_ns, own_userns[k] ? own_userns[k].get() : userns_fd));
          reply('o', 0, nullptr, tree.get());
        } catch (const std::exception& e) {
          reply('i', 0, e.what(), -1);
          _exit(1);
        }
        continue;
      }
      int fd = open(m.source.c_str(), O_PATH | O_CLOEXEC);
      reply('o', fd < 0 ? errno : 0, nullptr, fd);
      if (fd < 0) _exit(1);
      close(fd);
    }
    _exit(0);
  }
  theirs.reset();
  std::vector<int> fds;
  std::string err;
  for (size_t k = 0; k < indexes.size() && err.empty(); ++k) {
    Reply r{};
    int got;
    ssize_t n = base::recv_with_fd(mine.get(), &r, sizeof r, &got);
    Fd passed(got);
    const auto& m = spec.mounts[indexes[k]];
    std::string what = "mounts[" + std::to_string(indexes[k]) + "] (" + m.destination + ")";
    r.why[sizeof r.why - 1] = '\0';
    if (n != static_cast<ssize_t>(sizeof r))
      err = what + ": the helper opening bind sources died";
    else if (r.stage == 'n')
      err = sys_error("enter the container's mount namespace " + ns_path, r.err).what();
    else if (r.stage == 'c')
      err = sys_error("enter the init's working directory " + proc + "cwd", r.err).what();
    else if (r.stage == 'i')
      err = r.why;
    else if (r.err != 0 || !passed)
      err = sys_error(what + ": open bind source " + m.source, r.err ? r.err : EPROTO).what();
    else
      fds.push_back(passed.release());
  }
  mine.reset();
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!err.empty()) {
    for (int fd : fds) close(fd);
    throw Error(err);
  }
  return fds;
}

int open_in_root(int root_fd, const std::string& path, int flags, unsigned mode) {
  int fd = raw_openat2(root_fd, rel(path), static_cast<uint64_t>(flags), kInRoot, mode);
  if (fd < 0) throw sys_error("open " + path + " in the container root");
  return fd;
}

void prepare_rootfs(const spec::Spec& spec, const RootfsOptions& opts) {
  if (!opts.own_mount_ns) {
    if (needs_mount_ns(spec))
      throw Error("mounts, devices, maskedPaths, readonlyPaths, root.readonly and rootfsPropagation need a new mount namespace");
    return;
  }
  std::string rootfs = canonical(opts.rootfs);
  std::string prop = spec.linux_ ? spec.linux_->rootfs_propagation : "";
  if (mount(nullptr, "/", nullptr, rootfs_propagation_flag(prop), nullptr) < 0)
    throw sys_error("set propagation of / in the container's mount namespace");
  // pivot_root refuses a shared parent, and a bind onto a shared mount would
  // propagate to the host: make the mount holding the rootfs private first.
  std::string parent = mount_point_of(rootfs);
  if (mount(nullptr, parent.c_str(), nullptr, MS_PRIVATE, nullptr) < 0)
    throw sys_error("make " + parent + " private");
  // The rootfs must be a mount point of its own for pivot_root.
  if (mount(rootfs.c_str(), rootfs.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
    throw sys_error("bind mount rootfs " + rootfs + " on itself");
  Fd root(open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) throw sys_error("open rootfs " + rootfs);

  // The init has unshared (or joined) the cgroup namespace by now.
  bool cgroup_ns = spec.linux_ && spec.linux_->has_namespace("cgroup");
  for (size_t i = 0; i < spec.mounts.size(); ++i) mount_one(root.get(), spec.mounts[i], i, opts, cgroup_ns);

  // A /dev bound from the host is the host's: never create nodes in it.
  bool dev_is_bind = false;
  dev_mount(spec, &dev_is_bind);
  if (!dev_is_bind) setup_dev(root.get(), spec, opts);
}

void enter_rootfs(const RootfsOptions& opts) {
  std::string rootfs = canonical(opts.rootfs);
  if (!opts.own_mount_ns) {
    if (chroot(rootfs.c_str()) < 0) throw sys_error("chroot " + rootfs);
    if (chdir("/") < 0) throw sys_error("chdir / in the rootfs");
    return;
  }
  if (chdir(rootfs.c_str()) < 0) throw sys_error("chdir " + rootfs);
  if (opts.no_pivot) {
    // --no-pivot (rootfs on a ramfs): the old root stays underneath, reachable
    // by a process with CAP_SYS_CHROOT; that is the documented cost of the option.
    hide_host_proc_sys(rootfs);
    if (mount(rootfs.c_str(), "/", nullptr, MS_MOVE, nullptr) < 0) throw sys_error("move rootfs " + rootfs + " to /");
    if (chroot(".") < 0) throw sys_error("chroot " + rootfs);
    if (chdir("/") < 0) throw sys_error("chdir / in the rootfs");
    return;
  }
  // pivot_root(".", "."): the old root ends up stacked on top of the new one
  // at "/", where it can be detached without needing a directory for it.
  Fd old_root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!old_root) throw sys_error("open the old root");
  if (syscall(SYS_pivot_root, ".", ".") < 0) throw sys_error("pivot_root into " + rootfs);
  // Step onto the old root explicitly: "." must name it, not the new root
  // below it, or the rslave below would also hit the container's own mounts
  // (and drop a "shared" bind mount's propagation).
  if (fchdir(old_root.get()) < 0) throw sys_error("chdir to the old root");
  // Unmounts of the old root must not propagate anywhere (it may be shared
  // with the host when rootfsPropagation asked for that).
  if (mount(nullptr, ".", nullptr, MS_SLAVE | MS_REC, nullptr) < 0) throw sys_error("make the old root rslave");
  if (umount2(".", MNT_DETACH) < 0) throw sys_error("detach the old root");
  if (chdir("/") < 0) throw sys_error("chdir / in the rootfs");
}

namespace {

void write_sysctls(const spec::Spec& spec, int root_fd) {
  if (!spec.linux_ || spec.linux_->sysctl.empty()) return;
  check_sysctl(spec);
  constexpr uint64_t kStrict = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  // The container's /proc is whatever it mounted there: use it only if it is procfs.
  Fd procsys(raw_openat2(root_fd, "proc/sys", O_PATH | O_DIRECTORY, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
  if (!procsys) throw sys_error("linux.sysctl: open /proc/sys in the container");
  if (!on_procfs(procsys.get())) throw Error("linux.sysctl: /proc/sys in the container is not procfs");
  for (const auto& [key, value] : spec.linux_->sysctl) {
    std::string path = key;
    for (auto& c : path)
      if (c == '.') c = '/';
    Fd fd(raw_openat2(procsys.get(), path, O_WRONLY | O_NOFOLLOW, kStrict));
    if (!fd) throw sys_error("linux.sysctl: open /proc/sys/" + path);
    if (!on_procfs(fd.get())) throw Error("linux.sysctl: /proc/sys/" + path + " is not on procfs");
    ssize_t n = write(fd.get(), value.data(), value.size());
    if (n < 0) throw sys_error("linux.sysctl: write \"" + value + "\" to " + key);
    if (static_cast<size_t>(n) != value.size()) throw Error("linux.sysctl: short write to " + key);
  }
}

// maskedPaths: files get /dev/null over them, directories an empty read-only tmpfs.
void mask_paths(const std::vector<std::string>& paths, int root_fd) {
  Fd null_fd;
  for (const auto& p : paths) {
    std::string what = "maskedPaths: " + p;
    Fd target(raw_openat2(root_fd, rel(p), O_PATH, kInRoot));
    if (!target) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      throw sys_error(what);
    }
    if (S_ISDIR(fd_stat(target.get(), what).st_mode)) {
      Fd fs(fsopen("tmpfs", FSOPEN_CLOEXEC));
      if (!fs) throw sys_error(what + ": fsopen tmpfs");
      if (fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) < 0) throw sys_error(what + ": create tmpfs");
      Fd mnt(fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC));
      if (!mnt) throw sys_error(what + ": fsmount tmpfs");
      attach(mnt.get(), target.get(), what);
      continue;
    }
    if (!null_fd) {
      // CVE-2025-31133: the container's /dev/null could be a symlink or bind
      // of something else, which would then be exposed instead of hidden.
      null_fd = Fd(raw_openat2(root_fd, "dev/null", O_PATH | O_NOFOLLOW, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS));
      if (!null_fd) throw sys_error("maskedPaths: open /dev/null in the container");
      struct stat st = fd_stat(null_fd.get(), "/dev/null");
      if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3))
        throw Error("maskedPaths: /dev/null in the container is not the null device (1:3)");
    }
    Fd tree(open_tree(null_fd.get(), "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
    if (!tree) throw sys_error(what + ": clone /dev/null");
    attach(tree.get(), target.get(), what);
  }
}

void readonly_paths(const std::vector<std::string>& paths, int root_fd) {
  for (const auto& p : paths) {
    std::string what = "readonlyPaths: " + p;
    Fd target(raw_openat2(root_fd, rel(p), O_PATH, kInRoot));
    if (!target) {
      if (errno == ENOENT || errno == ENOTDIR) continue;
      throw sys_error(what);
    }
    Fd tree(open_tree(target.get(), "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE));
    if (!tree) throw sys_error(what + ": clone");
    setattr(tree.get(), AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0, 0, what);
    attach(tree.get(), target.get(), what);
  }
}

}  // namespace

void finalize_rootfs(const spec::Spec& spec, const RootfsOptions& opts) {
  Fd root(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) throw sys_error("open / of the container");
  if (!opts.own_mount_ns) {
    write_sysctls(spec, root.get());
    return;
  }
  if (spec.linux_ && !spec.linux_->rootfs_propagation.empty())
    if (mount(nullptr, "/", nullptr, rootfs_propagation_flag(spec.linux_->rootfs_propagation), nullptr) < 0)
      throw sys_error("linux.rootfsPropagation: set propagation of /");
  write_sysctls(spec, root.get());
  if (spec.linux_) {
    mask_paths(spec.linux_->masked_paths, root.get());
    readonly_paths(spec.linux_->readonly_paths, root.get());
  }
  bool dev_is_bind = false;
  const spec::Mount* dev = dev_mount(spec, &dev_is_bind);
  if (dev && !dev_is_bind && (parse_mount_options(dev->options).flags & MS_RDONLY)) {
    Fd d(raw_openat2(root.get(), "dev", O_PATH | O_DIRECTORY, kInRoot));
    if (!d) throw sys_error("open /dev to make it read-only");
    setattr(d.get(), 0, MOUNT_ATTR_RDONLY, 0, 0, "/dev");
  }
  if (spec.root && spec.root->readonly) setattr(root.get(), 0, MOUNT_ATTR_RDONLY, 0, 0, "/ (root.readonly)");
}

}  // namespace husk::ns
