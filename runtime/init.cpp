#include "runtime/init.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "namespaces/namespaces.h"
#include "runtime/console.h"
#include "runtime/hooks.h"
#include "runtime/log.h"
#include "runtime/lsm.h"
#include "runtime/process.h"
#include "runtime/sync.h"
#include "runtime/util.h"
#include "seccomp/seccomp.h"
#include "base/error.h"

namespace husk::rt {
namespace {

// One byte of type, then a payload. Init -> parent:
enum : char {
  kMapIds = 'M',   // a new user namespace exists: write uid_map/gid_map of the sender
  kPid = 'P',      // payload: pid of the real init (when an extra fork was needed)
  kHooks = 'H',    // mounts done: run prestart + createRuntime now
  kReady = 'R',    // blocked on exec.fifo, ready for start
  kError = 'E',    // payload: message
};
// Parent -> init:
enum : char { kGo = 'g', kMapsDone = 'm', kHooksDone = 'h' };

void expect(int fd, char want) {
  char t;
  std::string p;
  if (!recv_msg(fd, t, p)) _exit(1);  // parent gone: nothing to report to
  if (t != want) throw Error(std::string("init sync: unexpected message '") + t + "'");
}

struct ChildContext {
  const InitRequest& req;
  const spec::Spec& spec;
  ns::NamespacePlan plan;
  seccomp::Program seccomp_prog;
  bool has_seccomp = false;
  int sock;
};

// Indexes of spec.mounts the parent must idmap (only with a user namespace;
// without one prepare_rootfs does it itself).
std::vector<size_t> idmapped_mounts(const spec::Spec& spec) {
  std::vector<size_t> out;
  if (!spec.linux_->has_namespace("user")) return out;
  for (size_t i = 0; i < spec.mounts.size(); ++i)
    if (spec::is_idmapped(spec.mounts[i])) out.push_back(i);
  return out;
}

// The init holds exec.fifo only as an O_PATH fd while it is set up: unlike a
// directory fd, it leads nowhere else on the host when a container process
// reaches it through /proc/<pid>/fd (CVE-2016-9962). Opening it for writing
// blocks until `start` opens it for reading. The reopen goes through the
// container's /proc, which the config may have faked: only the fifo itself
// may be opened.
int open_fifo_for_writing(int opath_fd) {
  const std::string path = "/proc/self/fd/" + std::to_string(opath_fd);
  struct stat want, got;
  if (::fstat(opath_fd, &want) != 0) throw sys_error("stat exec.fifo");
  auto same = [&] { return got.st_dev == want.st_dev && got.st_ino == want.st_ino; };
  const char* fake = "exec.fifo: /proc/self/fd in the container does not lead to it (/proc must be a procfs)";
  if (::stat(path.c_str(), &got) != 0 || !same()) throw Error(fake);
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw sys_error("open exec.fifo through " + path);
  if (::fstat(fd, &got) != 0 || !same()) {
    ::close(fd);
    throw Error(fake);
  }
  return fd;
}

bool has_new_ns(const spec::Linux& l, const char* type) {
  const auto* n = l.find_namespace(type);
  return n && n->path.empty();
}

// Everything the real init does, from the first sync to exec.
[[noreturn]] void container_init(ChildContext& c) {
  const spec::Spec& spec = c.spec;
  const spec::Linux& lx = *spec.linux_;
  const spec::Process& proc = *spec.process;

  // The parent knows our pid (from clone3 or the stage-1 message) and
  // places us in the cgroup before it says go.
  char t;
  std::string go;
  if (!recv_msg(c.sock, t, go) || t != kGo) _exit(1);
  // The caller's environment stays outside: createContainer/startContainer
  // hooks without env run programs of the image, in the container.
  ::clearenv();
  // A session of its own, terminal or not: kill(0, sig) from the container
  // must not reach the caller's process group (the shim, conmon, husk run).
  if (::setsid() < 0) throw sys_error("setsid");
  // Hooks run in the container's namespaces see the pid as the container does.
  spec::State state = *c.req.state;
  state.pid = ::getpid();
  state.status = "creating";
  const std::string hook_state = spec::state_to_json(state, false);
  state.status = "created";
  const std::string created_state = spec::state_to_json(state, false);
  // A new user namespace: become its root, so that files we create are owned
  // by a mapped id (the kernel refuses unmapped owners with EOVERFLOW).
  if (has_new_ns(lx, "user") && (::setresgid(0, 0, 0) != 0 || ::setresuid(0, 0, 0) != 0))
    throw sys_error("become root of the new user namespace");

  // While /proc is still the host's (before a mount namespace is joined or
  // the rootfs entered): only the attr files of this thread, no directory.
  lsm::ExecLabels labels = lsm::ExecLabels::open(proc);

  // Joined namespaces other than user/pid (handled before the fork); mount last.
  for (const auto& j : c.plan.joins)
    if (j.type != "user" && j.type != "pid") ns::join_namespace(j);
  // The cgroup namespace must be made after the parent placed us in our cgroup.
  if (has_new_ns(lx, "cgroup") && ::unshare(CLONE_NEWCGROUP) != 0) throw sys_error("unshare cgroup namespace");
  if (has_new_ns(lx, "time")) {
    if (::unshare(CLONE_NEWTIME) != 0) throw sys_error("unshare time namespace");
    ns::write_time_offsets(lx.time_offsets);
  }
  if (has_new_ns(lx, "network")) ns::loopback_up();

  // A session keyring of its own, so the container cannot read the caller's keys.
  if (!c.req.session_keyring.empty() &&
      ::syscall(SYS_keyctl, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, c.req.session_keyring.c_str()) < 0 &&
      errno != ENOSYS)
    throw sys_error("join a new session keyring");

  ns::RootfsOptions ro;
  // idmapped mounts for a user-namespaced container are built by the parent
  // (it needs real root over the source) and arrive here, in mount order.
  for (size_t i : idmapped_mounts(spec)) ro.idmapped[i] = recv_fd(c.sock);
  // So are the other bind sources: the parent opens them with its privileges.
  for (size_t i : ns::runtime_opened_sources(spec)) ro.sources[i] = recv_fd(c.sock);
  ro.rootfs = c.req.rootfs;
  ro.no_pivot = c.req.no_pivot;
  ro.user_ns = lx.has_namespace("user");
  // create requires a mount namespace, new or joined: set it up either way.
  ro.own_mount_ns = lx.has_namespace("mount");
  // A copy only when there is a label to add.
  if (lx.mount_label.empty()) ns::prepare_rootfs(spec, ro);
  else ns::prepare_rootfs(lsm::with_mount_label(spec), ro);
  // Host paths must not stay reachable through the init's fds.
  for (auto* fds : {&ro.idmapped, &ro.sources}) {
    for (const auto& [i, fd] : *fds) ::close(fd);
    fds->clear();
  }

  const auto& hooks = spec.hooks;
  if (!hooks.prestart.empty() || !hooks.create_runtime.empty()) {
    send_msg(c.sock, kHooks);
    expect(c.sock, kHooksDone);
  }
  run_hooks(hooks.create_container, "createContainer", hook_state);

  ns::enter_rootfs(ro);
  ns::set_hostname(spec);
  make_cwd(proc.cwd);  // before root.readonly applies
  ns::finalize_rootfs(spec, ro);

  if (c.req.console_fd >= 0) {
    setup_console(c.req.console_fd, proc.console_size, true);
    ::close(c.req.console_fd);
  }
  enter_cwd(proc.cwd);
  apply_limits(proc, &lx);
  std::string exe = find_executable(proc.args[0], proc.env);
  const std::vector<std::string> env = process_env(proc);
  chown_stdio(proc);
  // As runc: while privileged and before any filter (the attr writes are
  // not the container's syscalls to allow). startContainer hooks run under them too.
  labels.apply();
  // Before any filter: a profile without close_range must not break the exec.
  prepare_fds_for_exec(c.req.preserve_fds);

  // Without no_new_privs, loading a filter needs CAP_SYS_ADMIN: do it before
  // the capabilities go. With it, load as late as possible (fewer syscalls to
  // allow): after the startContainer hooks, unless the filter notifies: its
  // listener must reach the agent through `create`, still connected here.
  const bool load_early = c.has_seccomp && (!proc.no_new_privileges || c.seccomp_prog.notify);
  if (load_early && !proc.no_new_privileges) hand_listener_to_parent(c.sock, seccomp::load(c.seccomp_prog));
  switch_user_and_caps(proc, ro.user_ns);
  apply_no_new_privs(proc);
  if (load_early && proc.no_new_privileges) hand_listener_to_parent(c.sock, seccomp::load(c.seccomp_prog));

  send_msg(c.sock, kReady);
  ::close(c.sock);

  // Blocks until `start` opens the fifo for reading. From here on `start`
  // listens: one byte says we are released, an error message explains a
  // failure, and end-of-file (the fd is close-on-exec) says the exec happened.
  log::close();
  int fifo = open_fifo_for_writing(c.req.fifo_fd);
  // Keep it out of the --preserve-fds range, which exec must not close.
  int high = ::fcntl(fifo, F_DUPFD_CLOEXEC, 3 + c.req.preserve_fds);
  ::close(fifo);
  if (high < 0 || ::write(high, "0", 1) != 1) throw sys_error("write exec.fifo");
  ::close(c.req.fifo_fd);
  try {
    run_hooks(hooks.start_container, "startContainer", created_state);
    if (c.has_seccomp && !load_early) seccomp::load(c.seccomp_prog);
    exec_process(exe, proc, env);
  } catch (const std::exception& e) {
    ssize_t ignored = ::write(high, e.what(), strlen(e.what()));
    (void)ignored;
    _exit(1);
  }
}

[[noreturn]] void child_main(ChildContext& c) {
  child_run(c.sock, [&] {
    child_prologue();
    close_fds_except(3 + c.req.preserve_fds, {c.sock, c.req.fifo_fd, c.req.console_fd, log::fd()});
    container_init(c);
  });
}

// Slow path: join user/pid namespaces, unshare the rest, fork the real init
// (pid namespaces apply to children only) as our parent's child.
[[noreturn]] void stage1_main(ChildContext& c) {
  child_run(c.sock, [&] {
    close_fds_except(3 + c.req.preserve_fds, {c.sock, c.req.fifo_fd, c.req.console_fd, log::fd()});
    for (const auto& j : c.plan.joins)
      if (j.type == "user") ns::join_namespace(j);
    for (const auto& j : c.plan.joins)
      if (j.type == "pid") ns::join_namespace(j);
    int flags = c.plan.clone_flags & ~(CLONE_NEWCGROUP | CLONE_NEWTIME);
    if (flags && ::unshare(flags) != 0) throw sys_error("unshare namespaces");
    if (flags & CLONE_NEWUSER) {
      send_msg(c.sock, kMapIds);
      expect(c.sock, kMapsDone);
    }
    spawn_sibling_and_exit(c.sock, [&] { child_main(c); });
  });
}

void write_id_maps(pid_t pid, const spec::Linux& lx) {
  std::string base = "/proc/" + std::to_string(pid);
  write_file(base + "/uid_map", ns::id_map_text(lx.uid_mappings));
  write_file(base + "/gid_map", ns::id_map_text(lx.gid_mappings));
}

void send_idmapped_mounts(int sock, pid_t pid, const spec::Spec& spec) {
  auto idx = idmapped_mounts(spec);
  if (idx.empty()) return;
  std::string path = "/proc/" + std::to_string(pid) + "/ns/user";
  Fd userns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!userns) throw sys_error("open " + path);
  // Built in the container's mount namespace: see open_bind_sources.
  std::vector<Fd> trees;
  for (int fd : ns::open_bind_sources(spec, idx, pid, userns.get())) trees.emplace_back(fd);
  for (const auto& t : trees) send_fd(sock, t.get(), "idmap");
}

void send_bind_sources(int sock, pid_t pid, const spec::Spec& spec) {
  std::vector<Fd> fds;
  for (int fd : ns::open_bind_sources(spec, ns::runtime_opened_sources(spec), pid)) fds.emplace_back(fd);
  for (const auto& fd : fds) send_fd(sock, fd.get(), "bind source");
}

// Kills and reaps a half-made init on every error path.
struct InitGuard {
  pid_t pid = -1;
  pid_t stage1 = -1;
  bool armed = true;
  ~InitGuard() {
    if (!armed) return;
    for (pid_t p : {pid, stage1}) {
      if (p <= 0) continue;
      ::kill(p, SIGKILL);
      while (::waitpid(p, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
  }
};

std::string exit_description(pid_t pid) {
  int status;
  if (::waitpid(pid, &status, 0) != pid) return "container init exited unexpectedly";
  if (WIFSIGNALED(status)) return "container init was killed by signal " + std::to_string(WTERMSIG(status));
  return "container init exited unexpectedly with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

pid_t spawn_init(const InitRequest& req) {
  const spec::Spec& spec = *req.spec;
  const spec::Linux& lx = *spec.linux_;
  ChildContext c{req, spec, ns::plan_namespaces(lx), {}, false, -1};
  if (lx.seccomp) {
    // Compiled here, before the clone, so a bad profile fails create early and
    // the init only makes one seccomp(2) call; the cache makes repeats cheap.
    c.seccomp_prog = seccomp::compile(seccomp::plan(*lx.seccomp), req.seccomp_cache_dir);
    c.has_seccomp = true;
  }

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) throw sys_error("socketpair for init");
  Fd parent_sock(sv[0]), child_sock(sv[1]);
  c.sock = child_sock.get();

  // Fast path: one clone3 makes every new namespace. Joining a user or pid
  // namespace needs an intermediate process (see stage1_main).
  bool joins_user_or_pid = false;
  for (const auto& j : c.plan.joins) joins_user_or_pid |= j.type == "user" || j.type == "pid";
  bool new_user = c.plan.clone_flags & CLONE_NEWUSER;
  bool slow = joins_user_or_pid || (new_user && !c.plan.joins.empty());

  InitGuard guard;
  int cg_fd = req.cgroup ? req.cgroup->clone_into_fd() : -1;
  Fd cg_fd_owner(cg_fd);
  pid_t pid;
  if (slow) {
    pid = clone3_raw(0, -1);
    if (pid == 0) stage1_main(c);
    if (pid < 0) throw sys_error("clone container init");
    guard.stage1 = pid;
    cg_fd = -1;
  } else {
    uint64_t flags = static_cast<uint64_t>(c.plan.clone_flags & ~(CLONE_NEWCGROUP | CLONE_NEWTIME));
    pid = clone3_raw(flags, cg_fd);
    if (pid < 0 && errno == EINVAL && cg_fd >= 0) {
      cg_fd = -1;  // kernel without CLONE_INTO_CGROUP
      pid = clone3_raw(flags, -1);
    }
    if (pid == 0) child_main(c);
    if (pid < 0) throw sys_error("clone container init");
    guard.pid = pid;
  }
  child_sock.reset();

  bool maps_written = false;
  std::string hook_state;
  // Once the real init's pid is known: id maps, cgroup, oom score, then go.
  auto release = [&] {
    if (new_user && !maps_written) write_id_maps(guard.pid, lx);
    if (req.cgroup && cg_fd < 0) req.cgroup->attach(guard.pid);
    write_oom_score_adj(guard.pid, *spec.process);
    hook_state = req.on_pid(guard.pid);
    send_msg(parent_sock.get(), kGo);
    send_idmapped_mounts(parent_sock.get(), guard.pid, spec);
    send_bind_sources(parent_sock.get(), guard.pid, spec);
  };
  if (!slow) release();
  for (;;) {
    char type;
    std::string payload;
    int passed;
    bool got = recv_msg(parent_sock.get(), type, payload, &passed);
    Fd fd(passed);  // kSeccomp's listener; closed after any message
    if (!got) {
      pid_t who = guard.pid > 0 ? guard.pid : guard.stage1;
      std::string why = exit_description(who);
      if (who == guard.pid) guard.pid = -1; else guard.stage1 = -1;
      throw Error(why);
    }
    switch (type) {
      case kError:
        throw Error(payload);
      case kMapIds:
        write_id_maps(guard.stage1, lx);
        maps_written = true;
        send_msg(parent_sock.get(), kMapsDone);
        break;
      case kPid:
        guard.pid = std::stoi(payload);
        ::waitpid(guard.stage1, nullptr, 0);
        guard.stage1 = -1;
        release();
        break;
      case kHooks:
        run_hooks(spec.hooks.prestart, "prestart", hook_state);
        run_hooks(spec.hooks.create_runtime, "createRuntime", hook_state);
        send_msg(parent_sock.get(), kHooksDone);
        break;
      case kSeccomp:
        // The state prestart hooks get: status creating, the init's host pid.
        forward_listener(parent_sock.get(), fd.get(), spec, guard.pid, hook_state);
        break;
      case kReady:
        guard.armed = false;
        return guard.pid;
      default:
        throw Error(std::string("init sync: unexpected message '") + type + "'");
    }
  }
}

void release_init(int state_dir_fd, pid_t pid, uint64_t start_time, const std::function<void()>& released) {
  Fd fifo(::openat(state_dir_fd, "exec.fifo", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fifo) throw sys_error("open exec.fifo");
  // The init opens the fifo for writing once we hold it for reading and
  // writes one byte; poll so an init that died meanwhile does not hang us.
  for (;;) {
    pollfd p{fifo.get(), POLLIN, 0};
    int rc = ::poll(&p, 1, 100);
    if (rc < 0 && errno != EINTR) throw sys_error("wait on exec.fifo");
    char b;
    if (rc > 0 && (p.revents & POLLIN) && ::read(fifo.get(), &b, 1) == 1) break;
    if (!process_alive(pid, start_time)) throw Error("container init died before start");
  }
  ::unlinkat(state_dir_fd, "exec.fifo", 0);
  released();
  // Now connected: read until the init execs (EOF) or reports an error.
  ::fcntl(fifo.get(), F_SETFL, 0);
  std::string err;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fifo.get(), buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      throw sys_error("read exec.fifo");
    }
    err.append(buf, static_cast<size_t>(n));
  }
  if (!err.empty()) throw Error(err);
}

}  // namespace husk::rt
