// The sandbox's directories on the host: private_dir for root's, the
// work directory of one sandbox, and remove_tree for what a sandbox left.
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "base/dir.h"
#include "base/error.h"
#include "sandbox/internal.h"

namespace husk::rt {

using base::Fd;

namespace {

// Removes `name` below `parent` and everything in it: what a sandbox wrote
// (an overlay's upper layer), so hostile. Only fd-relative calls that never
// follow a symlink; a directory made unreadable (mode 000) is given back to
// its owner first; at most kMaxDepth directories are open at once: a deeper
// one is moved up into the top directory and emptied in a later pass.
constexpr int kMaxDepth = 64;

std::vector<std::string> names_in(int dir) {
  std::vector<std::string> names;
  // A new open file description: a dup would share the position a former listing left at the end.
  base::Dir d = base::open_dir(dir);
  if (!d) return names;
  while (dirent* e = ::readdir(d.get()))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
  return names;
}

int open_dir_below(int parent, const std::string& name) {
  int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == EACCES && ::fchmodat(parent, name.c_str(), 0700, AT_SYMLINK_NOFOLLOW) == 0)
    fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) ::fchmod(fd, 0700);  // its entries can be unlinked
  return fd;
}

void empty_dir(int top, int dir, int depth, unsigned& lifted, bool& again) {
  for (const auto& name : names_in(dir)) {
    if (::unlinkat(dir, name.c_str(), 0) == 0 || (errno != EISDIR && errno != EPERM)) continue;
    // Most are empty (the root's mount points): gone without being opened.
    if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) == 0) continue;
    if (depth >= kMaxDepth) {
      for (int tries = 0; tries < 100; ++tries)
        if (::renameat2(dir, name.c_str(), top, (".husk-rm-" + std::to_string(lifted++)).c_str(), RENAME_NOREPLACE) ==
            0) {
          again = true;
          break;
        }
      continue;
    }
    int sub = open_dir_below(dir, name);
    if (sub < 0) continue;
    empty_dir(top, sub, depth + 1, lifted, again);
    ::close(sub);
    ::unlinkat(dir, name.c_str(), AT_REMOVEDIR);
  }
}

}  // namespace

void remove_tree(int parent, const std::string& name) {
  int top = open_dir_below(parent, name);
  if (top < 0) {
    ::unlinkat(parent, name.c_str(), 0);
    return;
  }
  unsigned lifted = 0;
  for (bool again = true; again;) {
    again = false;
    empty_dir(top, top, 1, lifted, again);
  }
  ::close(top);
  ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
}

namespace {

std::string mode_text(mode_t mode) {
  char buf[8];
  snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

base::Fd private_dir(const std::string& path, uid_t owner, mode_t mode, int at) {
  const bool absolute = !path.empty() && path[0] == '/';
  std::string shown = absolute ? "" : ".";
  base::Fd dir(::openat(absolute ? AT_FDCWD : at, absolute ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) throw sys_error("sandbox: open " + std::string(absolute ? "/" : "the directory of " + path));
  auto check = [&](const std::string& name) {
    struct stat st;
    if (::fstat(dir.get(), &st) != 0) throw sys_error("sandbox: fstat " + name);
    // root's own directories above (/, /run) are as safe as owner's.
    if (st.st_uid != owner && st.st_uid != 0)
      throw Error("sandbox: " + name + " is owned by uid " + std::to_string(st.st_uid) + ", not " +
                  std::to_string(owner) + ": refused (its owner could swap what husk makes there)");
    if (st.st_mode & 022)
      throw Error("sandbox: " + name + " may be written by group or others (mode " + mode_text(st.st_mode) +
                  "): refused (they could swap what husk makes there)");
  };
  if (absolute) check("/");
  std::istringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == "..") throw Error("sandbox: " + path + ": no .. allowed");
    shown += "/" + part;
    if (::mkdirat(dir.get(), part.c_str(), mode) != 0 && errno != EEXIST) throw sys_error("sandbox: mkdir " + shown);
    // A symlink is refused, never followed.
    base::Fd next(::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next) throw sys_error("sandbox: open " + shown + " (a symlink is not followed)");
    dir = std::move(next);
    check(shown);
  }
  return dir;
}

void make_dirs_at(int at, const std::string& rel, const std::string& shown) {
  Fd dir(::openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::istringstream parts(rel);
  std::string part, path = shown;
  while (dir && std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    path += "/" + part;
    if (::mkdirat(dir.get(), part.c_str(), 0700) != 0 && errno != EEXIST) throw sys_error("sandbox: mkdir " + path);
    dir = Fd(::openat(dir.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  }
  if (!dir) throw sys_error("sandbox: open " + path);
}

namespace {

// A new directory below `base` named prefix + 6 random characters, as
// mkdtemp(3) makes one but relative to an fd. Returns its name.
std::string make_temp_at(int base, const std::string& prefix, mode_t mode, const std::string& shown) {
  static const char kChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  for (int tries = 0; tries < 100; ++tries) {
    unsigned char rnd[6];
    if (::getrandom(rnd, sizeof rnd, 0) != sizeof rnd) throw sys_error("sandbox: getrandom");
    std::string name = prefix;
    for (unsigned char c : rnd) name += kChars[c % (sizeof kChars - 1)];
    if (::mkdirat(base, name.c_str(), mode) == 0) return name;
    if (errno != EEXIST) throw sys_error("sandbox: mkdir " + shown + "/" + name);
  }
  throw Error("sandbox: mkdir " + shown + "/" + prefix + "XXXXXX: every name tried exists");
}

base::Fd open_base(const std::string& path) {
  base::Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw sys_error("sandbox: open " + path);
  return fd;
}

// A directory to make ours in. As root, directories only root can write
// (a user's $XDG_RUNTIME_DIR, kept by sudo, would let that user swap ours
// for a symlink or a directory of theirs under root's hands), which others
// may pass through (0711): the init resolves the root by its path as the
// sandbox's user (/run/husk, 0700, would stop it). /run is a tmpfs: some
// 40 mount points are made and removed at every start, several times
// slower on a disk (ext4 journals each). Else in memory where there is a
// place: $XDG_RUNTIME_DIR is a tmpfs of the user's, /dev/shm root's tmpfs
// anyone may use as /tmp.
std::pair<base::Fd, std::string> base_dir() {
  if (::geteuid() == 0) return {private_dir("/run/husk-sandbox", 0, 0711), "/run/husk-sandbox"};
  std::string base = "/tmp";
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  struct statfs fs;
  struct stat st;
  if (xdg && *xdg && ::access(xdg, W_OK | X_OK) == 0)
    base = xdg;
  else if (::statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC && ::stat("/dev/shm", &st) == 0 &&
           S_ISDIR(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == 01777)
    base = "/dev/shm";
  return {open_base(base), base};
}

// What the command writes goes on a disk, not into a tmpfs: /dev/shm is
// memory every user shares, /run the system's.
std::pair<base::Fd, std::string> layers_base_dir() {
  if (::geteuid() == 0) return {private_dir("/var/lib/husk-sandbox", 0, 0711), "/var/lib/husk-sandbox"};
  return {open_base("/tmp"), "/tmp"};
}

}  // namespace

void Workdir::Temp::make(std::pair<base::Fd, std::string> where) {
  base = std::move(where.first);
  // The init reaches the root and the layers through it as the user.
  name = make_temp_at(base.get(), "husk-sandbox-", 0711, where.second);
  path = where.second + "/" + name;
  fd = base::Fd(::openat(base.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw sys_error("sandbox: open " + path);
}

void Workdir::Temp::remove() const {
  if (fd) ::unlinkat(base.get(), name.c_str(), AT_REMOVEDIR);
}

Workdir::Workdir(uint32_t uid, uint32_t gid, bool layers) : uid_(uid), gid_(gid) {
  auto base = base_dir();
  const bool layers_apart = base.second == "/dev/shm" || ::geteuid() == 0;  // not in a shared tmpfs
  work_.make(std::move(base));
  std::vector<std::pair<int, const char*>> made = {{work_.fd.get(), "rootfs"}};
  if (layers) {
    if (layers_apart) layers_.make(layers_base_dir());
    made.push_back({layers_fd(), "overlay"});
  }
  base::Fd empty(::openat(work_.fd.get(), "empty", O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0444));
  if (!empty) throw sys_error("sandbox: make " + empty_file());
  // Made here, in a directory of ours: chown cannot be led elsewhere.
  for (const auto& [dir, name] : made)
    if (::mkdirat(dir, name, 0755) != 0 ||
        (::geteuid() == 0 && ::fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0))
      throw sys_error(std::string("sandbox: make ") + (dir == work_.fd.get() ? work_.path : layers_.path) + "/" +
                      name);
}

void Workdir::remove() const {
  if (work_.fd) {
    // Empty: the mount points are in the sandbox's own root tmpfs. As root
    // the removal of a tree forks; a plain rmdir needs no fork.
    if (::unlinkat(work_.fd.get(), "rootfs", AT_REMOVEDIR) != 0 && errno != ENOENT)
      remove_users_tree(uid_, gid_, work_.fd.get(), "rootfs");
    // Without a user namespace: the command's TMPDIR. Looked at first: as
    // root the removal forks, which the normal sandbox need not pay for.
    struct stat st;
    if (::fstatat(work_.fd.get(), "tmp", &st, AT_SYMLINK_NOFOLLOW) == 0)
      remove_users_tree(uid_, gid_, work_.fd.get(), "tmp");
    ::unlinkat(work_.fd.get(), "state", AT_REMOVEDIR);
    ::unlinkat(work_.fd.get(), "empty", 0);
  }
  if (layers_fd() >= 0) remove_users_tree(uid_, gid_, layers_fd(), "overlay");
  work_.remove();
  layers_.remove();
}

}  // namespace husk::rt
