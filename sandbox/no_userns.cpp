// The sandbox where no user namespace can be made: the command forked from
// husk on the host's own view, behind Landlock, seccomp, no_new_privs and
// rlimits (see no_userns.h).
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "base/dir.h"
#include "base/file.h"
#include "base/log.h"
#include "launch/foreground.h"
#include "launch/process.h"
#include "sandbox/no_userns.h"
#include "sandbox/report.h"
#include "seccomp/seccomp.h"

namespace husk::rt {
namespace {

using base::Fd;

std::string sysctl(const char* path) {
  std::string v = base::try_read_file(path).value_or("");
  while (!v.empty() && v.back() == '\n') v.pop_back();
  return v;
}

// The private temporary directory (and scratch home) in the sandbox's work
// directory, the user's, made there through its fd: nobody else can swap it.
void make_private(int at, const char* name, const SandboxHost& host, const std::string& shown) {
  if (::mkdirat(at, name, 0700) != 0 ||
      (::geteuid() == 0 && ::fchownat(at, name, host.uid, host.gid, AT_SYMLINK_NOFOLLOW) != 0))
    throw sys_error("husk sandbox: make " + shown);
}

// Everything the command is run with, made in husk before the fork.
struct Prepared {
  spec::Spec spec;
  seccomp::Program filter;
  Fd ruleset;
};

// In the child: the command, or an exit status and a message.
[[noreturn]] void exec_command(const Prepared& p, pid_t parent) {
  try {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Its own session: no controlling terminal to push input into (TIOCSTI),
    // and a process group ended with it.
    if (::setsid() < 0) throw sys_error("husk sandbox: setsid");
    const spec::Process& proc = *p.spec.process;
    apply_limits(proc, p.spec.linux_ ? &*p.spec.linux_ : nullptr);
    // Root in a user namespace made by another (bwrap) may be refused setgroups.
    if (::geteuid() == 0)
      switch_user_and_caps(proc, base::try_read_file("/proc/self/setgroups").value_or("") == "deny\n");
    else if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
      throw sys_error("husk sandbox: clear ambient capabilities");
    // Without a pid namespace nothing ends it with husk: a killed husk kills
    // it (its guardian removes the TMPDIR). Set once the user is switched,
    // which clears it.
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) throw sys_error("husk sandbox: prctl PR_SET_PDEATHSIG");
    if (::getppid() != parent) ::_exit(128 + SIGKILL);
    if (::chdir(proc.cwd.c_str()) != 0) throw sys_error("husk sandbox: chdir " + proc.cwd);
    prepare_fds_for_exec(0);
    landlock::restrict_self(p.ruleset.get());
    const std::vector<std::string> env = process_env(proc);
    // Looked up as the command sees the files: a hidden one is not found.
    const std::string path = find_executable(proc.args.at(0), env);
    seccomp::load(p.filter);
    exec_process(path, proc, env);
  } catch (const Error& e) {
    std::cerr << (std::string(e.what()).rfind("husk sandbox: ", 0) == 0 ? "" : "husk sandbox: ") << e.what()
              << std::endl;
    ::_exit(e.err() == ENOENT ? 127 : 126);
  }
}

// "pid (comm) state ppid pgrp session ...": the ppid and session of a
// process; comm may hold anything, the last ')' ends it. False once gone.
bool parent_and_session(const char* pid, pid_t& ppid, pid_t& session) {
  const std::string stat = base::try_read_file("/proc/" + std::string(pid) + "/stat").value_or("");
  const size_t close = stat.rfind(')');
  int pgrp;
  char state;
  return close != std::string::npos &&
         std::sscanf(stat.c_str() + close + 1, " %c %d %d %d", &state, &ppid, &pgrp, &session) == 4;
}

// What the command left running, as a pid namespace's end would: its
// session (`command` leads it), and whatever left that session and was
// orphaned to us (husk is their subreaper); not husk's own children of its
// session (the guardian). Killed, and reaped when ours, until none is left:
// one whose parent dies comes to us.
void end_the_rest(pid_t command) {
  const pid_t me = ::getpid(), mine = ::getsid(0);
  for (bool any = true; any;) {
    any = false;
    bool others = false;
    base::Dir proc(::opendir("/proc"));
    while (dirent* e = proc ? ::readdir(proc.get()) : nullptr) {
      pid_t ppid, session;
      if (e->d_name[0] < '1' || e->d_name[0] > '9' || !parent_and_session(e->d_name, ppid, session)) continue;
      if (session != command && (ppid != me || session == mine)) continue;
      const pid_t pid = std::atoi(e->d_name);
      ::kill(pid, SIGKILL);
      any = true;
      if (ppid == me) ::waitpid(pid, nullptr, 0);
      else others = true;
    }
    // Their parents are dying too: a moment, then they are ours.
    if (others) ::usleep(1000);
  }
}

}  // namespace

std::string userns_restricted_up_front() {
  if (::geteuid() == 0 || sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") != "1") return "";
  // A profile of its own may allow husk user namespaces (`userns,`).
  if (sysctl("/proc/self/attr/current") != "unconfined") return "";
  return "Ubuntu's AppArmor restriction, kernel.apparmor_restrict_unprivileged_userns=1";
}

std::string userns_refused(const Error& e) {
  const bool initial = base::try_read_file("/proc/self/uid_map").value_or("") == "         0          0 4294967295\n";
  return userns_refused(e, initial);
}

std::string userns_refused(const Error& e, bool initial_userns) {
  const int err = e.err();
  if (std::string(e.what()).find("clone container init") == std::string::npos ||
      (err != EPERM && err != ENOSPC && err != EACCES && err != EINVAL && err != EUSERS))
    return "";
  if (sysctl("/proc/sys/user/max_user_namespaces") == "0") return "user.max_user_namespaces=0";
  if (::geteuid() != 0 && sysctl("/proc/sys/kernel/unprivileged_userns_clone") == "0")
    return "kernel.unprivileged_userns_clone=0";
  if ((err == ENOSPC || err == EUSERS) && initial_userns)
    throw Error("husk sandbox: no user namespace can be made: uid " + std::to_string(::getuid()) +
                    " holds as many as user.max_user_namespaces allows (a nested sandbox of yours?); not running "
                    "the command with fewer walls",
                err);
  if (err == ENOSPC || err == EUSERS)
    return "the user namespace limit is reached: a container's, or bwrap's --disable-userns";
  return std::string("clone(CLONE_NEWUSER) is refused: ") + std::strerror(err) +
         " (a container's seccomp profile or a security module)";
}

int run_without_userns(const Context& g, const SandboxOptions& o, SandboxHost host, const Workdir& work,
                       const std::string& reason, bool notes_said, const Report* report) {
  refuse_without_userns(o, reason);
  const int abi = landlock::abi();
  if (abi < 1)
    throw Error("husk sandbox: no user namespace here (" + reason +
                ") and no Landlock (Linux 5.13+, with landlock in the kernel's lsm= list): the command is not run "
                "without walls");
  // Limits are rlimits: a cgroup of its own would need the user namespace too.
  const bool had_cgroup = host.cgroup;
  host.cgroup = false;
  SandboxConfig sc = sandbox_config(o, host, "rootfs");
  if (!notes_said || had_cgroup)
    for (const auto& n : sc.notes) std::cerr << "husk sandbox: " << n << std::endl;

  const std::string tmpdir = work.dir() + "/tmp";
  make_private(work.fd(), "tmp", host, tmpdir);
  cut_network(sc.config["linux"]["seccomp"], o.net);
  if (no_userns_env(sc.config, tmpdir)) {
    Fd tmp(::openat(work.fd(), "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!tmp) throw sys_error("husk sandbox: open " + tmpdir);
    make_private(tmp.get(), "home", host, tmpdir + "/home");
  }
  const landlock::Plan plan = no_userns_plan(sc.config, sc.hidden, tmpdir);
  const landlock::Rights rights = landlock::rights(plan, abi);
  std::vector<std::string> notes;
  Prepared p{spec::parse(sc.config.dump()), {}, landlock::build(plan, rights, notes)};
  for (const auto& t : plan.trees)
    log::debug("husk sandbox: Landlock: " + t.path + (t.write ? " writable" : " read-only"));
  for (const auto& h : rights.hidden) log::debug("husk sandbox: Landlock: " + h + " hidden");
  p.filter = seccomp::compile(seccomp::plan(*p.spec.linux_->seccomp), g.seccomp_cache);
  std::cerr << "husk sandbox: " << walls_line(reason, rights, o, tmpdir) << std::endl;
  for (const auto& n : no_userns_notes(rights, plan)) std::cerr << "husk sandbox: " << n << std::endl;
  // What the ruleset could not grant one by one is not granted at all here: said.
  for (const auto& n : notes) std::cerr << "husk sandbox: " << n << std::endl;

  Fd sigfd(forwarding_signalfd());
  // Orphans of the command come to husk, which ends them with it.
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) throw sys_error("husk sandbox: prctl PR_SET_CHILD_SUBREAPER");
  TerminalGuard terminal;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw sys_error("husk sandbox: fork");
  if (pid == 0) exec_command(p, parent);
  bool timed_out = false;
  // Not a pid 1: the command gets its signals as any process does.
  const int status = wait_sandboxed(pid, sigfd.get(), o.timeout, false, timed_out);
  end_the_rest(pid);
  terminal.restore();
  if (timed_out) {
    std::cerr << "husk sandbox: --timeout " << o.timeout << "s reached: SIGTERM, then SIGKILL " << kKillGrace
              << "s later if needed" << std::endl;
    if (report) report->emit("limit", report::timeout(o.timeout));
  }
  return status;
}

}  // namespace husk::rt
