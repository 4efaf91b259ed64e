// `husk sandbox`: probe the host, build the config (sandbox_config.cpp), run
// it as `run` would from a private state root, and clean everything up.
#include "sandbox/sandbox.h"

#include <dirent.h>
#include <grp.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>

#include "base/error.h"
#include "base/fd.h"
#include "base/file.h"
#include "base/mountinfo.h"
#include "cgroups/cgroups.h"
#include "container/args.h"
#include "launch/foreground.h"
#include "base/log.h"

#include "namespaces/namespaces.h"
#include "sandbox/proxy.h"

extern char** environ;

namespace husk::rt {
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
  int copy = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = copy < 0 ? nullptr : ::fdopendir(copy);
  if (!d) {
    if (copy >= 0) ::close(copy);
    return names;
  }
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
  ::closedir(d);
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


namespace {

using base::Fd;

struct PasswdEntry {
  std::string name, home, shell;
};

// /etc/passwd read directly (no NSS in a static binary): uid's entry and every home.
std::optional<PasswdEntry> read_passwd(uint32_t uid, std::vector<std::string>& homes) {
  std::optional<PasswdEntry> mine;
  std::istringstream lines(base::try_read_file("/etc/passwd").value_or(""));
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::istringstream cols(line);
    std::string col;
    while (std::getline(cols, col, ':')) f.push_back(col);
    if (f.size() < 7 || f[5].empty() || f[5][0] != '/') continue;
    homes.push_back(f[5]);
    if (!mine && f[2] == std::to_string(uid)) mine = PasswdEntry{f[0], f[5], f[6]};
  }
  return mine;
}

std::optional<std::string> real_path(const std::string& p) {
  // Most asked-for paths (credentials in every home) do not exist: one
  // lstat says so, where realpath would read every component's link.
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return std::nullopt;
  // An entry of "/" that is no symlink is its own real path (the root's
  // directories are all asked for).
  if (!S_ISLNK(st.st_mode) && p.size() > 1 && p.rfind('/') == 0 && p != "/." && p != "/..") return p;
  char buf[PATH_MAX];
  if (!::realpath(p.c_str(), buf)) return std::nullopt;
  return std::string(buf);
}

// What the credential lookup knows of a directory (see probe_sandbox_host).
struct Dir {
  bool missing = false;
  std::optional<std::vector<std::string>> dot_names;  // sorted; listed when it is one block
};

Dir look_at(const std::string& dir) {
  Dir d;
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    d.missing = errno == ENOENT || errno == ENOTDIR;
    return d;
  }
  if (!S_ISDIR(st.st_mode) || st.st_size > 4096) return d;
  DIR* ds = ::opendir(dir.c_str());
  if (!ds) return d;
  std::vector<std::string> names;
  while (dirent* e = ::readdir(ds))
    if (e->d_name[0] == '.') names.emplace_back(e->d_name);
  ::closedir(ds);
  std::sort(names.begin(), names.end());
  d.dot_names = std::move(names);
  return d;
}

// fn as the sandbox's user: husk as root must not make paths in a directory
// that user can write (a symlink swapped in would take root's mkdir or chown
// elsewhere). Unprivileged, husk is that user already.
void as_user(uint32_t uid, uint32_t gid, const std::function<void()>& fn) {
  if (::geteuid() != 0) return fn();
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw sys_error("sandbox: pipe");
  Fd rd(p[0]), wr(p[1]);
  pid_t child = ::fork();
  if (child < 0) throw sys_error("sandbox: fork");
  if (child == 0) {
    std::string err;
    try {
      if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0)
        throw sys_error("become uid " + std::to_string(uid));
      fn();
    } catch (const std::exception& e) {
      err = e.what();
    }
    if (!err.empty() && ::write(wr.get(), err.data(), err.size()) < 0) _exit(2);
    _exit(err.empty() ? 0 : 1);
  }
  wr.reset();
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = ::read(rd.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) err.append(buf, static_cast<size_t>(n));
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!err.empty()) throw Error(err);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("sandbox: a step as uid " + std::to_string(uid) + " failed");
}

// remove_tree with the sandbox user's rights: a tree that user can write may
// hold, renamed in from elsewhere on the same filesystem, what only root
// could delete. Root then removes the emptied directory from its own.
void remove_users_tree(uint32_t uid, uint32_t gid, int parent, const std::string& name) {
  try {
    as_user(uid, gid, [&] { remove_tree(parent, name); });
  } catch (const Error&) {
    // What the user cannot remove stays, like any remove_tree leftover.
  }
  ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
}

// mkdir -p of `rel` below the directory `at` (as the user the directories
// are for, see as_user), no symlink followed.
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

// Who runs the command: the caller; as root, --user or sudo's user.
void choose_user(const SandboxOptions& o, SandboxHost& h) {
  if (::geteuid() != 0) {
    if (!o.user.empty()) throw Error("--user: only root chooses the sandbox's user; it runs as you");
    h.uid = ::getuid();
    h.gid = ::getgid();
    return;
  }
  if (!o.user.empty()) {
    UserArg u = parse_user(o.user);
    h.uid = u.uid;
    h.gid = u.gid.value_or(u.uid);
    return;
  }
  const char* sudo_uid = std::getenv("SUDO_UID");
  const char* sudo_gid = std::getenv("SUDO_GID");
  if (!sudo_uid || !sudo_gid)
    throw Error("sandbox as root: name the user the command runs as with --user UID[:GID] (under sudo, sudo's user "
                "is taken)");
  h.uid = static_cast<uint32_t>(parse_decimal(sudo_uid, kMaxId, "SUDO_UID"));
  h.gid = static_cast<uint32_t>(parse_decimal(sudo_gid, kMaxId, "SUDO_GID"));
  // root's own sudo: running as root takes --user 0, said on purpose.
  if (h.uid == 0) throw Error("sandbox as root: SUDO_UID is 0; name the user with --user UID[:GID] (--user 0 for root)");
}

// Whether `pid` handles or ignores sig itself (/proc/<pid>/status, the host's view).
bool takes_signal(pid_t pid, int sig) {
  std::istringstream lines(base::try_read_file("/proc/" + std::to_string(pid) + "/status").value_or(""));
  std::string line;
  uint64_t mask = 0;
  while (std::getline(lines, line))
    if (line.rfind("SigCgt:", 0) == 0 || line.rfind("SigIgn:", 0) == 0)
      mask |= std::strtoull(line.c_str() + 7, nullptr, 16);
  return mask & (1ull << (sig - 1));
}

void arm(int timer, double seconds) {
  itimerspec t{};
  t.it_value.tv_sec = static_cast<time_t>(seconds);
  t.it_value.tv_nsec = static_cast<long>((seconds - std::floor(seconds)) * 1e9);
  if (t.it_value.tv_sec == 0 && t.it_value.tv_nsec == 0) t.it_value.tv_nsec = 1;
  if (::timerfd_settime(timer, 0, &t, nullptr) != 0) throw sys_error("sandbox: timerfd_settime");
}

constexpr double kKillGrace = 2.0;  // seconds between --timeout's SIGTERM and SIGKILL
constexpr int kTimedOut = 124;      // timeout(1)'s status

// The caller's terminal, lent to the command as its stdio: its settings,
// line discipline, exclusive mode and output flow are put back whatever the
// command did to them (output stopped with TCOOFF would block the caller's
// shell at its next write; exclusive mode would refuse its next open).
class TerminalGuard {
 public:
  TerminalGuard() {
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO})
      if (::isatty(fd) && ::tcgetattr(fd, &saved_) == 0 && ::ioctl(fd, TIOCGETD, &ldisc_) == 0) {
        fd_ = fd;
        if (::ioctl(fd, TIOCGEXCL, &exclusive_) != 0) exclusive_ = 0;
        break;
      }
  }
  ~TerminalGuard() { restore(); }
  // Once the command and everything it started are gone.
  void restore() {
    if (fd_ < 0) return;
    // From a background process group these would stop husk (SIGTTOU) when
    // create failed before the wait ignored it: blocked, they just apply.
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    ::sigprocmask(SIG_BLOCK, &ttou, &old);
    // A background husk leaves the settings to the job in the foreground
    // (its shell puts its own back when it gets the terminal again); a
    // terminal that is not husk's controlling one has no foreground to respect.
    if (pid_t fg = ::tcgetpgrp(fd_); fg < 0 || fg == ::getpgrp()) {
      int now = ldisc_;
      if (::ioctl(fd_, TIOCGETD, &now) == 0 && now != ldisc_) ::ioctl(fd_, TIOCSETD, &ldisc_);
      ::tcsetattr(fd_, TCSANOW, &saved_);
    }
    ::tcflow(fd_, TCOON);
    if (!exclusive_) ::ioctl(fd_, TIOCNXCL);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  termios saved_{};
  int ldisc_ = 0;
  int exclusive_ = 0;
};

// The command is pid 1 of its namespace, where the kernel drops a signal it
// has no handler for. A signal whose default is to terminate is made to act
// so: SIGKILL, and the status says the signal that was sent.
// Writes nothing while the command runs: the terminal may be its to stop
// (TCOOFF), and a blocked write would hold back --timeout's SIGKILL.
int wait_sandboxed(pid_t pid, int sigfd, double timeout, bool& timed_out) {
  // With TOSTOP set by the command, a message to the terminal would stop
  // husk (and with it --timeout) while the command runs on.
  ::signal(SIGTTOU, SIG_IGN);
  ::signal(SIGTTIN, SIG_IGN);
  Fd timer(timeout > 0 ? ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC) : -1);
  if (timeout > 0) {
    if (!timer) throw sys_error("sandbox: timerfd_create");
    arm(timer.get(), timeout);
  }
  int emulated = 0;
  timed_out = false;
  bool killed = false;
  auto deliver = [&](int sig) {
    static const int kHarmless[] = {SIGCHLD, SIGURG, SIGWINCH, SIGCONT};
    bool terminates = std::find(std::begin(kHarmless), std::end(kHarmless), sig) == std::end(kHarmless);
    if (terminates && !takes_signal(pid, sig)) {
      emulated = sig;
      ::kill(pid, SIGKILL);
    } else {
      ::kill(pid, sig);
    }
  };
  for (;;) {
    pollfd fds[2] = {{sigfd, POLLIN, 0}, {timer.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw sys_error("poll");
    }
    if (fds[1].revents & POLLIN) {
      uint64_t ticks;
      if (::read(timer.get(), &ticks, sizeof ticks) < 0) ticks = 0;
      if (!timed_out) {
        timed_out = true;
        deliver(SIGTERM);
        arm(timer.get(), kKillGrace);
      } else if (!killed) {
        killed = true;
        ::kill(pid, SIGKILL);
      }
    }
    if (!(fds[0].revents & POLLIN)) continue;
    signalfd_siginfo si;
    if (::read(sigfd, &si, sizeof si) != sizeof si) continue;
    int sig = static_cast<int>(si.ssi_signo);
    if (sig != SIGCHLD) {
      deliver(sig);
      continue;
    }
    int status;
    pid_t r;
    while ((r = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (r != pid) continue;
      if (timed_out) return kTimedOut;
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && emulated) return 128 + emulated;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
}

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

// The sandbox's files on the host: the root's mount points, the overlay
// layers and a state root of its own (so `husk list` of the user does not
// see it), removed at the end. Each is used through fds opened here, and
// removed fd-relative without following a symlink.
class Workdir {
  // A directory to make ours in. As root, directories only root can write
  // (a user's $XDG_RUNTIME_DIR, kept by sudo, would let that user swap ours
  // for a symlink or a directory of theirs under root's hands), which others
  // may pass through (0711): the init resolves the root by its path as the
  // sandbox's user (/run/husk, 0700, would stop it). /run is a tmpfs: some
  // 40 mount points are made and removed at every start, several times
  // slower on a disk (ext4 journals each). Else in memory where there is a
  // place: $XDG_RUNTIME_DIR is a tmpfs of the user's, /dev/shm root's tmpfs
  // anyone may use as /tmp.
  static std::pair<base::Fd, std::string> base_dir() {
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
    return {open_dir(base), base};
  }

  // What the command writes goes on a disk, not into a tmpfs: /dev/shm is
  // memory every user shares, /run the system's.
  static std::pair<base::Fd, std::string> layers_base_dir() {
    if (::geteuid() == 0) return {private_dir("/var/lib/husk-sandbox", 0, 0711), "/var/lib/husk-sandbox"};
    return {open_dir("/tmp"), "/tmp"};
  }

  static base::Fd open_dir(const std::string& path) {
    base::Fd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) throw sys_error("sandbox: open " + path);
    return fd;
  }

  // One directory of ours below a base: made, then held by an fd.
  struct Temp {
    base::Fd base, fd;
    std::string path, name;
    void make(std::pair<base::Fd, std::string> where) {
      base = std::move(where.first);
      // The init reaches the root and the layers through it as the user.
      name = make_temp_at(base.get(), "husk-sandbox-", 0711, where.second);
      path = where.second + "/" + name;
      fd = base::Fd(::openat(base.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!fd) throw sys_error("sandbox: open " + path);
    }
    void remove() const {
      if (fd) ::unlinkat(base.get(), name.c_str(), AT_REMOVEDIR);
    }
  };

 public:
  // The init makes the mount points in the root as the sandbox's user (it has
  // no privilege over host files): the root is that user's. `layers`:
  // --overlay's upper and work directories are made too, the user's as well.
  Workdir(uint32_t uid, uint32_t gid, bool layers) : uid_(uid), gid_(gid) {
    auto base = base_dir();
    const bool layers_apart = base.second == "/dev/shm" || ::geteuid() == 0;  // not in a shared tmpfs
    work_.make(std::move(base));
    std::vector<std::pair<int, const char*>> made = {{work_.fd.get(), "rootfs"}};
    if (layers) {
      if (layers_apart) layers_.make(layers_base_dir());
      made.push_back({layers_fd(), "overlay"});
    }
    // Made here, in a directory of ours: chown cannot be led elsewhere.
    for (const auto& [dir, name] : made)
      if (::mkdirat(dir, name, 0755) != 0 ||
          (::geteuid() == 0 && ::fchownat(dir, name, uid, gid, AT_SYMLINK_NOFOLLOW) != 0))
        throw sys_error(std::string("sandbox: make ") + (dir == work_.fd.get() ? work_.path : layers_.path) + "/" +
                        name);
  }
  // What husk and the sandbox's user made here: the mount points in the
  // root, the overlay layers, our state root.
  ~Workdir() { remove(); }
  void remove() const {
    if (work_.fd) {
      remove_users_tree(uid_, gid_, work_.fd.get(), "rootfs");
      ::unlinkat(work_.fd.get(), "state", AT_REMOVEDIR);
    }
    if (layers_fd() >= 0) remove_users_tree(uid_, gid_, layers_fd(), "overlay");
    work_.remove();
    layers_.remove();
  }
  const std::string& dir() const { return work_.path; }
  std::string rootfs() const { return work_.path + "/rootfs"; }
  std::string overlay() const { return (layers_.fd ? layers_.path : work_.path) + "/overlay"; }
  // The directory overlay() is in.
  int layers_fd() const { return layers_.fd ? layers_.fd.get() : work_.fd.get(); }
  std::string state() const { return work_.path + "/state"; }
  uint32_t uid() const { return uid_; }
  uint32_t gid() const { return gid_; }

 private:
  uint32_t uid_, gid_;
  Temp work_, layers_;
};

// A process outside the sandbox that outlives a killed husk: the sandbox's
// pid 1 gets no parent-death signal (the kernel does not force it on a pid
// namespace's init), so when husk dies without saying "done" the guardian
// deletes the container (its processes killed, its cgroup removed) and the
// workdir. In a process group of its own: a signal to husk's group spares it.
class Guardian {
 public:
  Guardian(const Context& g, const std::string& id, const Workdir& work, int keep_fd) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw sys_error("sandbox: pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw sys_error("sandbox: fork the guardian");
    if (pid_ == 0) {
      ::close(p[1]);
      ::setpgid(0, 0);
      for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(sig, SIG_IGN);
      char done = 0;
      ssize_t n;
      while ((n = ::read(p[0], &done, 1)) < 0 && errno == EINTR) {
      }
      if (n == 0) {  // husk is gone
        try {
          cmd_delete(g, id, true);
        } catch (const Error&) {
        }
        work.remove();
        if (keep_fd >= 0) remove_users_tree(work.uid(), work.gid(), keep_fd, "work");
      }
      _exit(0);
    }
    ::close(p[0]);
    tell_ = Fd(p[1]);
  }
  ~Guardian() {
    char done = 1;
    if (::write(tell_.get(), &done, 1) == 1) ::waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
  Fd tell_;
};

}  // namespace

SandboxHost probe_sandbox_host(const SandboxOptions& o) {
  SandboxHost h;
  choose_user(o, h);
  std::optional<PasswdEntry> pw = read_passwd(h.uid, h.homes);
  if (pw) {
    h.user_name = pw->name;
    h.home = pw->home;
    h.shell = pw->shell;
  }
  // The caller's own HOME (not root's: under sudo it is the user's or root's).
  const char* home = std::getenv("HOME");
  if (::geteuid() != 0 && home && home[0] == '/') h.home = ns::clean_path(home);
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) throw sys_error("sandbox: getcwd");
  h.cwd = cwd;
  if (DIR* d = ::opendir("/")) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || (e->d_type != DT_DIR && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN))
        continue;
      struct stat st;
      if (e->d_type == DT_DIR || (::stat(("/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)))
        h.root_dirs.push_back(name);
    }
    ::closedir(d);
  }
  std::sort(h.root_dirs.begin(), h.root_dirs.end());
  // Credentials are looked for in every home (~20 dot-names each, most of
  // them absent). Each directory is looked at once: missing, its paths are
  // answered without a syscall; small (one block), its dot-names are listed
  // and an absent one needs no lookup; else one lstat per path (homes such
  // as /bin hold a thousand names: listing them cost more than it saved).
  auto dirs = std::make_shared<std::map<std::string, Dir>>();
  h.real = [dirs](const std::string& p) -> std::optional<std::string> {
    size_t slash = p.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      const std::string dir = p.substr(0, slash), name = p.substr(slash + 1);
      auto it = dirs->find(dir);
      if (it == dirs->end()) it = dirs->emplace(dir, look_at(dir)).first;
      const Dir& d = it->second;
      if (d.missing) return std::nullopt;
      if (d.dot_names && name[0] == '.' && !std::binary_search(d.dot_names->begin(), d.dot_names->end(), name))
        return std::nullopt;
    }
    return real_path(p);
  };
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) h.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (o.overlaid())
    for (const auto& m : base::read_mountinfo()) h.mount_points.push_back(m.mount_point);
  // Asked only for limits: create probes the host again.
  if (::geteuid() == 0) {
    h.cgroup = true;
  } else if (o.limited()) {
    h.cgroup = !cgroups::choose_rootless(cgroups::rootless_host(), std::nullopt, "sandbox").path.empty();
  }
  return h;
}

namespace {

void say_notes(const SandboxConfig& sc) {
  for (const auto& n : sc.notes) std::cerr << "husk sandbox: " << n << std::endl;
}

// --print-config: the sandbox for any runtime, nothing run.
int print_config(const SandboxOptions& o) {
  SandboxConfig sc = sandbox_config(o, probe_sandbox_host(o), "rootfs");
  say_notes(sc);
  std::cout << sc.config.dump(1, '\t') << std::endl;
  return 0;
}

// --keep-changes DIR: made (empty) by the user; held by an fd, so that its
// work directory is removed there even if DIR is renamed or replaced.
struct KeptChanges {
  std::string path;  // "" without --keep-changes
  Fd fd;
};

KeptChanges keep_changes_dir(const SandboxOptions& o, const SandboxHost& host) {
  KeptChanges kept;
  if (o.keep_changes.empty()) return kept;
  const std::string keep = flag_path("--keep-changes", o.keep_changes, host.cwd);
  kept.path = keep;
  // Named by its real path, as --rw and --ro are: a symlink above it (one an
  // earlier sandbox planted in the working directory) would take the
  // layers elsewhere.
  const std::string parent = keep.substr(0, std::max<size_t>(keep.rfind('/'), 1));
  if (std::optional<std::string> real = real_path(parent); !real || *real != parent)
    throw Error("--keep-changes " + o.keep_changes + ": " + parent +
                (real ? " is a symlink (or below one) to " + *real + "; name the real directory"
                      : ": no such directory"));
  as_user(host.uid, host.gid, [&] {
    if (::mkdir(keep.c_str(), 0700) == 0) return;
    // An empty one is made again (ours, 0700); content may be an earlier review.
    bool exists = errno == EEXIST;
    if (exists && ::rmdir(keep.c_str()) != 0) {
      if (errno == ENOTEMPTY || errno == EEXIST)
        throw Error("--keep-changes " + o.keep_changes + ": " + keep +
                    " is not empty (an earlier review?); name a new or empty directory");
      // A symlink too: the layers go where the name says, never elsewhere.
      if (errno == ENOTDIR)
        throw Error("--keep-changes " + o.keep_changes + ": " + keep +
                    " is not a directory (a symlink is not followed); name a new or empty directory");
      throw sys_error("--keep-changes " + o.keep_changes + ": make " + keep + " again (rmdir)");
    }
    if (!exists || ::mkdir(keep.c_str(), 0700) != 0)
      throw sys_error("--keep-changes " + o.keep_changes + ": make " + keep);
  });
  kept.fd = Fd(::open(keep.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!kept.fd) throw sys_error("--keep-changes " + o.keep_changes + ": open " + keep);
  // What was opened is DIR itself, not what a parent swapped for a symlink
  // since the check above leads to.
  if (real_path("/proc/self/fd/" + std::to_string(kept.fd.get())) != keep)
    throw Error("--keep-changes " + o.keep_changes + ": " + keep + " moved while it was made; name it again");
  return kept;
}

// The compiled profile is cached where the user's husk keeps it (no
// XDG_RUNTIME_DIR: /tmp/husk-UID). A cache the sandbox could write would
// hand the next sandbox a filter that allows everything: both places are
// masked in every sandbox (sandbox_config), and compile() ignores a cache
// not owned by the caller or open to others. A /tmp/husk-UID someone else
// made, open to others or a symlink is not used either (compile() refuses
// it too): without a cache the filter is the same, only built again,
// where failing would let any user deny the sandbox to another by
// planting the directory first. "" when there is none.
std::string seccomp_cache() {
  std::string mine = "/tmp/husk-" + std::to_string(::geteuid());
  ::mkdir(mine.c_str(), 0700);
  Fd dir(::open(mine.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (dir && ::fstat(dir.get(), &st) == 0 && st.st_uid == ::geteuid() && !(st.st_mode & 022))
    return mine + "/.seccomp-cache";
  std::cerr << "husk sandbox: " << mine
            << " is not yours alone (another user's, open to others, or a symlink): the seccomp filter is "
               "built without its cache"
            << std::endl;
  return "";
}

// The caller's context with a state root of the sandbox's own.
Context sandbox_context(const Context& g, const Workdir& work) {
  Context sg = g;
  sg.root = work.state();
  if (sg.seccomp_cache.empty()) sg.seccomp_cache = seccomp_cache();
  return sg;
}

CreateExtras sandbox_extras(const SandboxOptions& o) {
  CreateExtras extras;
  extras.quiet_no_cgroup = true;  // said above, as a note on the limits it costs
  if (!o.limited())
    extras.no_cgroup_reason = "husk sandbox without limits: its pid namespace ends every process with the command";
  return extras;
}

// The layers are the sandbox user's: its init mounts them without privilege over host files.
void make_layers(const SandboxConfig& sc, const Workdir& work, const KeptChanges& kept, const SandboxHost& host) {
  if (sc.overlay_dirs.empty()) return;
  const bool ours = kept.path.empty();
  const std::string top = ours ? work.overlay() : kept.path;
  Fd dir(ours ? ::openat(work.layers_fd(), "overlay", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1);
  if (ours && !dir) throw sys_error("sandbox: open " + top);
  const int layers = ours ? dir.get() : kept.fd.get();
  as_user(host.uid, host.gid, [&] {
    for (const auto& d : sc.overlay_dirs) make_dirs_at(layers, d.substr(top.size() + 1), top);
  });
}

// --keep-changes keeps the upper layer only: overlayfs's work directory
// next to it goes when the sandbox ends.
struct DropWorkDir {
  int fd;
  uint32_t uid, gid;
  ~DropWorkDir() {
    if (fd >= 0) remove_users_tree(uid, gid, fd, "work");
  }
};

// --allow-host: the proxy listens in the sandbox's network namespace once its init is there.
std::function<void(pid_t)> start_proxy(const SandboxOptions& o, std::unique_ptr<Proxy>& proxy) {
  std::vector<AllowedHost> allowed;
  for (const auto& a : o.allow_hosts) allowed.push_back(parse_allowed_host(a));
  return [&proxy, allowed, local_ok = o.allow_host_loopback, private_ok = o.allow_host_private](pid_t init) {
    proxy = std::make_unique<Proxy>(listen_in_sandbox(init, kProxyPort), allowed, local_ok, private_ok);
  };
}

// The command's status once it is gone, the terminal put back, then what
// the proxy refused, said.
int wait_command(pid_t pid, int sigfd, const SandboxOptions& o, TerminalGuard& terminal, std::unique_ptr<Proxy>& proxy) {
  bool timed_out = false;
  int status = wait_sandboxed(pid, sigfd, o.timeout, timed_out);
  // pid 1 is gone, and with it every process of the sandbox: the terminal is ours again.
  terminal.restore();
  if (timed_out)
    std::cerr << "husk sandbox: --timeout " << o.timeout << "s reached: SIGTERM, then SIGKILL " << kKillGrace
              << "s later if needed" << std::endl;
  if (proxy) {
    std::vector<std::string> denied = proxy->denied();
    proxy.reset();
    std::string list;
    for (const auto& d : denied) list += (list.empty() ? "" : ", ") + d;
    if (!list.empty()) std::cerr << "husk sandbox: --allow-host refused: " << list << std::endl;
  }
  return status;
}

}  // namespace

int cmd_sandbox(const Context& g, const SandboxOptions& o) {
  if (o.print_config) return print_config(o);
  SandboxHost host = probe_sandbox_host(o);
  // A core dump of husk would land in the (writable) working directory with
  // the caller's environment in it.
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  Workdir work(host.uid, host.gid, o.overlay && o.keep_changes.empty());
  KeptChanges kept = keep_changes_dir(o, host);
  Context sg = sandbox_context(g, work);
  CreateExtras extras = sandbox_extras(o);
  CreateOptions co;
  co.id = "sandbox-" + std::to_string(::getpid());
  co.bundle = work.dir();
  // Forked before the config is built: fewer of our pages are shared with
  // it, so fewer copy-on-write faults while we go on.
  Guardian guardian(sg, co.id, work, kept.fd.get());
  SandboxConfig sc = sandbox_config(o, host, work.rootfs(), kept.path.empty() ? work.overlay() : kept.path);
  say_notes(sc);
  make_layers(sc, work, kept, host);
  DropWorkDir drop_work{kept.fd.get(), host.uid, host.gid};

  std::unique_ptr<Proxy> proxy;
  if (!o.allow_hosts.empty()) extras.on_init_open = start_proxy(o, proxy);
  // Saved before the command starts: it may change the settings at once.
  TerminalGuard terminal;
  extras.wait = [&](pid_t pid, int sigfd) { return wait_command(pid, sigfd, o, terminal, proxy); };
  return run_own_config(sg, co, sc.config.dump() + "\n", extras);
}

}  // namespace husk::rt
