// `husk sandbox` where no user namespace can be made or used (inside an
// unprivileged container, kernel.unprivileged_userns_clone=0, AppArmor's
// restriction on unprivileged user namespaces): the command runs in the
// host's own view, behind Landlock, seccomp, no_new_privs and rlimits.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iostream>

#include "base/dir.h"
#include "base/error.h"
#include "base/file.h"
#include "base/path.h"
#include "launch/foreground.h"
#include "sandbox/internal.h"
#include "seccomp/seccomp.h"
#include "spec/spec.h"

namespace husk::rt {
namespace {

using ojson = nlohmann::ordered_json;

int probe_child(void*) { return ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 ? 0 : 1; }

// No socket at all with --net none (socketpair stays); with --net host none
// of AF_UNIX: a pathname socket (the session bus in XDG_RUNTIME_DIR) is not
// a path Landlock governs. The families allowed are compared whole, as the
// profile does (AF_VSOCK, 40, stays out).
void cut_sockets(ojson& seccomp, const std::string& net) {
  ojson kept = ojson::array();
  for (auto& s : seccomp["syscalls"]) {
    auto& names = s["names"];
    names.erase(std::remove(names.begin(), names.end(), "socket"), names.end());
    if (!names.empty()) kept.push_back(s);
  }
  if (net == "host")
    for (uint64_t family = 2; family <= 45; ++family)
      if (family != 40)
        kept.push_back({{"names", {"socket"}},
                        {"action", "SCMP_ACT_ALLOW"},
                        {"args", {{{"index", 0}, {"value", family}, {"op", "SCMP_CMP_EQ"}}}}});
  seccomp["syscalls"] = std::move(kept);
}

// The command's environment: the config's, HOME and TMPDIR in the scratch
// directory unless the home is shown.
std::vector<std::string> bare_env(const spec::Process& p, const SandboxHost& h, const std::string& scratch,
                                  bool home_shown) {
  std::vector<std::string> env;
  for (const auto& e : p.env)
    if (e.rfind("TMPDIR=", 0) != 0 && (home_shown || e.rfind("HOME=", 0) != 0)) env.push_back(e);
  if (!home_shown || h.home.empty()) env.push_back("HOME=" + scratch + "/home");
  env.push_back("TMPDIR=" + scratch + "/tmp");
  return env;
}

// In the forked child: never returns. Errors are said on stderr.
[[noreturn]] void exec_bare(const spec::Process& p, const std::vector<std::string>& env, const landlock::Plan& plan,
                            const seccomp::Program& filter) {
  try {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Dies with husk; its own session, so kill(0) stays among its processes.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::setsid() < 0) throw sys_error("husk sandbox: setsid");
    ::syscall(SYS_close_range, 3U, ~0U, 0U);
    for (const auto& rl : p.rlimits) {
      const rlimit lim{rl.soft, rl.hard};
      if (::setrlimit(spec::rlimit_resource(rl.type), &lim) != 0) throw sys_error("husk sandbox: set " + rl.type);
    }
    if (::chdir(p.cwd.c_str()) != 0) throw sys_error("husk sandbox: enter the working directory " + p.cwd);
    std::vector<std::string> notes;
    base::Fd ruleset = landlock::build(plan, landlock::rights(plan, landlock::abi()), notes);
    landlock::restrict_self(ruleset.get());
    ruleset.reset();
    seccomp::load(filter);
    std::vector<char*> argv, envp;
    for (const auto& a : p.args) argv.push_back(const_cast<char*>(a.c_str()));
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    argv.push_back(nullptr);
    envp.push_back(nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    std::cerr << "husk sandbox: " << p.args[0] << ": " << std::strerror(err) << std::endl;
    ::_exit(err == ENOENT ? 127 : 126);
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    ::_exit(1);
  }
}

// Every process the command left (orphans come to us, a subreaper) is
// killed and reaped: there is no pid namespace to end them.
void end_the_rest() {
  const std::string me = std::to_string(::getpid());
  for (int round = 0; round < 1000; ++round) {
    bool any = false;
    base::Dir proc(::opendir("/proc"));
    while (dirent* e = proc ? ::readdir(proc.get()) : nullptr) {
      if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
      const std::string stat = base::try_read_file("/proc/" + std::string(e->d_name) + "/stat").value_or("");
      // "pid (comm) state ppid": comm may hold anything, the last ')' ends it.
      const size_t close = stat.rfind(')');
      if (close == std::string::npos) continue;
      size_t ppid_at = stat.find(' ', close + 2);
      if (ppid_at == std::string::npos || stat.compare(ppid_at + 1, me.size() + 1, me + " ") != 0) continue;
      ::kill(std::atoi(e->d_name), SIGKILL);
      any = true;
    }
    while (::waitpid(-1, nullptr, any ? 0 : WNOHANG) > 0) {
    }
    if (!any) return;
  }
}

}  // namespace

bool user_namespaces_usable() {
  // Under AppArmor's restriction the namespace is made but its
  // capabilities are denied: only a mount shows it. Elsewhere the clone
  // alone tells (~0.05 ms; a mount namespace's teardown could take 15 ms).
  const bool apparmor =
      base::try_read_file("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").value_or("0")[0] == '1';
  // CLONE_VM|CLONE_VFORK: nothing of ours is copied; the child only mounts.
  alignas(16) static char stack[16 * 1024];
  pid_t pid = ::clone(apparmor ? probe_child : [](void*) { return 0; }, stack + sizeof stack,
                      CLONE_NEWUSER | (apparmor ? CLONE_NEWNS : 0) | CLONE_VM | CLONE_VFORK | SIGCHLD, nullptr);
  if (pid < 0) return false;
  int status = 0;
  return ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int run_bare(const SandboxOptions& o, const SandboxHost& host) {
  if (::geteuid() == 0)
    throw Error("husk sandbox: no user namespace can be made here; as root there is no sandbox without one");
  if (o.overlaid()) throw Error("--overlay: needs a user namespace, which cannot be made here");
  if (!o.allow_hosts.empty()) throw Error("--allow-host: needs a network namespace, which cannot be made here");
  // No cgroup is made for a process without namespaces: limits are rlimits.
  SandboxHost h = host;
  h.cgroup = false;
  const int abi = landlock::abi();
  if (abi < 1)
    throw Error("husk sandbox: neither a user namespace nor Landlock (Linux 5.13+) is available here: no sandbox");
  char tmpl[] = "/tmp/husk-sandbox-XXXXXX";
  if (!::mkdtemp(tmpl)) throw sys_error("husk sandbox: make a scratch directory in /tmp");
  const std::string scratch = tmpl;
  struct Remove {
    std::string name;
    ~Remove() { remove_tree(AT_FDCWD, name); }
  } remove{scratch};
  for (const char* d : {"/home", "/tmp"})
    if (::mkdir((scratch + d).c_str(), 0700) != 0) throw sys_error("husk sandbox: make " + scratch + d);

  SandboxConfig sc = sandbox_config(o, h, "rootfs");
  for (const auto& n : sc.notes) std::cerr << "husk sandbox: " << n << std::endl;
  const landlock::Plan plan = bare_landlock_plan(o, h, sc.config, scratch);
  const landlock::Rights r = landlock::rights(plan, abi);
  if (!r.not_hidden.empty())
    throw Error("husk sandbox: no user namespace here, and " + r.not_hidden.front() +
                " is inside a writable directory, where Landlock cannot hide it; run from a directory below it");
  cut_sockets(sc.config["linux"]["seccomp"], o.net);
  const spec::Spec spec = spec::parse(sc.config.dump());
  const seccomp::Program filter = seccomp::compile(seccomp::plan(*spec.linux_->seccomp));
  bool home_shown = false;
  for (const auto& t : plan.trees) home_shown |= t.write && base::is_within(h.home, t.path);
  const std::vector<std::string> env = bare_env(*spec.process, h, scratch, home_shown);

  std::string lacking;
  for (const auto& l : r.lacking) lacking += "; " + l;
  std::cerr << "husk sandbox: no user namespace can be made here: the command runs in the host's view behind Landlock "
               "(ABI "
            << abi << "), seccomp (" << (o.net == "none" ? "no socket" : "no Unix socket")
            << "), no_new_privs and rlimits; no pid, mount or network namespace (other processes show in /proc); "
               "HOME and TMPDIR are scratch directories"
            << lacking << std::endl;

  base::Fd sigfd(forwarding_signalfd());
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  TerminalGuard terminal;
  pid_t pid = ::fork();
  if (pid < 0) throw sys_error("husk sandbox: fork");
  if (pid == 0) exec_bare(*spec.process, env, plan, filter);
  bool timed_out = false;
  // Not a pid 1: the command gets its signals as any process does.
  const int status = wait_sandboxed(pid, sigfd.get(), o.timeout, false, timed_out);
  end_the_rest();
  terminal.restore();
  if (timed_out)
    std::cerr << "husk sandbox: --timeout " << o.timeout << "s reached: SIGTERM, then SIGKILL " << kKillGrace
              << "s later if needed" << std::endl;
  return status;
}

}  // namespace husk::rt
