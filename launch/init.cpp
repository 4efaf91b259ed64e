#include "launch/init.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <optional>

#include "base/error.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/process.h"
#include "landlock/landlock.h"
#include "launch/console.h"
#include "launch/finish.h"
#include "launch/hooks.h"
#include "launch/lsm.h"
#include "launch/process.h"
#include "launch/reaper.h"
#include "launch/sync.h"
#include "namespaces/id_maps.h"
#include "namespaces/namespaces.h"
#include "seccomp/seccomp.h"

namespace husk::rt {

using base::Fd;
namespace {

struct ChildContext {
  const InitRequest& req;
  const spec::Spec& spec;
  ns::NamespacePlan plan;
  seccomp::Program seccomp_prog;
  bool has_seccomp = false;
  int sock;
  // spec.mounts indexes whose sources the parent opens (ns::runtime_opened_sources),
  // decided before the clone: the init sees other ids than its parent.
  std::vector<size_t> sources;
  bool own_cgroup = true;  // Pipeline::cgroup: false when the init stays in husk's
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

// That fds/<opath_fd> is exec.fifo, and `fd`, when given, too.
void check_is_fifo(int fds, int opath_fd, int fd = -1) {
  struct stat want, got;
  if (::fstat(opath_fd, &want) != 0) throw sys_error("stat exec.fifo");
  const std::string name = std::to_string(opath_fd);
  bool same = fd < 0 ? ::fstatat(fds, name.c_str(), &got, 0) == 0 : ::fstat(fd, &got) == 0;
  if (!same || got.st_dev != want.st_dev || got.st_ino != want.st_ino)
    throw Error("exec.fifo: the init's fd directory does not lead to it");
}

// The init holds exec.fifo only as an O_PATH fd while it is set up: unlike a
// directory fd of the state dir, it leads nowhere else on the host when a
// container process reaches it through /proc/<pid>/fd (CVE-2016-9962). It is
// reopened for writing, which blocks until `start` opens it for reading,
// through our own fd directory (ns::open_own_fd_dir), which leads only to
// the container's processes: the container may have no /proc, or a fake one.
// Found there before we say ready, so what can fail fails in create.
Fd find_fifo_again(int procfs, const std::string& no_procfs, int opath_fd, int preserve_fds) {
  Fd own = ns::open_own_fd_dir(procfs, no_procfs);
  // Out of the --preserve-fds range (see open_fifo_for_writing).
  Fd fds(::fcntl(own.get(), F_DUPFD_CLOEXEC, 3 + preserve_fds));
  if (!fds) throw sys_error("keep the init's fd directory");
  check_is_fifo(fds.get(), opath_fd);
  return fds;
}

int open_fifo_for_writing(int fds, int opath_fd, int preserve_fds) {
  Fd opened(::openat(fds, std::to_string(opath_fd).c_str(), O_WRONLY | O_CLOEXEC));
  if (!opened) throw sys_error("open exec.fifo for writing");
  check_is_fifo(fds, opath_fd, opened.get());
  // Out of the --preserve-fds range, which exec must not close.
  int fd = ::fcntl(opened.get(), F_DUPFD_CLOEXEC, 3 + preserve_fds);
  if (fd < 0) throw sys_error("keep exec.fifo");
  return fd;
}

bool has_new_ns(const spec::Linux& l, const char* type) {
  const auto* n = l.find_namespace(type);
  return n && n->path.empty();
}

// The init's procfs of its own (ns::open_private_procfs), only of a pid
// namespace of its own: one of the host's (or one joined) would show
// processes outside the container. Empty, with the reason in `why_not`.
Fd own_procfs(const spec::Linux& lx, std::string& why_not) {
  if (!has_new_ns(lx, "pid")) {
    why_not = "the container has no pid namespace of its own";
    return Fd();
  }
  try {
    return ns::open_private_procfs();
  } catch (const Error& e) {
    why_not = e.what();
    return Fd();
  }
}

// The init's state as hooks in the container see it: the pid as the
// container does.
spec::State init_state(const ChildContext& c, const char* status) {
  spec::State state = *c.req.state;
  state.pid = ::getpid();
  state.status = status;
  return state;
}

// The namespaces made or joined after the clone (user and pid were before
// it), in the cgroup the parent placed us in, and a session keyring.
void enter_namespaces(const ChildContext& c) {
  const spec::Linux& lx = *c.spec.linux_;
  // Joined namespaces other than user/pid (handled before the fork); mount last.
  for (const auto& j : c.plan.joins)
    if (j.type != "user" && j.type != "pid") ns::join_namespace(j);
  // Joined: the container must not reach them through our fds.
  for (const auto& j : c.plan.joins) ::close(j.fd);
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
}

// Every mount of the container, below the rootfs still seen from the host;
// returns the rootfs to enter (ns::prepare_rootfs).
Fd mount_rootfs(const ChildContext& c, ns::RootfsOptions& ro) {
  const spec::Spec& spec = c.spec;
  const spec::Linux& lx = *spec.linux_;
  // idmapped mounts for a user-namespaced container are built by the parent
  // (it needs real root over the source) and arrive here, in mount order.
  for (size_t i : idmapped_mounts(spec)) ro.idmapped[i] = recv_fd(c.sock);
  // So are the other bind sources: the parent opens them with its privileges.
  for (size_t i : c.sources) ro.sources[i] = recv_fd(c.sock);
  ro.rootfs = c.req.host->root->id;
  // Bind sources the parent did not send: found again in this namespace.
  ro.judged_sources = c.req.host->source_ids();
  ro.judged_layers = c.req.host->layer_ids();
  ro.no_pivot = c.req.no_pivot;
  ro.user_ns = lx.has_namespace("user");
  ro.caller_user_ns = !ro.user_ns && ns::in_user_namespace();
  // create requires a mount namespace, new or joined: set it up either way.
  ro.own_mount_ns = lx.has_namespace("mount");
  ro.own_cgroup = c.own_cgroup;
  // A copy only when there is a label to add.
  Fd root = lx.mount_label.empty() ? ns::prepare_rootfs(spec, ro) : ns::prepare_rootfs(lsm::with_mount_label(spec), ro);
  // Host paths must not stay reachable through the init's fds.
  for (auto* fds : {&ro.idmapped, &ro.sources}) {
    for (const auto& [i, fd] : *fds) ::close(fd);
    fds->clear();
  }
  return root;
}

// prestart + createRuntime (the parent's, while the old root is visible),
// then createContainer (ours), then into the root. `procfs`: the init's
// own, detached (-1: none), dropped with the old root.
void run_create_hooks_and_enter(const ChildContext& c, const ns::RootfsOptions& ro, int root, int procfs) {
  const auto& hooks = c.spec.hooks;
  if (!hooks.prestart.empty() || !hooks.create_runtime.empty()) {
    send_msg(c.sock, Msg::kHooks);
    expect_msg(c.sock, Msg::kHooksDone);
  }
  run_hooks(hooks.create_container, "createContainer", spec::state_to_json(init_state(c, "creating"), false));

  ns::enter_rootfs(ro, root, procfs);
  ns::set_hostname(c.spec);
  make_cwd(c.spec.process->cwd);  // before root.readonly applies
  ns::finalize_rootfs(c.spec, ro);
}

// The command's exec, behind a reaper when asked. One that was not found
// fails without a fork; the late filter is loaded before it, so that pid 1
// is under it too.
[[noreturn]] void exec_command(const ChildContext& c, Prepared& ready) {
  if (c.req.reaper && ready.found()) {
    ready.load_late_filter();
    fork_behind_reaper(c.req.emptied_fd);  // returns in the command's process only
  }
  ready.exec();
}

// Blocks until `start` opens the fifo for reading. From here on `start`
// listens: one byte says we are released, an error message explains a
// failure, and end-of-file (the fd is close-on-exec) says the exec happened.
// `create` has gone before that: a failure to reach the fifo can go only to
// the container's stderr, where the engine's log of the container shows it.
// `landlock`: the ruleset to enforce once the fifo, on the host, is open; -1: none.
[[noreturn]] void wait_for_start_and_exec(const ChildContext& c, Prepared& ready, const Fd& own_fds, int landlock) {
  log::close();
  int fifo = -1;
  try {
    fifo = open_fifo_for_writing(own_fds.get(), c.req.fifo_fd, c.req.preserve_fds);
    if (::write(fifo, "0", 1) != 1) throw sys_error("write exec.fifo");
  } catch (const std::exception& e) {
    const std::string report = std::string("husk: container init: ") + e.what() + "\n";
    ssize_t ignored = ::write(STDERR_FILENO, report.data(), report.size());
    (void)ignored;
    _exit(1);
  }
  ::close(c.req.fifo_fd);
  // One byte says which step failed (see LateFailure), the text why.
  char step = kFailedHook;
  try {
    if (landlock >= 0) landlock::restrict_self(landlock);
    run_hooks(c.spec.hooks.start_container, "startContainer", spec::state_to_json(init_state(c, "created"), false));
    step = kFailedExec;
    exec_command(c, ready);
  } catch (const std::exception& e) {
    const std::string report = step + std::string(e.what());
    ssize_t ignored = ::write(fifo, report.data(), report.size());
    (void)ignored;
    _exit(step == kFailedExec && c.req.shell_words ? ready.shell_status() : 1);
  }
}

// The Landlock ruleset of InitRequest::landlock, built in the finished mount
// view (its rules are on what the command sees), out of the --preserve-fds
// range; none without a plan or without Landlock in this kernel.
Fd landlock_ruleset(const ChildContext& c) {
  if (!c.req.landlock) return Fd();
  std::vector<std::string> notes;
  Fd fd = landlock::ruleset_for(*c.req.landlock, 3 + c.req.preserve_fds, notes);
  for (const auto& n : notes) log::debug(n);
  return fd;
}

// 0 when the mappings give it (or are not ours: a joined namespace), else
// the first mapped id.
uint32_t namespace_root(const std::vector<spec::IdMapping>& maps) {
  for (const auto& m : maps)
    if (m.container_id == 0) return 0;
  return maps.empty() ? 0 : maps.front().container_id;
}

// The host id of container id `id` under `maps` (none: not mapped, or the
// maps are a joined namespace's, not in the spec).
std::optional<uint32_t> host_id(const std::vector<spec::IdMapping>& maps, uint32_t id) {
  for (const auto& m : maps)
    if (id >= m.container_id && id - m.container_id < m.size) return m.host_id + (id - m.container_id);
  return std::nullopt;
}

// Everything the real init does, from the first sync to exec.
[[noreturn]] void container_init(ChildContext& c) {
  const spec::Linux& lx = *c.spec.linux_;
  const spec::Process& proc = *c.spec.process;

  // The parent knows our pid (from clone3 or the stage-1 message) and
  // places us in the cgroup before it says go.
  wait_for_go(c.sock);
  // Before anything runs in the container's namespaces (see child_main).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // The caller's environment stays outside: createContainer/startContainer
  // hooks without env run programs of the image, in the container.
  ::clearenv();
  // A session of its own, terminal or not: kill(0, sig) from the container
  // must not reach the caller's process group (the shim, conmon, husk run).
  if (::setsid() < 0) throw sys_error("setsid");
  // A user namespace, new or joined: become its root, so that files we create
  // are owned by a mapped id (the kernel refuses unmapped owners with
  // EOVERFLOW); in one that maps no root (husk sandbox: the user as itself),
  // its first id. The capabilities stay: no id was 0 before.
  if (lx.has_namespace("user")) {
    uid_t uid = namespace_root(lx.uid_mappings);
    gid_t gid = namespace_root(lx.gid_mappings);
    if (::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0)
      throw sys_error("become root of the container's user namespace");
  }

  // While /proc is still the host's (before a mount namespace is joined or
  // the rootfs entered): only the attr files of this thread, no directory.
  lsm::ExecLabels labels = lsm::ExecLabels::open(proc);
  enter_namespaces(c);
  ns::RootfsOptions ro;
  Fd own_fds;
  {
    Fd root = mount_rootfs(c, ro);
    std::string no_procfs;
    Fd procfs = own_procfs(lx, no_procfs);
    run_create_hooks_and_enter(c, ro, root.get(), procfs.get());
    own_fds = find_fifo_again(procfs.get(), no_procfs, c.req.fifo_fd, c.req.preserve_fds);
  }
  Fd landlock = landlock_ruleset(c);

  FinishRequest fin;
  fin.proc = &proc;
  fin.linux_cfg = &lx;
  fin.console_fd = c.req.console_fd;
  fin.bind_console = true;
  fin.preserve_fds = c.req.preserve_fds;
  fin.in_user_ns = ro.user_ns || ro.caller_user_ns;
  fin.sock = c.sock;
  fin.filter = c.has_seccomp ? &c.seccomp_prog : nullptr;
  fin.labels = &labels;
  fin.shell_words = c.req.shell_words;
  // A filter without notify under no_new_privs loads after the startContainer hooks.
  Prepared ready = finish_process(fin);

  send_msg(c.sock, Msg::kReady);
  ::close(c.sock);
  wait_for_start_and_exec(c, ready, own_fds, landlock.get());
}

// The judged fd of the namespace of `type` the spec joins, or -1.
int joined_fd(const ChildContext& c, const std::string& type) {
  for (const auto& j : c.plan.joins)
    if (j.type == type) return j.fd;
  return -1;
}

// What the init keeps of the parent's fds: the namespaces to join among them.
std::vector<int> kept_fds(const ChildContext& c) {
  std::vector<int> keep{c.sock, c.req.fifo_fd, c.req.console_fd, log::fd(), c.req.emptied_fd};
  for (const auto& j : c.plan.joins) keep.push_back(j.fd);
  return keep;
}

bool joins_pid(const ChildContext& c) {
  for (const auto& j : c.plan.joins)
    if (j.type == "pid") return true;
  return false;
}

// `pipeline`, `placed`: set when this process moves itself into the cgroup.
[[noreturn]] void child_main(ChildContext& c, const Pipeline* pipeline = nullptr, const Placement& placed = {}) {
  child_run(c.sock, [&] {
    // In a user namespace made for it, dumpable until the parent says go:
    // /proc/<pid> of a non-dumpable process belongs to root, so an
    // unprivileged parent (and newuidmap) could neither write its maps nor
    // open its namespaces and cwd (open_init_namespaces). Never in a joined
    // pid namespace: its processes would reach our fds, memory and the host's
    // root through /proc/<pid> (CVE-2016-9962); the stage-1 helper, outside
    // it, had the maps and namespaces then.
    child_prologue((c.plan.clone_flags & CLONE_NEWUSER) && !joins_pid(c));
    if (pipeline) pipeline->attach_self(placed);
    close_fds_except(3 + c.req.preserve_fds, kept_fds(c));
    container_init(c);
  });
}

// Slow path: join user/pid namespaces, unshare the rest, fork the real init
// (pid namespaces apply to children only) as our parent's child.
[[noreturn]] void stage1_main(ChildContext& c) {
  child_run(c.sock, [&] {
    // Still host root, about to enter namespaces others' processes live in:
    // one of them with CAP_SYS_PTRACE in a joined user namespace could
    // otherwise attach to us. Only a user namespace we make ourselves needs
    // us dumpable (its maps are written through /proc/<pid>).
    if (!(c.plan.clone_flags & CLONE_NEWUSER)) ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    close_fds_except(3 + c.req.preserve_fds, kept_fds(c));
    for (const auto& j : c.plan.joins)
      if (j.type == "user") ns::join_namespace(j);
    for (const auto& j : c.plan.joins)
      if (j.type == "pid") ns::join_namespace(j);
    int flags = c.plan.clone_flags & ~(CLONE_NEWCGROUP | CLONE_NEWTIME);
    if (flags && ::unshare(flags) != 0) throw sys_error("unshare namespaces");
    if (flags & CLONE_NEWUSER) {
      send_msg(c.sock, Msg::kMapIds);
      expect_msg(c.sock, Msg::kMapsDone);
    }
    // Our child is born in the joined pid namespace: not dumpable from its first instruction.
    if (joins_pid(c)) ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    spawn_sibling_and_exit(c.sock, [&] { child_main(c); });
  });
}

// Whether the parent sends the init mounts it makes in the init's namespaces.
bool sends_mounts(const ChildContext& c) {
  return !idmapped_mounts(c.spec).empty() || !c.sources.empty();
}

void send_idmapped_mounts(int sock, const ns::InitNamespaces& at, const spec::Spec& spec,
                          const std::map<size_t, base::Identity>& sources) {
  auto idx = idmapped_mounts(spec);
  if (idx.empty()) return;
  // Built in the container's mount namespace: see open_bind_sources.
  std::vector<Fd> trees;
  for (int fd : ns::open_bind_sources(spec, idx, at, sources, at.user.get())) trees.emplace_back(fd);
  for (const auto& t : trees) send_fd(sock, t.get(), "idmap");
}

void send_bind_sources(int sock, const ns::InitNamespaces& at, const ChildContext& c) {
  std::vector<Fd> fds;
  for (int fd : ns::open_bind_sources(c.spec, c.sources, at, c.req.host->source_ids())) fds.emplace_back(fd);
  for (const auto& fd : fds) send_fd(sock, fd.get(), "bind source");
}

struct Cloned {
  pid_t pid;
  bool stage1;  // a stage-1 helper, which reports the real init's pid
  Placement placed;
};

// Fast path: one clone3 makes every new namespace, into the cgroup when the
// kernel can. Joining a user or pid namespace needs an intermediate process
// (see stage1_main). The fast path's init moves itself into the cgroup
// unless it is born in a user namespace of its own, where it lacks the
// rights; the slow path's real init is moved by us (a stage-1 helper inside
// would count against pids.max beside it).
Cloned clone_init(ChildContext& c, const Pipeline& p) {
  bool joins_user_or_pid = false;
  for (const auto& j : c.plan.joins) joins_user_or_pid |= j.type == "user" || j.type == "pid";
  bool new_user = c.plan.clone_flags & CLONE_NEWUSER;
  bool slow = joins_user_or_pid || (new_user && !c.plan.joins.empty());

  Placement placed;
  pid_t pid;
  if (slow) {
    pid = clone3_raw(0, -1);
    if (pid == 0) stage1_main(c);
  } else {
    uint64_t flags = static_cast<uint64_t>(c.plan.clone_flags & ~(CLONE_NEWCGROUP | CLONE_NEWTIME));
    pid = p.clone_first(flags, !new_user, placed);
    if (pid == 0) child_main(c, &p, placed);
  }
  if (pid < 0) throw sys_error("clone container init");
  return {pid, slow, placed};
}

// The init's setup seen from the parent, until it waits for `start`.
pid_t drive_init(const ChildContext& c, ChildSession& s, Pipeline& p, const Placement& placed) {
  const spec::Spec& spec = *p.spec;
  bool maps_written = false;
  // Opened from the process whose maps were just written, while it is still
  // dumpable (see child_main): the init's namespaces and cwd.
  std::optional<ns::InitNamespaces> at;
  auto open_namespaces = [&](pid_t pid) {
    if (!at && sends_mounts(c)) at = ns::open_init_namespaces(spec, pid, joined_fd(c, "mount"));
  };
  // Once the real init's pid is known: id maps, cgroup, oom score, then go.
  auto release = [&] {
    if (!maps_written) p.map_ids(s.pid());
    maps_written = true;
    open_namespaces(s.pid());
    if (c.req.on_init_open) c.req.on_init_open(s.pid());
    s.release(p, placed);
    if (!at) return;
    s.sending([&] {
      send_idmapped_mounts(s.sock(), *at, spec, c.req.host->source_ids());
      send_bind_sources(s.sock(), *at, c);
    });
  };
  if (s.pid() > 0) release();
  for (;;) {
    Message m;  // a listener it carries is closed after the message
    if (!s.next(m)) throw s.exit_error();
    switch (m.type) {
      case Msg::kMapIds:
        p.map_ids(s.stage1());
        maps_written = true;
        open_namespaces(s.stage1());  // the real init it forks has them
        s.sending([&] { send_msg(s.sock(), Msg::kMapsDone); });
        break;
      case Msg::kPid:
        release();
        break;
      case Msg::kHooks: {
        const std::string hook_state = spec::state_to_json(p.state, false);
        run_hooks(spec.hooks.prestart, "prestart", hook_state);
        run_hooks(spec.hooks.create_runtime, "createRuntime", hook_state);
        s.sending([&] { send_msg(s.sock(), Msg::kHooksDone); });
        break;
      }
      case Msg::kSeccomp:
        // The state prestart hooks get: status creating, the init's host pid.
        s.forward_listener(p, m);
        break;
      case Msg::kReady:
        return s.done();
      default:
        throw Error("init sync: unexpected message " + msg_name(m.type));
    }
  }
}

}  // namespace

pid_t InitLauncher::launch(Pipeline& p) {
  const spec::Spec& spec = *req_.spec;
  const spec::Linux& lx = *spec.linux_;
  // The init mounts as the first id of its user namespace (container_init).
  bool init_is_us = ::geteuid() != 0 && lx.has_namespace("user") &&
                    host_id(lx.uid_mappings, namespace_root(lx.uid_mappings)) == ::geteuid() &&
                    host_id(lx.gid_mappings, namespace_root(lx.gid_mappings)) == ::getegid();
  ChildContext c{req_, spec, ns::plan_namespaces(lx), {}, false, -1, ns::runtime_opened_sources(spec, init_is_us)};
  // Joined by the fds judged on the host (inherited across the clone), never by path.
  for (auto& j : c.plan.joins) j.fd = req_.host->namespaces.at(j.index).fd.get();
  c.own_cgroup = p.cgroup != nullptr;
  if (lx.seccomp) {
    // Compiled here, before the clone, so a bad profile fails create early and
    // the init only makes one seccomp(2) call; the cache makes repeats cheap.
    c.seccomp_prog = seccomp::compile(seccomp::plan(*lx.seccomp), req_.seccomp_cache_dir);
    c.has_seccomp = true;
  }

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) throw sys_error("socketpair for init");
  Fd parent_sock(sv[0]), child_sock(sv[1]);
  c.sock = child_sock.get();
  Cloned cl = clone_init(c, p);
  ChildSession s(std::move(parent_sock), cl.pid, cl.stage1);
  child_sock.reset();
  return drive_init(c, s, p, cl.placed);
}

LateFailure release_init(int state_dir_fd, pid_t pid, uint64_t start_time, const std::function<void()>& released) {
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
    if (!base::process_alive(pid, start_time)) throw Error("container init died before start");
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
  if (err.empty()) return {};
  return {err.substr(1), err[0] == kFailedExec};
}

}  // namespace husk::rt
