// /dev of the container: the default devices, the /dev symlinks and
// linux.devices, made by mknod or, in a user namespace, bound from the host.
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "namespaces/internal.h"

namespace husk::ns::detail {

// Is the mount at /dev a bind mount? Then its devices are the host's and we
// leave them alone (as runc does); otherwise we populate it.
const spec::Mount* dev_mount(const spec::Spec& spec, bool* is_bind) {
  const spec::Mount* found = nullptr;
  for (const auto& m : spec.mounts)
    if (clean_path(m.destination) == "/dev") found = &m;
  if (found) {
    spec::MountOptions mo = spec::parse_mount_options(found->options);
    *is_bind = mo.bind || found->type == "bind";
  }
  return found;
}

namespace {

struct DefaultDevice {
  const char* path;
  int64_t major, minor;
};
constexpr DefaultDevice kDefaultDevices[] = {
    {"/dev/null", 1, 3},    {"/dev/zero", 1, 5},    {"/dev/full", 1, 7},
    {"/dev/random", 1, 8},  {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0},
};

// mknod of devices is not allowed in a user namespace: bind the host's node
// `path` onto a file `name` made in `dir`.
void bind_host_device(int dir, const std::string& name, const std::string& path, mode_t type,
                      const spec::Device& d, const std::string& what) {
  int fd = openat(dir, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno != EEXIST) throw sys_error("create " + path + " in the rootfs");
  if (fd >= 0) close(fd);
  Fd target(openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!target) throw sys_error("open " + path + " in the rootfs");
  mode_t m = fd_stat(target.get(), path).st_mode;
  if (!S_ISREG(m) && !S_ISCHR(m) && !S_ISBLK(m)) throw Error(what + ": " + path + " exists in the rootfs and is not a file");
  Fd tree(open_tree(AT_FDCWD, path.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (!tree) throw sys_error(what + ": open host device " + path);
  mode_t hm = fd_stat(tree.get(), path).st_mode;
  if ((hm & S_IFMT) != type) throw Error(what + ": host " + path + " is not a device of type " + d.type);
  attach(tree.get(), target.get(), path);
}

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
    bind_host_device(dir.get(), name, path, type, d, what);
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

}  // namespace

// The default devices come first unless linux.devices lists the same path.
void setup_dev(int root_fd, const spec::Spec& spec, const RootfsOptions& opts) {
  static const std::vector<spec::Device> kNone;
  const auto& devices = spec.linux_ ? spec.linux_->devices : kNone;
  Fd dev = ensure_in_root(root_fd, "/dev", false, "/dev");
  // mknod needs CAP_MKNOD in the host's user namespace.
  bool bind = opts.user_ns || opts.caller_user_ns;
  for (const auto& d : kDefaultDevices) {
    bool listed = false;
    for (const auto& sd : devices) listed |= clean_path(sd.path) == d.path;
    if (listed) continue;
    spec::Device sd;
    sd.type = "c";
    sd.path = d.path;
    sd.major = d.major;
    sd.minor = d.minor;
    make_device(root_fd, sd, bind, d.path);
  }
  std::vector<std::pair<const char*, const char*>> links = {
      {"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"},
      {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}};
  if (access("/proc/kcore", F_OK) == 0) links.emplace_back("/proc/kcore", "core");
  for (const auto& [target, name] : links)
    if (symlinkat(target, dev.get(), name) < 0 && errno != EEXIST)
      throw sys_error(std::string("symlink /dev/") + name);
  for (size_t i = 0; i < devices.size(); ++i)
    make_device(root_fd, devices[i], bind, "linux.devices[" + std::to_string(i) + "]");
  // The devpts instance mounted at /dev/pts has its own ptmx. After
  // linux.devices: privileged configs list the host's /dev/ptmx (5:2) too,
  // and runc replaces that node as well.
  if (unlinkat(dev.get(), "ptmx", 0) < 0 && errno != ENOENT) throw sys_error("remove /dev/ptmx");
  if (symlinkat("pts/ptmx", dev.get(), "ptmx") < 0) throw sys_error("symlink /dev/ptmx");
}

}  // namespace husk::ns::detail
