#include "launch/process.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/capability.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "base/error.h"
#include "base/fd.h"
#include "base/file.h"
#include "base/log.h"
#include "namespaces/namespaces.h"

namespace husk::rt {

using base::Fd;

static const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Go's errno texts (runc's) are strerror's with a lower-case first letter.
static std::string errno_text(int err) {
  std::string t = strerror(err);
  if (!t.empty()) t[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(t[0])));
  return t;
}

static bool is_executable_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

// EACCES for a directory or a file without x bits, else why stat(2) failed (ENOENT: nothing there).
static int not_executable_why(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 ? EACCES : errno;
}

Lookup lookup_executable(const std::string& arg0, const std::vector<std::string>& env) {
  Lookup l;
  if (arg0.find('/') != std::string::npos) {
    if (is_executable_file(arg0)) l.path = arg0;
    else l.err = not_executable_why(arg0);
    return l;
  }
  l.on_path = true;
  l.err = ENOENT;
  std::string path = kDefaultPath;
  for (const auto& kv : env)
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + arg0;
    if (is_executable_file(cand)) {
      l.path = cand;
      l.err = 0;
      return l;
    }
    if (not_executable_why(cand) == EACCES) l.err = EACCES;
    start = end + 1;
  }
  return l;
}

std::string find_executable(const std::string& arg0, const std::vector<std::string>& env) {
  Lookup l = lookup_executable(arg0, env);
  if (!l.path.empty()) return l.path;
  // As Go's exec.LookPath: what is on PATH but not executable is passed over.
  if (l.on_path) throw Error("exec: \"" + arg0 + "\": executable file not found in $PATH", ENOENT);
  throw Error("exec: \"" + arg0 + "\": " + errno_text(l.err), l.err);
}

int shell_exec_status(const Lookup& l) { return l.path.empty() && l.err == ENOENT ? 127 : 126; }

std::string shell_exec_error(const std::string& arg0, const Lookup& l, bool found, int err) {
  if (!found && l.on_path && l.err == ENOENT) return arg0 + ": command not found";
  if (!found) return arg0 + ": " + errno_text(l.err);
  std::string why = arg0 + ": cannot execute: " + errno_text(err);
  // The file is there: what execve did not find is what it names inside.
  if (err == ENOENT) why += " (its interpreter, the #! line's or the ELF loader, is missing)";
  return why;
}

static int sched_policy(const std::string& name) {
  static const std::pair<const char*, int> kPolicies[] = {
      {"SCHED_OTHER", SCHED_OTHER}, {"SCHED_FIFO", SCHED_FIFO},   {"SCHED_RR", SCHED_RR},
      {"SCHED_BATCH", SCHED_BATCH}, {"SCHED_IDLE", SCHED_IDLE},   {"SCHED_DEADLINE", 6}};
  for (auto& [n, v] : kPolicies)
    if (name == n) return v;
  throw Error("process.scheduler.policy: unknown policy \"" + name + "\"");
}

// The kernel's struct sched_attr (glibc 2.36 has no wrapper).
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime, sched_deadline, sched_period;
};

static uint64_t sched_flag(const std::string& name) {
  static const std::pair<const char*, uint64_t> kFlags[] = {
      {"SCHED_FLAG_RESET_ON_FORK", 0x01}, {"SCHED_FLAG_RECLAIM", 0x02},
      {"SCHED_FLAG_DL_OVERRUN", 0x04},    {"SCHED_FLAG_KEEP_POLICY", 0x08},
      {"SCHED_FLAG_KEEP_PARAMS", 0x10},   {"SCHED_FLAG_UTIL_CLAMP_MIN", 0x20},
      {"SCHED_FLAG_UTIL_CLAMP_MAX", 0x40}};
  for (auto& [n, v] : kFlags)
    if (name == n) return v;
  throw Error("process.scheduler.flags: unknown flag \"" + name + "\"");
}

// "0-2,4" -> node bitmask for set_mempolicy.
static std::vector<unsigned long> node_mask(const std::string& list) {
  std::vector<unsigned long> mask(16, 0);  // 1024 nodes
  size_t i = 0;
  while (i < list.size()) {
    size_t end = list.find(',', i);
    if (end == std::string::npos) end = list.size();
    std::string part = list.substr(i, end - i);
    auto dash = part.find('-');
    unsigned long lo, hi;
    try {
      lo = std::stoul(part.substr(0, dash));
      hi = dash == std::string::npos ? lo : std::stoul(part.substr(dash + 1));
    } catch (const std::exception&) {
      throw Error("linux.memoryPolicy.nodes: invalid node list \"" + list + "\"");
    }
    if (hi < lo || hi >= mask.size() * 64) throw Error("linux.memoryPolicy.nodes: invalid node list \"" + list + "\"");
    for (unsigned long n = lo; n <= hi; ++n) mask[n / 64] |= 1ul << (n % 64);
    i = end + 1;
  }
  return mask;
}

static void apply_memory_policy(const spec::MemoryPolicy& mp) {
  static const std::pair<const char*, int> kModes[] = {
      {"MPOL_DEFAULT", 0}, {"MPOL_PREFERRED", 1}, {"MPOL_BIND", 2}, {"MPOL_INTERLEAVE", 3},
      {"MPOL_LOCAL", 4},   {"MPOL_PREFERRED_MANY", 5}, {"MPOL_WEIGHTED_INTERLEAVE", 6}};
  static const std::pair<const char*, int> kFlags[] = {
      {"MPOL_F_STATIC_NODES", 1 << 15}, {"MPOL_F_RELATIVE_NODES", 1 << 14}, {"MPOL_F_NUMA_BALANCING", 1 << 13}};
  int mode = -1;
  for (auto& [n, v] : kModes)
    if (mp.mode == n) mode = v;
  if (mode < 0) throw Error("linux.memoryPolicy.mode: unknown mode \"" + mp.mode + "\"");
  for (const auto& f : mp.flags)
    for (auto& [n, v] : kFlags)
      if (f == n) mode |= v;
  std::vector<unsigned long> mask = node_mask(mp.nodes);
  bool empty = mp.nodes.empty();
  if (::syscall(SYS_set_mempolicy, mode, empty ? nullptr : mask.data(), empty ? 0 : mask.size() * 64 + 1) != 0)
    throw sys_error("linux.memoryPolicy: set_mempolicy " + mp.mode + " nodes \"" + mp.nodes + "\"");
}

void apply_limits(const spec::Process& p, const spec::Linux* linux_cfg) {
  for (size_t i = 0; i < p.rlimits.size(); ++i) {
    const auto& rl = p.rlimits[i];
    int res = spec::rlimit_resource(rl.type);
    if (res < 0) throw Error("process.rlimits[" + std::to_string(i) + "].type: unknown rlimit \"" + rl.type + "\"");
    rlimit lim{rl.soft, rl.hard};
    if (::setrlimit(res, &lim) != 0) throw sys_error("setrlimit " + rl.type);
  }
  if (linux_cfg && linux_cfg->memory_policy) apply_memory_policy(*linux_cfg->memory_policy);
  if (linux_cfg && linux_cfg->personality) {
    const auto& d = linux_cfg->personality->domain;
    unsigned long persona = d == "LINUX32" ? PER_LINUX32 : PER_LINUX;
    if (::personality(persona) < 0) throw sys_error("personality " + d);
  }
  if (p.scheduler) {
    SchedAttr a{};
    a.size = sizeof a;
    a.sched_policy = static_cast<uint32_t>(sched_policy(p.scheduler->policy));
    for (const auto& f : p.scheduler->flags) a.sched_flags |= sched_flag(f);
    a.sched_nice = p.scheduler->nice;
    a.sched_priority = static_cast<uint32_t>(p.scheduler->priority);
    a.sched_runtime = p.scheduler->runtime;
    a.sched_deadline = p.scheduler->deadline;
    a.sched_period = p.scheduler->period;
    if (::syscall(SYS_sched_setattr, 0, &a, 0) != 0) {
      // With RT group scheduling a cgroup without budget refuses even root.
      int err = errno;
      bool rt = a.sched_policy == SCHED_FIFO || a.sched_policy == SCHED_RR;
      throw sys_error("process.scheduler: sched_setattr " + p.scheduler->policy +
                      (rt && err == EPERM ? " (needs CAP_SYS_NICE and a realtime budget in the container's "
                                              "cgroup: linux.resources.cpu.realtimeRuntime)"
                                            : ""),
                      err);
    }
  }
  if (p.io_priority) {
    int klass = p.io_priority->klass == "IOPRIO_CLASS_RT"   ? 1
                : p.io_priority->klass == "IOPRIO_CLASS_BE" ? 2
                                                             : 3;
    int prio = (klass << 13) | p.io_priority->priority;
    if (::syscall(SYS_ioprio_set, 1 /* IOPRIO_WHO_PROCESS */, 0, prio) != 0)
      throw sys_error("ioprio_set " + p.io_priority->klass);
  }
}

// config.md: a capability that cannot be granted (unknown name, newer than
// this kernel, or outside husk's own bounding set, as when an engine runs
// husk with fewer capabilities) is logged as a warning and skipped, not fatal.
// `own` is husk's bounding set, read before anything is dropped.
static int cap_number_or_warn(const std::string& name, const char* field, const std::vector<bool>& own) {
  int v = spec::capability_number(name);
  if (v < 0 || v > static_cast<int>(cap_max_bits()) - 1) {
    log::warn(std::string("process.capabilities.") + field + ": ignoring capability \"" + name +
              "\" that this kernel cannot grant");
    return -1;
  }
  if (!own[static_cast<size_t>(v)]) {
    log::warn(std::string("process.capabilities.") + field + ": ignoring capability \"" + name +
              "\" that is not in the runtime's own bounding set");
    return -1;
  }
  return v;
}

static void set_cap_list(cap_t caps, cap_flag_t flag, const std::vector<std::string>& names, const char* field,
                         const std::vector<bool>& own) {
  std::vector<cap_value_t> values;
  for (const auto& n : names) {
    int v = cap_number_or_warn(n, field, own);
    if (v < 0) continue;
    values.push_back(v);
  }
  if (!values.empty() && cap_set_flag(caps, flag, static_cast<int>(values.size()), values.data(), CAP_SET) != 0)
    throw sys_error(std::string("set capability flag ") + field);
}

void switch_user_and_caps(const spec::Process& p, bool in_user_ns) {
  const spec::Capabilities none;
  const spec::Capabilities& c = p.capabilities ? *p.capabilities : none;
  int last = static_cast<int>(cap_max_bits()) - 1;
  // husk's own bounding set, to check the names against: not read when no
  // set names any (a prctl each, and the sandbox names none).
  std::vector<bool> own(static_cast<size_t>(last + 1));
  if (!c.bounding.empty() || !c.effective.empty() || !c.permitted.empty() || !c.inheritable.empty() ||
      !c.ambient.empty())
    for (int v = 0; v <= last; ++v) own[static_cast<size_t>(v)] = ::prctl(PR_CAPBSET_READ, v, 0, 0, 0) == 1;

  // Bounding set first: it needs CAP_SETPCAP, which the user switch may drop.
  std::vector<bool> keep(static_cast<size_t>(last + 1), false);
  for (const auto& n : c.bounding) {
    int v = cap_number_or_warn(n, "bounding", own);
    if (v >= 0) keep[static_cast<size_t>(v)] = true;
  }
  for (int v = 0; v <= last; ++v)
    if (!keep[static_cast<size_t>(v)] && ::prctl(PR_CAPBSET_DROP, v, 0, 0, 0) != 0 && errno != EINVAL)
      throw sys_error("drop capability " + std::to_string(v) + " from the bounding set");

  if (::prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) != 0) throw sys_error("prctl PR_SET_KEEPCAPS");
  const auto& u = p.user;
  std::vector<gid_t> groups(u.additional_gids.begin(), u.additional_gids.end());
  // setgroups is denied in a user namespace whose setgroups file says "deny".
  if (::setgroups(groups.size(), groups.data()) != 0 && !(in_user_ns && errno == EPERM && groups.empty())) {
    int err = errno;
    if (in_user_ns && err == EPERM && base::try_read_file("/proc/self/setgroups").value_or("") == "deny\n")
      throw Error("process.user.additionalGids: setgroups is denied in the container's user namespace "
                  "(/proc/self/setgroups says deny)", EPERM);
    throw sys_error("setgroups", err);
  }
  if (::setresgid(u.gid, u.gid, u.gid) != 0) throw sys_error("setgid " + std::to_string(u.gid));
  if (::setresuid(u.uid, u.uid, u.uid) != 0) throw sys_error("setuid " + std::to_string(u.uid));
  if (::prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) != 0) throw sys_error("prctl PR_SET_KEEPCAPS");

  cap_t caps = cap_init();
  if (!caps) throw sys_error("cap_init");
  set_cap_list(caps, CAP_EFFECTIVE, c.effective, "effective", own);
  set_cap_list(caps, CAP_PERMITTED, c.permitted, "permitted", own);
  set_cap_list(caps, CAP_INHERITABLE, c.inheritable, "inheritable", own);
  int rc = cap_set_proc(caps);
  int err = errno;
  cap_free(caps);
  if (rc != 0) throw sys_error("set process capabilities", err);

  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
    throw sys_error("clear ambient capabilities");
  for (const auto& n : c.ambient) {
    int v = cap_number_or_warn(n, "ambient", own);
    if (v < 0) continue;
    // Raising an ambient cap not in permitted+inheritable fails; runc ignores that.
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, v, 0, 0);
  }
  ::umask(u.umask ? *u.umask : 022);
}

void write_oom_score_adj(pid_t pid, const spec::Process& p) {
  if (p.oom_score_adj)
    base::write_file("/proc/" + std::to_string(pid) + "/oom_score_adj", std::to_string(*p.oom_score_adj));
}

void apply_no_new_privs(const spec::Process& p) {
  if (p.no_new_privileges && ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) throw sys_error("prctl PR_SET_NO_NEW_PRIVS");
}

void close_fds_except(int first, std::vector<int> keep) {
  std::sort(keep.begin(), keep.end());
  unsigned from = static_cast<unsigned>(first);
  for (int fd : keep) {
    if (fd < 0 || static_cast<unsigned>(fd) < from) continue;
    if (static_cast<unsigned>(fd) > from) ::syscall(SYS_close_range, from, static_cast<unsigned>(fd) - 1, 0);
    from = static_cast<unsigned>(fd) + 1;
  }
  ::syscall(SYS_close_range, from, ~0u, 0);
}

void prepare_fds_for_exec(int preserve_fds) {
  unsigned first_closed = 3u + static_cast<unsigned>(preserve_fds);
  if (::syscall(SYS_close_range, first_closed, ~0u, CLOSE_RANGE_CLOEXEC) != 0) throw sys_error("close_range");
  for (int fd = 3; fd < static_cast<int>(first_closed); ++fd) {
    int fl = ::fcntl(fd, F_GETFD);
    if (fl >= 0) ::fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
  }
}

void make_cwd(const std::string& cwd) {
  if (!cwd.empty()) base::mkdir_all(cwd, 0755);
}

void enter_cwd(const std::string& cwd) {
  std::string dir = cwd.empty() ? "/" : cwd;
  if (::chdir(dir.c_str()) != 0) throw Error("chdir to cwd " + dir + ": " + errno_text(errno), errno);
  // A cwd reached through a leaked host fd shows as "(unreachable)/..." (CVE-2024-21626).
  char buf[4096];
  if (!::getcwd(buf, sizeof buf) || buf[0] != '/')
    throw Error("process.cwd: \"" + dir + "\" is not inside the container");
}

// The home field of uid's line in /etc/passwd, or "/" (no file, no entry).
static std::string passwd_home(uid_t uid) {
  // The image's file: no magic links (a /etc/passwd -> /proc/self/fd/N would
  // read one of our fds, the host log among them), and O_NONBLOCK, so a
  // fifo planted there cannot hang the init.
  Fd fd;
  try {
    Fd root(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (root) fd.reset(ns::open_in_root(root.get(), "/etc/passwd", O_RDONLY | O_NONBLOCK | O_NOCTTY));
  } catch (const Error&) {
    return "/";
  }
  struct stat st;
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return "/";
  std::string text;
  char buf[65536];
  ssize_t n;
  while (text.size() < (16u << 20) && (n = ::read(fd.get(), buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  const std::string want = std::to_string(uid);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    // name:password:uid:gid:gecos:home:shell
    std::vector<std::string> f;
    for (size_t a = pos; a <= eol;) {
      size_t b = std::min(text.find(':', a), eol);
      f.push_back(text.substr(a, b - a));
      a = b + 1;
    }
    if (f.size() >= 6 && f[2] == want) return f[5].empty() ? "/" : f[5];
    pos = eol + 1;
  }
  return "/";
}

std::vector<std::string> process_env(const spec::Process& p) {
  for (const auto& e : p.env)
    if (e.rfind("HOME=", 0) == 0) return p.env;
  std::vector<std::string> env = p.env;
  env.push_back("HOME=" + passwd_home(p.user.uid));
  return env;
}

void chown_stdio(const spec::Process& p) {
  if (p.terminal) return;
  for (int fd = 0; fd < 3; ++fd) {
    struct stat st;
    if (::fstat(fd, &st) != 0 || st.st_uid == p.user.uid) continue;
    // Anonymous pipes and sockets only: a file or named FIFO given as stdio
    // (`husk run < /etc/shadow`) is the host's, and must not change owner.
    struct statfs fs;
    if (::fstatfs(fd, &fs) != 0 || (fs.f_type != PIPEFS_MAGIC && fs.f_type != SOCKFS_MAGIC)) continue;
    // The group stays. EPERM/EINVAL: an owner or id not mapped in our user
    // namespace; runc skips those too.
    if (::fchown(fd, p.user.uid, static_cast<gid_t>(-1)) != 0 && errno != EPERM && errno != EINVAL)
      throw sys_error("chown stdio fd " + std::to_string(fd) + " to uid " + std::to_string(p.user.uid));
  }
}

[[noreturn]] void exec_process(const std::string& path, const spec::Process& p, const std::vector<std::string>& env) {
  std::vector<char*> argv, envp;
  for (const auto& a : p.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  ::execve(path.c_str(), argv.data(), envp.data());
  throw Error("exec " + path + ": " + errno_text(errno), errno);
}

}  // namespace husk::rt
