#include "support.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace conformance {

namespace {

std::string errno_text(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

int open_or_throw(const fs::path& p, int flags, mode_t mode = 0644) {
  int fd = ::open(p.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) throw SuiteError(errno_text("open " + p.string()));
  return fd;
}

std::vector<char*> c_argv(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ProcResult run_process(const SpawnOptions& opt) {
  if (opt.argv.empty()) throw SuiteError("run_process: empty argv");
  int in = open_or_throw("/dev/null", O_RDONLY);
  int out = open_or_throw(opt.stdout_file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
  int err = open_or_throw(opt.stderr_file, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND);
  auto argv_copy = opt.argv;
  auto argv = c_argv(argv_copy);
  pid_t pid = ::fork();
  if (pid < 0) throw SuiteError(errno_text("fork"));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(err, 2);
    if (!opt.cwd.empty() && ::chdir(opt.cwd.c_str()) != 0) _exit(126);
    ::execvp(argv[0], argv.data());
    dprintf(2, "exec %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent, so the kill below cannot race
  ::close(in);
  ::close(out);
  ::close(err);

  ProcResult r;
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  auto deadline = std::chrono::steady_clock::now() + opt.timeout;
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    if (pidfd >= 0) {
      pollfd pfd{pidfd, POLLIN, 0};
      ::poll(&pfd, 1, static_cast<int>(std::min<long>(left.count(), 1000)));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  r.exit_code = r.timed_out ? -1 : decode_status(status);
  r.out = try_read_file(opt.stdout_file).value_or("");
  r.err = try_read_file(opt.stderr_file).value_or("");
  return r;
}

pid_t spawn_background(const std::vector<std::string>& argv_in) {
  auto argv_copy = argv_in;
  auto argv = c_argv(argv_copy);
  int null = open_or_throw("/dev/null", O_RDWR);
  pid_t pid = ::fork();
  if (pid < 0) throw SuiteError(errno_text("fork"));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execvp(argv[0], argv.data());
    _exit(127);
  }
  ::close(null);
  return pid;
}

void kill_background(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  int status;
  ::waitpid(pid, &status, 0);
}

std::optional<std::string> try_read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string read_file(const fs::path& p) {
  auto s = try_read_file(p);
  if (!s) throw SuiteError("cannot read " + p.string());
  return *s;
}

void write_file(const fs::path& p, const std::string& content, mode_t mode) {
  int fd = open_or_throw(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = ::write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      throw SuiteError(errno_text("write " + p.string()));
    }
    off += static_cast<size_t>(n);
  }
  ::fchmod(fd, mode);  // umask must not change what a case asked for
  ::close(fd);
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
  return s;
}

std::string readlink_or_empty(const fs::path& p) {
  std::error_code ec;
  auto t = fs::read_symlink(p, ec);
  return ec ? std::string() : t.string();
}

namespace {

std::vector<std::string> mount_points() {
  std::vector<std::string> out;
  std::istringstream in(try_read_file("/proc/self/mountinfo").value_or(""));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string id, parent, devno, root, mp;
    ls >> id >> parent >> devno >> root >> mp;
    out.push_back(mp);
  }
  return out;
}

void remove_below(int dirfd, dev_t dev, const std::string& shown) {
  int dup = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  DIR* d = ::fdopendir(dup);
  if (!d) {
    ::close(dup);
    throw SuiteError(errno_text("opendir " + shown));
  }
  std::vector<std::pair<std::string, bool>> entries;
  while (auto* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    struct stat st;
    if (::fstatat(dirfd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_dev != dev) throw SuiteError("refusing to cross a mount at " + shown + "/" + n);
    entries.emplace_back(n, S_ISDIR(st.st_mode));
  }
  ::closedir(d);
  for (auto& [n, is_dir] : entries) {
    if (is_dir) {
      int sub = ::openat(dirfd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) throw SuiteError(errno_text("open " + shown + "/" + n));
      ::fchmod(sub, 0700);  // a case may have left a read-only directory
      try {
        remove_below(sub, dev, shown + "/" + n);
      } catch (...) {
        ::close(sub);
        throw;
      }
      ::close(sub);
      if (::unlinkat(dirfd, n.c_str(), AT_REMOVEDIR) != 0)
        throw SuiteError(errno_text("rmdir " + shown + "/" + n));
    } else if (::unlinkat(dirfd, n.c_str(), 0) != 0) {
      throw SuiteError(errno_text("unlink " + shown + "/" + n));
    }
  }
}

}  // namespace

void remove_tree(const fs::path& p) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return;
  std::string prefix = p.string() + "/";
  for (auto& mp : mount_points())
    if (mp == p.string() || mp.rfind(prefix, 0) == 0)
      throw SuiteError("not removing " + p.string() + ": " + mp + " is still mounted");
  if (!S_ISDIR(st.st_mode)) {
    ::unlink(p.c_str());
    return;
  }
  int fd = ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw SuiteError(errno_text("open " + p.string()));
  try {
    remove_below(fd, st.st_dev, p.string());
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (::rmdir(p.c_str()) != 0) throw SuiteError(errno_text("rmdir " + p.string()));
}

json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Sequence: {
      json a = json::array();
      for (const auto& e : n) a.push_back(yaml_to_json(e));
      return a;
    }
    case YAML::NodeType::Map: {
      json o = json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = yaml_to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Scalar:
      break;
  }
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: always a string
  if (s == "~" || s == "null") return nullptr;
  if (s == "true") return true;
  if (s == "false") return false;
  if (!s.empty()) {
    char* end = nullptr;
    errno = 0;
    if (s[0] == '-') {
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (*end == '\0' && errno == 0) return v;
    } else if (s.size() > 2 && s[0] == '0' && s[1] == 'o') {
      unsigned long long v = std::strtoull(s.c_str() + 2, &end, 8);  // YAML 1.2 octal
      if (*end == '\0' && errno == 0) return v;
    } else if (s.size() > 1 && s[0] == '0' && std::isdigit(static_cast<unsigned char>(s[1]))) {
      unsigned long long v = std::strtoull(s.c_str(), &end, 8);  // YAML 1.1 octal (file modes)
      if (*end == '\0' && errno == 0) return v;
    } else if (std::isdigit(static_cast<unsigned char>(s[0]))) {
      unsigned long long v = std::strtoull(s.c_str(), &end, 10);
      if (*end == '\0' && errno == 0) return v;
    }
    errno = 0;
    double d = std::strtod(s.c_str(), &end);
    if (*end == '\0' && errno == 0 && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-'))
      return d;
  }
  return s;
}

HostInfo HostInfo::probe() {
  HostInfo h;
  h.root = ::geteuid() == 0;
  h.cgroup_v2 = fs::exists("/sys/fs/cgroup/cgroup.controllers");
  {
    std::istringstream in(try_read_file("/proc/self/mountinfo").value_or(""));
    std::string line;
    while (std::getline(in, line)) {
      auto dash = line.find(" - ");
      if (dash == std::string::npos) continue;
      std::istringstream pre(line.substr(0, dash)), post(line.substr(dash + 3));
      std::string id, parent, devno, root, mp, opts, fstype, src, sopts;
      pre >> id >> parent >> devno >> root >> mp >> opts;
      post >> fstype >> src >> sopts;
      if (mp == "/" && line.substr(0, dash).find(" shared:") != std::string::npos)
        h.shared_root = true;
      if (fstype == "resctrl") h.resctrl = true;
      if (fstype == "cgroup" || fstype == "cgroup2") h.cgroup_mounts.push_back(mp);
      if (fstype != "cgroup") continue;
      std::istringstream so(sopts);
      std::string o;
      while (std::getline(so, o, ','))
        if (o != "rw" && o != "ro" && o.rfind("name=", 0) != 0 && o.find('=') == std::string::npos)
          h.v1_mounts.emplace(o, mp);
    }
  }
  auto max_userns = try_read_file("/proc/sys/user/max_user_namespaces");
  h.userns = fs::exists("/proc/self/ns/user") && max_userns && trim(*max_userns) != "0";
  h.timens = fs::exists("/proc/self/timens_offsets");
  h.apparmor = trim(try_read_file("/sys/module/apparmor/parameters/enabled").value_or("")) == "Y";
  h.selinux = fs::exists("/sys/fs/selinux/enforce");
  h.numa = fs::exists("/proc/self/numa_maps") && fs::exists("/sys/devices/system/node/node0");
  struct utsname u;
  if (::uname(&u) == 0) h.machine = u.machine;
  h.oom_score_adj = trim(try_read_file("/proc/self/oom_score_adj").value_or(""));
  return h;
}

std::string HostInfo::missing(const std::string& req) const {
  if (req == "root") return root ? "" : "needs root";
  if (req == "cgroup-v2") return cgroup_v2 ? "" : "host cgroups are not unified (v2)";
  if (req == "cgroup-v1") return cgroup_v2 ? "host cgroups are unified (v2), not v1" : "";
  if (req.rfind("cgroup-v1:", 0) == 0) {
    auto ctrl = req.substr(10);
    if (cgroup_v2) return "host cgroups are unified (v2), not v1";
    return v1_mounts.count(ctrl) ? "" : "cgroup v1 controller " + ctrl + " is not mounted";
  }
  if (req.rfind("cgroup-controller:", 0) == 0) {
    // The controller the runtime would use on this host: v1 mount, or enabled in v2.
    auto ctrl = req.substr(18);
    if (!cgroup_v2) return v1_mounts.count(ctrl) ? "" : "cgroup v1 controller " + ctrl + " is not mounted";
    std::istringstream in(try_read_file("/sys/fs/cgroup/cgroup.controllers").value_or(""));
    for (std::string c; in >> c;)
      if (c == ctrl) return "";
    return "cgroup v2 controller " + ctrl + " is not available";
  }
  if (req.rfind("file:", 0) == 0) {
    auto p = req.substr(5);
    return fs::exists(p) ? "" : p + " does not exist on this host";
  }
  if (req == "userns") return userns ? "" : "user namespaces are not available";
  if (req == "timens") return timens ? "" : "no time namespace (/proc/self/timens_offsets missing)";
  if (req == "apparmor") return apparmor ? "" : "AppArmor is not enabled";
  if (req == "selinux") return selinux ? "" : "SELinux is not enabled";
  if (req == "no-apparmor") return apparmor ? "AppArmor is enabled" : "";
  if (req == "no-selinux") return selinux ? "SELinux is enabled" : "";
  if (req == "resctrl") return resctrl ? "" : "no resctrl filesystem mounted";
  if (req == "no-resctrl") return resctrl ? "a resctrl filesystem is mounted" : "";
  if (req == "numa") return numa ? "" : "no NUMA support (/proc/self/numa_maps)";
  if (req == "shared-root") return shared_root ? "" : "host / is not a shared mount, so propagation cannot be observed";
  if (req == "x86_64") return machine == "x86_64" ? "" : "host is " + machine + ", not x86_64";
  if (req.rfind("env:", 0) == 0) {
    auto v = req.substr(4);
    const char* e = std::getenv(v.c_str());
    return (e && *e) ? "" : "opt-in: set " + v + "=1 to run";
  }
  if (req.rfind("cmd:", 0) == 0) {
    auto c = req.substr(4);
    for (auto d : {"/usr/bin/", "/bin/", "/usr/sbin/", "/sbin/"})
      if (::access((std::string(d) + c).c_str(), X_OK) == 0) return "";
    return "host command " + c + " not found";
  }
  throw SuiteError("unknown requirement '" + req + "'");
}

}  // namespace conformance
