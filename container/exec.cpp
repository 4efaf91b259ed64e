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

#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/fd.h"
#include "base/file.h"
#include "base/log.h"
#include "cgroups/cgroups.h"
#include "container/args.h"
#include "container/commands.h"
#include "container/operator_policy.h"
#include "container/state.h"
#include "launch/console.h"
#include "launch/finish.h"
#include "launch/foreground.h"
#include "launch/launch.h"
#include "launch/lsm.h"
#include "launch/process.h"
#include "launch/sync.h"
#include "namespaces/id_maps.h"
#include "namespaces/namespaces.h"
#include "seccomp/seccomp.h"

namespace husk::rt {

using base::Fd;

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
  const landlock::Plan* landlock = nullptr;  // ExecExtras::landlock
  bool shell_words = false;                  // ExecExtras::shell_words
};

// ExecExtras::landlock's ruleset, built in the container's mount view (its
// rules are on what the process sees), out of the --preserve-fds range.
Fd exec_landlock(const ExecChild& c) {
  if (!c.landlock) return Fd();
  std::vector<std::string> notes;  // said once, by the session's --start
  return landlock::ruleset_for(*c.landlock, 3 + c.preserve_fds, notes);
}

[[noreturn]] void exec_final(ExecChild& c) {
  child_run(c.sock, [&] {
    // The parent places us in the cgroup once stage 1 told it our pid.
    wait_for_go(c.sock);
    // A session of its own, as the init (see container_init).
    if (::setsid() < 0) throw sys_error("setsid");
    FinishRequest fin;
    fin.proc = &c.proc;
    fin.console_fd = c.console_fd;
    fin.preserve_fds = c.preserve_fds;
    fin.in_user_ns = c.container.linux_->has_namespace("user") || ns::in_user_namespace();
    fin.sock = c.sock;
    // Each exec'd process has a filter, and a listener, of its own.
    fin.filter = c.filter;
    fin.shell_words = c.shell_words;
    Fd landlock = exec_landlock(c);
    // Labels through the container's /proc (the checks in ExecLabels::open).
    Prepared ready = finish_process(fin);
    // Last, as the init does: finish_process still reads /proc.
    if (landlock) landlock::restrict_self(landlock.get());
    if (!c.shell_words) ready.exec();
    try {
      ready.exec();
    } catch (const std::exception& e) {
      // On the process's own stderr, with a shell's status, as the sandbox's init says it.
      const std::string line = std::string("husk sandbox: ") + e.what() + "\n";
      ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
      (void)ignored;
      _exit(ready.shell_status());
    }
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

// The parent's pid of `pid` (/proc/PID/stat: its name, in parentheses, may hold anything), 0 when gone.
pid_t parent_of(pid_t pid) {
  const std::string stat = base::try_read_file("/proc/" + std::to_string(pid) + "/stat").value_or("");
  const size_t end = stat.rfind(')');
  if (end == std::string::npos) return 0;
  char state;
  int ppid = 0;
  return std::sscanf(stat.c_str() + end + 1, " %c %d", &state, &ppid) == 2 ? ppid : 0;
}

// The init's namespaces, opened before the check that it is still the same
// process: a recycled pid cannot hand us someone else's namespaces. setns
// order (ns::namespace_kinds), pid apart: it applies to children only.
std::vector<Fd> open_init_namespaces(const Record& rec, const spec::Spec& container, ExecChild& c, pid_t ns_pid) {
  std::vector<Fd> owned;
  std::string base = "/proc/" + std::to_string(ns_pid ? ns_pid : rec.oci.pid) + "/ns/";
  auto open_ns = [&](std::string_view file) {
    std::string path = base + std::string(file);
    owned.emplace_back(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!owned.back()) throw sys_error("open " + path);
    return owned.back().get();
  };
  for (const auto& n : ns::namespace_kinds()) {
    if (n.type == "pid" || !container.linux_->has_namespace(std::string(n.type))) continue;
    c.ns_fds.emplace_back(open_ns(n.proc_file), n.flag);
  }
  if (container.linux_->has_namespace("pid")) c.pid_ns_fd = open_ns("pid");
  // Still the init's child once its namespaces are held: not a process that took a freed pid.
  if (ns_pid && parent_of(ns_pid) != rec.oci.pid) throw Error("exec: process " + std::to_string(ns_pid) + " is gone");
  if (!open_init(rec)) throw Error("container not running");
  return owned;
}

// The launcher of exec: clone3 of a stage-1 helper that joins the init's
// namespaces and clones the process (CLONE_PARENT) as our child.
class ExecLauncher final : public Launcher {
 public:
  // `console_child`: the process's end of the console channel, closed here once it has it.
  ExecLauncher(ExecChild& c, Fd& console_child) : c_(c), console_child_(console_child) {}

  pid_t launch(Pipeline& p) override {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) throw sys_error("socketpair for exec");
    Fd parent_sock(sv[0]), child_sock(sv[1]);
    c_.sock = child_sock.get();
    pid_t stage1 = clone3_raw(0, -1);
    if (stage1 == 0) exec_stage1(c_);
    if (stage1 < 0) throw sys_error("clone exec process");
    ChildSession s(std::move(parent_sock), stage1, true);
    child_sock.reset();
    console_child_.reset();
    for (;;) {
      Message m;  // a listener it carries is closed after the message
      if (!s.next(m)) {
        if (s.pid() > 0) return s.done();  // exec succeeded: the socket closed on exec
        throw Error("exec: process setup exited unexpectedly");
      }
      if (m.type == Msg::kSeccomp && s.pid() > 0) s.forward_listener(p, m);
      // Moved by pid, not born in the cgroup: as with runc, an exec into a
      // container at its pids.max still starts (a move is not counted).
      else if (m.type == Msg::kPid) s.release(p, Placement{});
      else throw Error("exec: unexpected message " + msg_name(m.type));
    }
  }

 private:
  ExecChild& c_;
  Fd& console_child_;
};

// The container checked, the process to run made from the flags or --process.
struct ExecTarget {
  Record rec;
  Status status = Status::stopped;
  spec::Spec container;
  spec::Process proc;
};

ExecTarget exec_target(Handle& h, const ExecOptions& o, const spec::Spec* container) {
  ExecTarget t;
  t.rec = h.load();
  t.status = live_status(t.rec);
  require(o.ignore_paused ? Verb::exec_ignore_paused : Verb::exec, t.status, t.rec.oci.id);
  t.container = container ? *container : h.config();
  t.proc = exec_process_spec(o, t.container);
  if (t.proc.terminal && o.detach && o.console_socket.empty())
    throw Error("terminal: a detached process's terminal goes to --console-socket, which is not given");
  return t;
}

// The cgroup an exec'd process joins. A container that nests (a systemd or
// a runtime inside: what Delegate=yes is for) may have enabled controllers
// below its cgroup v2, which then can hold no process (EBUSY): as runc does,
// the process then joins the init's cgroup, when that is below the
// container's (the init may move only within its delegated subtree).
cgroups::Config exec_cgroup(const Record& rec) {
  cgroups::Config c = cgroup_config(rec);
  const auto& h = cgroups::host_hierarchies();
  if (h.mode != cgroups::Mode::unified) return c;
  auto enabled = base::try_read_file(h.unified + rec.cgroup_path + "/cgroup.subtree_control");
  if (!enabled || enabled->find_first_not_of(" \n") == std::string::npos) return c;
  const std::string init = cgroups::unified_cgroup_of(rec.oci.pid);
  if (init.rfind(rec.cgroup_path + "/", 0) != 0) return c;
  c.driver = cgroups::Driver::cgroupfs;  // a directory of the container's own: attach only
  c.path = init;
  c.handle.clear();
  c.created.clear();
  return c;
}

}  // namespace

int cmd_exec(const Context& g, const ExecOptions& o, const ExecExtras& extras) {
  std::optional<Handle> h(Handle::open(Store(g.root), o.id));
  ExecTarget t = exec_target(*h, o, extras.container);
  enforce_operator_policy_on_exec(g, t.container, t.proc);
  ExecChild c{t.container, t.proc, {}, -1, -1, o.preserve_fds, -1, nullptr, extras.landlock, extras.shell_words};
  std::vector<Fd> ns_fds = open_init_namespaces(t.rec, t.container, c, extras.ns_pid);

  seccomp::Program filter;
  if (extras.filter) {
    c.filter = extras.filter;
  } else if (t.container.linux_->seccomp) {
    filter = seccomp::compile(seccomp::plan(*t.container.linux_->seccomp), g.seccomp_cache);
    c.filter = &filter;
  }
  Fd sigfd(o.detach ? -1 : forwarding_signalfd());
  ConsoleChannel console = open_console_channel(t.proc.terminal, o.console_socket);
  c.console_fd = console.child.get();

  std::unique_ptr<cgroups::Manager> cgroup;
  if (!t.rec.cgroup_path.empty()) cgroup = cgroups::make_manager(exec_cgroup(t.rec));
  ExecLauncher launcher(c, console.child);
  Pipeline p;
  p.spec = &t.container;
  p.proc = &t.proc;
  p.cgroup = cgroup.get();
  p.launcher = &launcher;
  // As runc: the seccomp agent gets the state of a started container, with
  // the init's pid; the process state's pid is the exec'd process's.
  p.on_pid = [&t](pid_t) {
    spec::State state = t.rec.oci;
    state.status = status_name(t.status);
    return state;
  };
  pid_t pid = p.run();
  base::write_pid_file(o.pid_file, pid);
  Fd master(console.parent ? recv_fd(console.parent.get()) : -1);
  if (o.detach) return 0;
  h.reset();  // unlock: kill and delete must work while we wait
  return extras.wait ? extras.wait(pid, sigfd.get()) : wait_foreground(pid, sigfd.get(), master.get());
}

}  // namespace husk::rt
