// `husk exec`: a new process inside a running container. husk clones a
// child that joins the init's namespaces (pid last: it needs one more fork,
// made with CLONE_PARENT so the exec'd process stays our child), is placed in
// the container's cgroup, gets the process settings and execs.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include <nlohmann/json.hpp>

#include "cgroups/cgroups.h"
#include "runtime/args.h"
#include "runtime/commands.h"
#include "runtime/console.h"
#include "runtime/foreground.h"
#include "runtime/log.h"
#include "runtime/lsm.h"
#include "runtime/process.h"
#include "runtime/state.h"
#include "runtime/sync.h"
#include "runtime/util.h"
#include "seccomp/seccomp.h"
#include "base/error.h"

namespace husk::rt {

spec::Process parse_process(const std::string& text, const std::string& oci_version) {
  // Reuse the config parser and validator on {"process": <text>}. The text
  // must be one JSON value, or it could splice keys into the wrapper; parsed
  // alone, its syntax errors name its own lines and columns.
  if (!nlohmann::json::accept(text)) spec::parse(text);
  spec::Spec s = spec::parse("{\"ociVersion\":\"" + oci_version + "\",\"process\":" + text + "}");
  if (!s.process) throw Error("process: required");
  spec::validate_process(*s.process);
  return *s.process;
}

namespace {

enum : char { kPid = 'P', kGo = 'g' };

struct NsFile {
  const char* type;  // spec name
  const char* file;  // /proc/<pid>/ns/<file>
  int flag;
};
// setns order: user first (it grants the rights for the rest), mount last
// (it changes our root), pid separately (it applies to children only).
constexpr NsFile kJoinOrder[] = {
    {"user", "user", CLONE_NEWUSER}, {"ipc", "ipc", CLONE_NEWIPC},          {"uts", "uts", CLONE_NEWUTS},
    {"network", "net", CLONE_NEWNET}, {"cgroup", "cgroup", CLONE_NEWCGROUP}, {"time", "time", CLONE_NEWTIME},
    {"mount", "mnt", CLONE_NEWNS}};

spec::Process load_process(const ExecOptions& o, const spec::Spec& container) {
  if (!o.process_file.empty()) {
    std::string text = spec::read_json_file(o.process_file);
    try {
      return parse_process(text, container.oci_version);
    } catch (const Error& e) {
      rethrow_with(o.process_file, e);
    }
  }
  if (o.args.empty()) throw Error("exec: a command to run is required");
  spec::Process p = *container.process;
  p.args = o.args;
  p.terminal = o.tty;
  if (!o.cwd.empty()) p.cwd = o.cwd;
  for (const auto& e : o.env) {
    if (e.find('=') == std::string::npos) throw Error("--env " + e + ": must be KEY=value");
    std::string key = e.substr(0, e.find('=') + 1);
    std::erase_if(p.env, [&](const std::string& x) { return x.rfind(key, 0) == 0; });
    p.env.push_back(e);
  }
  if (!o.user.empty()) {
    UserArg u = parse_user(o.user);
    p.user.uid = u.uid;
    if (u.gid) p.user.gid = *u.gid;
  }
  if (!o.additional_gids.empty()) p.user.additional_gids = o.additional_gids;
  if (!o.caps.empty()) {
    if (!p.capabilities) p.capabilities.emplace();
    for (auto* set : {&p.capabilities->bounding, &p.capabilities->effective, &p.capabilities->permitted,
                      &p.capabilities->ambient})
      set->insert(set->end(), o.caps.begin(), o.caps.end());
  }
  if (o.no_new_privs) p.no_new_privileges = true;
  spec::validate_process(p);
  return p;
}

// --apparmor and --process-label override process.json's values too: a
// profile asked for on the command line is never dropped silently. A
// process.json without a label keeps the container's (as runc): an exec'd
// process never runs less confined than the container's own.
spec::Process exec_process_spec(const ExecOptions& o, const spec::Spec& container) {
  spec::Process p = load_process(o, container);
  if (!o.apparmor_profile.empty()) p.apparmor_profile = o.apparmor_profile;
  if (!o.process_label.empty()) p.selinux_label = o.process_label;
  if (p.apparmor_profile.empty()) p.apparmor_profile = container.process->apparmor_profile;
  if (p.selinux_label.empty()) p.selinux_label = container.process->selinux_label;
  lsm::check_labels(p, nullptr);
  return p;
}

struct ExecChild {
  const spec::Spec& container;
  const spec::Process& proc;
  std::vector<std::pair<int, int>> ns_fds;  // (fd, flag) in join order
  int pid_ns_fd = -1;
  int console_fd = -1;
  int preserve_fds = 0;
  int sock = -1;
  const seccomp::Program* filter = nullptr;
};

[[noreturn]] void exec_final(ExecChild& c) {
  child_run(c.sock, [&] {
    // The parent places us in the cgroup once stage 1 told it our pid.
    char t;
    std::string payload;
    if (!recv_msg(c.sock, t, payload) || t != kGo) _exit(1);
    const spec::Process& p = c.proc;
    // A session of its own, as the init (see container_init).
    if (::setsid() < 0) throw sys_error("setsid");
    bool in_user_ns = c.container.linux_->has_namespace("user");
    if (c.console_fd >= 0) {
      setup_console(c.console_fd, p.console_size, false);
      ::close(c.console_fd);
    }
    enter_cwd(p.cwd);
    apply_limits(p, nullptr);
    std::string exe = find_executable(p.args[0], p.env);
    const std::vector<std::string> env = process_env(p);
    chown_stdio(p);
    // Through the container's /proc (the checks in ExecLabels::open), before
    // any filter and while privileged, as in the init.
    lsm::ExecLabels::open(p).apply();
    // Before any filter: a profile without close_range must not break the exec.
    prepare_fds_for_exec(c.preserve_fds);
    // Each exec'd process has a filter, and a listener, of its own.
    if (c.filter && !p.no_new_privileges) hand_listener_to_parent(c.sock, seccomp::load(*c.filter));
    switch_user_and_caps(p, in_user_ns);
    apply_no_new_privs(p);
    if (c.filter && p.no_new_privileges) hand_listener_to_parent(c.sock, seccomp::load(*c.filter));
    exec_process(exe, p, env);
  });
}

[[noreturn]] void exec_stage1(ExecChild& c) {
  child_run(c.sock, [&] {
    child_prologue();
    std::vector<int> keep{c.sock, c.console_fd, c.pid_ns_fd, log::fd()};
    for (auto [fd, flag] : c.ns_fds) keep.push_back(fd);
    close_fds_except(3 + c.preserve_fds, keep);
    for (auto [fd, flag] : c.ns_fds)
      if (::setns(fd, flag) != 0) throw sys_error("join the container's namespace (setns " + std::to_string(flag) + ")");
    if (c.pid_ns_fd >= 0 && ::setns(c.pid_ns_fd, CLONE_NEWPID) != 0) throw sys_error("join the container's pid namespace");
    close_fds_except(3 + c.preserve_fds, {c.sock, c.console_fd, log::fd()});
    spawn_sibling_and_exit(c.sock, [&] { exec_final(c); });
  });
}

}  // namespace

int cmd_exec(const Global& g, const ExecOptions& o) {
  std::optional<Handle> h(Handle::open(Store(g.root), o.id));
  Record rec = h->load();
  std::string st = live_status(rec);
  if (st == "stopped") throw Error("cannot exec in a stopped container");
  if (st == "paused" && !o.ignore_paused) throw Error("cannot exec in a paused container (use --ignore-paused)");
  if (st == "creating") throw Error("cannot exec in a container that is being created");
  spec::Spec container = h->config();
  spec::Process proc = exec_process_spec(o, container);
  if (proc.terminal && o.detach && o.console_socket.empty())
    throw Error("cannot allocate tty if husk will detach without setting console socket");

  // Open the init's namespaces first, then check it is still the same
  // process: a recycled pid cannot hand us someone else's namespaces.
  std::vector<Fd> owned;
  ExecChild c{container, proc, {}, -1, -1, o.preserve_fds, -1, nullptr};
  std::string base = "/proc/" + std::to_string(rec.oci.pid) + "/ns/";
  for (const auto& n : kJoinOrder) {
    if (!container.linux_->has_namespace(n.type)) continue;
    owned.emplace_back(::open((base + n.file).c_str(), O_RDONLY | O_CLOEXEC));
    if (!owned.back()) throw sys_error("open " + base + n.file);
    c.ns_fds.emplace_back(owned.back().get(), n.flag);
  }
  if (container.linux_->has_namespace("pid")) {
    owned.emplace_back(::open((base + "pid").c_str(), O_RDONLY | O_CLOEXEC));
    if (!owned.back()) throw sys_error("open " + base + "pid");
    c.pid_ns_fd = owned.back().get();
  }
  if (!open_init(rec)) throw Error("container not running");

  seccomp::Program filter;
  if (container.linux_->seccomp) {
    filter = seccomp::compile(seccomp::plan(*container.linux_->seccomp), g.seccomp_cache);
    c.filter = &filter;
  }

  Fd sigfd(o.detach ? -1 : forwarding_signalfd());
  ConsoleChannel console = open_console_channel(proc.terminal, o.console_socket);
  c.console_fd = console.child.get();

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) throw sys_error("socketpair for exec");
  Fd parent_sock(sv[0]), child_sock(sv[1]);
  c.sock = child_sock.get();
  pid_t stage1 = clone3_raw(0, -1);
  if (stage1 == 0) exec_stage1(c);
  if (stage1 < 0) throw sys_error("clone exec process");
  child_sock.reset();
  console.child.reset();

  pid_t pid = -1;
  auto fail = [&](const std::string& msg) -> Error {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
    if (stage1 > 0) ::waitpid(stage1, nullptr, 0);
    return Error(msg);
  };
  for (;;) {
    char t;
    std::string payload;
    int passed;
    bool got = recv_msg(parent_sock.get(), t, payload, &passed);
    Fd fd(passed);  // kSeccomp's listener; closed after any message
    if (!got) {
      if (pid > 0) break;  // exec succeeded: the socket closed on exec
      throw fail("exec: process setup exited unexpectedly");
    }
    if (t == 'E') throw fail(payload);
    if (t == kSeccomp && pid > 0) {
      // As runc: the state of a started container, with the init's pid;
      // the process state's pid is the exec'd process's.
      spec::State state = rec.oci;
      state.status = st;
      try {
        forward_listener(parent_sock.get(), fd.get(), container, pid, spec::state_to_json(state, false));
      } catch (const Error& e) {
        throw fail(e.what());
      }
      continue;
    }
    if (t != kPid) throw fail(std::string("exec: unexpected message '") + t + "'");
    pid = std::stoi(payload);
    ::waitpid(stage1, nullptr, 0);
    stage1 = -1;
    try {
      if (!rec.cgroup_path.empty())
        cgroups::make_manager(cgroup_config(rec))->attach(pid);
      write_oom_score_adj(pid, proc);
    } catch (const Error& e) {
      throw fail(e.what());
    }
    send_msg(parent_sock.get(), kGo);
  }
  write_pid_file(o.pid_file, pid);
  Fd master(console.parent ? recv_fd(console.parent.get()) : -1);
  if (o.detach) return 0;
  h.reset();  // unlock: kill and delete must work while we wait
  return wait_foreground(pid, sigfd.get(), master.get());
}

}  // namespace husk::rt
