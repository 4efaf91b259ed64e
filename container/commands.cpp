#include "container/commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <net/if.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/file.h"
#include "cgroups/cgroups.h"
#include "cgroups/systemd.h"
#include "container/operator_policy.h"
#include "container/state.h"
#include "launch/console.h"
#include "launch/foreground.h"
#include "launch/hooks.h"
#include "launch/host_objects.h"
#include "launch/init.h"
#include "launch/launch.h"
#include "base/log.h"
#include "launch/lsm.h"
#include "launch/self_exe.h"
#include "launch/signals.h"
#include "base/fd.h"
#include "base/process.h"
#include "base/time.h"
#include "namespaces/id_maps.h"
#include "namespaces/namespaces.h"
#include "policy/policy.h"
#include "seccomp/seccomp.h"
#include "spec/defaults.h"

namespace husk::rt {

using base::Fd;
namespace {

std::string absolute_dir(const std::string& path, const char* what) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) throw sys_error(std::string(what) + " " + path);
  struct stat st;
  if (::stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) throw Error(std::string(what) + " " + path + ": not a directory");
  return buf;
}

// Features husk does not implement fail create with the reason, never silently.
void check_unsupported(const spec::Linux& lx) {
  if (lx.intel_rdt) {
    struct statfs fs;
    if (::statfs("/sys/fs/resctrl", &fs) != 0 || fs.f_type != 0x7655821 /* RDTGROUP_SUPER_MAGIC */)
      throw Error("linux.intelRdt: no resctrl filesystem is mounted at /sys/fs/resctrl");
    throw Error("linux.intelRdt: not supported by husk");
  }
  for (const auto& [host_name, dev] : lx.net_devices) {
    if (::if_nametoindex(host_name.c_str()) == 0)
      throw Error("linux.netDevices[\"" + host_name + "\"]: no such network interface on the host");
    throw Error("linux.netDevices: moving host interfaces into the container is not supported by husk");
  }
}

// `given`: the config husk made itself (run_own_config), else the bundle's
// config.json is read; `text` gets it either way.
spec::Spec load_config(const std::string& bundle, const std::string* given, std::string& text) {
  spec::Spec s;
  if (!given) {
    s = spec::load_bundle(bundle, &text);
  } else {
    text = *given;
    try {
      s = spec::parse(text);
      spec::validate(s, true);
    } catch (const Error& e) {
      rethrow_with("config.json", e);
    }
  }
  // What husk itself needs beyond the spec's rules.
  try {
    if (!s.linux_) throw Error("linux: required (husk runs Linux containers)");
    if (!s.linux_->has_namespace("mount"))
      throw Error("linux.namespaces: a mount namespace is required");
    ns::check_sysctl(s);
    check_unsupported(*s.linux_);
    return s;
  } catch (const Error& e) {
    rethrow_with("config.json", e);
  }
}

// Said where husk will not empty or remove a cgroup that is there.
void leave_alone(const std::string& path) {
  if (cgroups::exists(path))
    log::warn("cgroup " + path + " is not marked as made by husk for this container: left alone");
}

bool recorded_made(const Record& rec) {
  return std::find(rec.cgroup_created.begin(), rec.cgroup_created.end(), rec.cgroup_path) !=
         rec.cgroup_created.end();
}

// Only a cgroup husk made for this container may be emptied and removed: a
// cgroupsPath naming someone else's cgroup must never get its processes
// killed. The record says husk made it, the mark that it really did (a
// planted or stale record can say anything).
bool owns_leaf(const Record& rec, const cgroups::Manager& cg) {
  if (!recorded_made(rec)) return false;
  if (cg.owned()) return true;
  leave_alone(rec.cgroup_path);
  return false;
}

// The container's cgroup when owns_leaf(), else null.
std::unique_ptr<cgroups::Manager> open_owned(const Record& rec) {
  if (!recorded_made(rec)) return nullptr;
  auto cg = open_cgroup(rec);
  if (cg && !owns_leaf(rec, *cg)) cg.reset();
  return cg;
}

// Thaws a paused cgroup after its processes got SIGKILL: a frozen process acts
// on it only once thawed (v1's freezer).
void thaw_killed(cgroups::Manager& cg) {
  try {
    cg.thaw();
  } catch (const Error&) {
    if (!cg.pids().empty()) throw;  // removed meanwhile (a systemd scope): nothing to thaw
  }
}

// For a record whose cgroup is not this container's (a decoy written into
// state.json) while its init lives elsewhere: the cgroup the init is really
// in, when it carries this container's mark (which proves the init husk's,
// beyond pid and start time), with a pidfd pinning the init. Else null.
std::unique_ptr<cgroups::Manager> init_cgroup(const Record& rec, std::vector<Fd>& init) {
  if (rec.oci.pid <= 0 || rec.start_time == 0 || rec.cgroup_handle.rfind("systemd", 0) == 0) return nullptr;
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, rec.oci.pid, 0)));
  if (!pidfd || !base::process_alive(rec.oci.pid, rec.start_time)) return nullptr;
  Record real = rec;
  real.cgroup_path = cgroups::cgroup_of(rec.oci.pid);
  if (real.cgroup_path.empty() || real.cgroup_path == "/" || real.cgroup_path == rec.cgroup_path) return nullptr;
  real.cgroup_handle.clear();
  real.cgroup_created = {real.cgroup_path};
  auto cg = open_owned(real);
  if (cg) {
    log::warn("delete: the init " + std::to_string(rec.oci.pid) + " is in cgroup " + real.cgroup_path +
              ", not the recorded " + rec.cgroup_path + ": removing that one, marked as this container's");
    init.push_back(std::move(pidfd));
  }
  return cg;
}

// A container being made: undone unless commit() is called.
struct Creation {
  Handle handle;
  Record rec;
  spec::Spec spec;
  std::unique_ptr<cgroups::Manager> cgroup;
  bool committed = false;

  Creation(Handle h, spec::Spec s) : handle(std::move(h)), spec(std::move(s)) {}
  void commit() { committed = true; }
  ~Creation() {
    if (committed) return;
    try {
      // The init itself is already killed and reaped by the launch (ChildSession).
      if (cgroup && owns_leaf(rec, *cgroup)) {
        try {
          cgroup->kill_all(SIGKILL);
        } catch (const Error& e) {
          // Still removed: a cgroup a process is left in refuses rmdir.
          log::warn(std::string("cleanup after failed create: ") + e.what());
        }
        cgroup->destroy();
      }
    } catch (const Error& e) {
      log::warn(std::string("cleanup after failed create: ") + e.what());
    }
    try {
      handle.remove();
    } catch (const Error& e) {
      log::warn(std::string("cleanup after failed create: ") + e.what());
    }
  }
};

struct Bundle {
  std::string dir, config_text, rootfs;
  spec::Spec spec;
  HostObjects host;
};

// The bundle's config (`config_text`: see load_config) and every host object
// it names, opened once: the policy judges those fds and create uses them.
Bundle open_bundle(const std::string& bundle_arg, const std::string* config_text = nullptr) {
  Bundle b;
  b.dir = absolute_dir(bundle_arg, "bundle");
  b.spec = load_config(b.dir, config_text, b.config_text);
  // A relative bind source is the bundle's (config.md; runc works in the
  // bundle directory), never husk's caller's working directory.
  for (auto& m : b.spec.mounts)
    if (!m.source.empty() && m.source[0] != '/' && spec::is_bind(m))
      m.source = b.dir + "/" + m.source;
  b.host = open_host_objects(b.spec, b.dir, true);
  b.rootfs = b.host.root->id.real;
  try {
    ns::check_sysctl_joined(b.spec, b.host.namespace_fds());
  } catch (const Error& e) {
    rethrow_with("config.json", e);
  }
  return b;
}

void check_console_flags(const spec::Process& p, const CreateOptions& o, bool detached) {
  if (p.terminal && detached && o.console_socket.empty())
    throw Error("process.terminal: a detached container's terminal goes to --console-socket, which is not given");
  if (!p.terminal && !o.console_socket.empty())
    throw Error("--console-socket: given, but process.terminal is false (no terminal to send)");
}

// A rootless container that gets no cgroup: said once, the reason recorded
// for the commands that need one; its limits are refused.
void make_no_cgroup(Creation& c, const std::string& config_text, const std::string& reason, bool quiet) {
  c.rec.no_cgroup = reason;
  c.handle.save(c.rec);
  c.handle.save_config(config_text);
  cgroups::Config config = cgroup_config(c.rec);
  if (quiet) config.log = nullptr;
  c.cgroup = cgroups::make_manager(config);
  c.cgroup->prepare();
  const auto& lx = *c.spec.linux_;
  if (lx.resources) c.cgroup->apply(*lx.resources);
}

// The container's cgroup, made (or taken over when it exists and is empty)
// with the device policy and the limits applied. Rootless: in a delegated
// subtree (cgroups::choose_rootless), or none.
void make_cgroup(const Context& g, Creation& c, const std::string& config_text, const CreateExtras& extras) {
  Record& rec = c.rec;
  const auto& lx = *c.spec.linux_;
  if (lx.resources) cgroups::check_host(*lx.resources);
  std::optional<cgroups::SystemdUnit> unit;
  if (g.systemd_cgroup) {
    // Where the system manager will put it; systemd's answer replaces it at start.
    unit = cgroups::systemd_unit(lx.cgroups_path, rec.oci.id, g.rootless);
    rec.cgroup_path = unit->cgroup;
    rec.cgroup_rootless = g.rootless;
  } else if (g.rootless) {
    if (!extras.no_cgroup_reason.empty())
      return make_no_cgroup(c, config_text, extras.no_cgroup_reason, extras.quiet_no_cgroup);
    auto choice = cgroups::choose_rootless(cgroups::rootless_host(), lx.cgroups_path, rec.oci.id);
    if (choice.path.empty()) return make_no_cgroup(c, config_text, choice.none_reason, extras.quiet_no_cgroup);
    rec.cgroup_path = choice.path;
    rec.cgroup_rootless = true;
  } else {
    rec.cgroup_path = cgroups::resolve_path(lx.cgroups_path, rec.oci.id);
  }
  // Recorded before the cgroup is made (the leaf and each parent not there
  // yet, as ours) and after: a husk killed at any point leaves enough for
  // delete --force, which removes only those carrying the mark.
  for (size_t slash = rec.cgroup_path.find('/', 1);; slash = rec.cgroup_path.find('/', slash + 1)) {
    const std::string dir = rec.cgroup_path.substr(0, slash);
    if (!dir.empty() && !cgroups::exists(dir)) rec.cgroup_created.push_back(dir);
    if (slash == std::string::npos) break;
  }
  c.handle.save(rec);
  // Only now: delete --force takes the cgroup from config.json when state.json
  // is unreadable, and must not find one husk never recorded.
  c.handle.save_config(config_text);
  cgroups::Config config = cgroup_config(rec);
  if (unit) {
    config.driver = cgroups::Driver::systemd;
    config.unit = unit->unit;
    config.slice = unit->slice;
    config.user_manager = g.rootless;
    config.bridge = companion_path("husk-systemd");
  }
  c.cgroup = cgroups::make_manager(config);
  rec.cgroup_handle = c.cgroup->prepare();
  rec.cgroup_created = c.cgroup->created();
  c.handle.save(rec);
  // A leaf we just made (and marked) is empty; only a pre-existing one needs the check.
  if (!recorded_made(rec) && !c.cgroup->pids().empty())
    throw Error("linux.cgroupsPath: cgroup " + rec.cgroup_path + " already has processes in it");
  // Always applied: the device policy (deny all, then the spec's rules, then
  // the standard /dev nodes) holds even without resources. As with runc,
  // linux.devices are not allowed implicitly: engines add rules for them.
  spec::Resources res = lx.resources.value_or(spec::Resources{});
  res.devices = cgroups::effective_device_rules(res.devices, {});
  c.cgroup->apply(res);
}

// The init through the launch pipeline: maps written (see ProcIdMapWriter), into the
// container's cgroup, cloned; state.json gets its pid before any hook runs.
void launch_init(const Context& g, const CreateOptions& o, Creation& c, const HostObjects& host, int console_fd,
                 const CreateExtras& extras) {
  InitRequest req;
  req.spec = &c.spec;
  req.host = &host;
  Fd fifo(::openat(c.handle.dir_fd(), "exec.fifo", O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!fifo) throw sys_error("open " + c.handle.dir() + "/exec.fifo");
  req.fifo_fd = fifo.get();
  req.state = &c.rec.oci;
  req.console_fd = console_fd;
  req.preserve_fds = o.preserve_fds;
  req.no_pivot = o.no_pivot;
  if (!o.no_new_keyring) req.session_keyring = o.id;
  req.seccomp_cache_dir = g.seccomp_cache;
  req.on_init_open = extras.on_init_open;

  ProcIdMapWriter id_maps(c.spec);
  InitLauncher launcher(req);
  Pipeline p;
  p.spec = &c.spec;
  p.proc = &*c.spec.process;
  p.id_maps = &id_maps;
  // A container given no cgroup stays in ours (Pipeline::cgroup).
  p.cgroup = c.rec.no_cgroup.empty() ? c.cgroup.get() : nullptr;
  p.launcher = &launcher;
  p.on_pid = [&c](pid_t pid) {
    c.rec.oci.pid = pid;
    if (c.cgroup && c.cgroup->path() != c.rec.cgroup_path) {  // systemd's answer, now the scope is there
      c.rec.cgroup_path = c.cgroup->path();
      c.rec.cgroup_created = c.cgroup->created();
    }
    c.rec.start_time = base::process_start_time(pid);
    c.handle.save(c.rec);
    return c.rec.oci;
  };
  p.run();
}

// create, with the console fd already decided (-1: no terminal).
std::unique_ptr<Creation> create_container(const Context& g, const CreateOptions& o, Bundle&& b, int console_fd,
                                           const CreateExtras& extras = {}) {
  // Before anything exists: a label the host cannot apply fails with nothing left behind.
  lsm::check_labels(*b.spec.process, b.spec.linux_ ? &*b.spec.linux_ : nullptr);
  Store store(g.root);
  auto c = std::make_unique<Creation>(Handle::create(store, o.id), std::move(b.spec));
  const spec::Spec& sp = c->spec;
  if (::mkfifoat(c->handle.dir_fd(), "exec.fifo", 0622) != 0) throw sys_error("mkfifo " + c->handle.dir() + "/exec.fifo");
  // mkfifo honours our umask; the init may write to it as an unprivileged user.
  ::fchmodat(c->handle.dir_fd(), "exec.fifo", 0622, 0);

  Record& rec = c->rec;
  rec.oci.oci_version = sp.oci_version;
  rec.oci.id = o.id;
  rec.oci.status = status_name(Status::creating);
  rec.oci.bundle = b.dir;
  rec.oci.rootfs = b.rootfs;
  rec.oci.created = base::now_rfc3339();
  rec.oci.annotations = sp.annotations;
  make_cgroup(g, *c, b.config_text, extras);

  log::debug("create " + o.id + ": bundle " + b.dir + ", cgroup " + rec.cgroup_path);
  launch_init(g, o, *c, b.host, console_fd, extras);
  log::debug("create " + o.id + ": init " + std::to_string(rec.oci.pid) + " waits for start");
  rec.oci.status = status_name(Status::created);
  c->handle.save(rec);
  base::write_pid_file(o.pid_file, rec.oci.pid);
  return c;
}

// SIGKILL through pidfds, then wait (bounded) until each is gone.
void kill_and_wait(const std::vector<Fd>& pidfds) {
  for (const auto& fd : pidfds) ::syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0);
  for (const auto& fd : pidfds) {
    pollfd p{fd.get(), POLLIN, 0};
    while (::poll(&p, 1, 1000) < 0 && errno == EINTR) {
    }
  }
}

// `spec` is the config when the caller has it already (run); start reads it.
void start_container(Handle& h, const spec::Spec* spec = nullptr) {
  Record rec = h.load();
  require(Verb::start, live_status(rec), rec.oci.id);
  spec::Spec loaded;
  if (!spec) loaded = h.config();
  const spec::Spec& sp = spec ? *spec : loaded;
  const LateFailure failed = release_init(h.dir_fd(), rec.oci.pid, rec.start_time, [&] {
    rec.oci.status = status_name(Status::running);
    h.save(rec);
    // startContainer hooks and the exec may take long: kill/delete must not wait.
    h.unlock();
  });
  if (!failed.error.empty() && !failed.in_exec) throw Error(failed.error);
  if (failed.in_exec) {
    // As with runc, start has done its part once the init is released: the
    // error is shown and the container stops with status 1 (engines map a
    // failed start to 126/127, where runc's callers see the exit status).
    // Nothing ran, so no poststart hook runs.
    log::error(failed.error);
    std::cerr << failed.error << std::endl;
    return;
  }
  try {
    run_hooks(sp.hooks.poststart, "poststart", spec::state_to_json(rec.oci, false));
  } catch (const Error&) {
    // runtime.md (1.3) lifecycle step 9: a failing poststart hook is an
    // error, and the container is stopped.
    std::vector<Fd> init;
    if (Fd fd = open_init(rec)) init.push_back(std::move(fd));
    kill_and_wait(init);
    throw;
  }
}

// `spec`: the config when the caller still has it (run), else read back.
void destroy_container(Handle& h, Record& rec, bool force, const spec::Spec* spec = nullptr) {
  const Status st = live_status(rec);
  if (!force) require(Verb::remove, st, rec.oci.id);
  std::unique_ptr<cgroups::Manager> cg;
  try {
    cg = open_owned(rec);
  } catch (const Error& e) {
    if (!force) throw;
    log::warn(std::string("delete: ") + e.what());
  }
  log::debug("delete " + rec.oci.id + ": status " + status_name(st) + (cg ? ", removing cgroup " + rec.cgroup_path : ""));
  // Opened first: the pidfd pins the init so we can wait for it.
  std::vector<Fd> init;
  if (Fd fd = open_init(rec)) init.push_back(std::move(fd));
  // No init where the record says: the record may name a decoy, even one
  // that passes as ours (an empty, unmarked leftover of a killed create).
  // The cgroup the init is really in, marked as this container's, wins.
  if (init.empty()) {
    try {
      if (auto real = init_cgroup(rec, init)) cg = std::move(real);
    } catch (const Error& e) {
      if (!force) throw;
      log::warn(std::string("delete: ") + e.what());
    }
  }
  // Processes may outlive the init (no pid namespace): empty our cgroup even
  // when the container counts as stopped.
  if (cg) {
    cg->kill_all(SIGKILL);
    if (st == Status::paused) thaw_killed(*cg);
  }
  kill_and_wait(init);
  if (cg) cg->destroy();
  // A create killed before its leaf existed may have made parents: the
  // record lists them, and destroy() removes only those carrying the mark
  // (systemd removes its own units). Nothing is left to kill: best effort.
  if (!cg && recorded_made(rec) && rec.cgroup_handle.rfind("systemd", 0) != 0 && !cgroups::exists(rec.cgroup_path)) {
    try {
      if (auto parents = open_cgroup(rec)) parents->destroy();
    } catch (const Error& e) {
      log::warn(std::string("delete: ") + e.what());
    }
  }
  spec::Spec loaded;
  bool have_config = true;
  if (!spec) {
    try {
      loaded = h.config();
    } catch (const Error& e) {
      have_config = false;
      log::warn(std::string("delete: ") + e.what());
    }
  }
  h.remove();
  if (have_config) {
    rec.oci.status = status_name(Status::stopped);
    run_hooks_logged((spec ? *spec : loaded).hooks.poststop, "poststop", spec::state_to_json(rec.oci, false));
  }
}

// delete --force without a usable state.json: the cgroup comes from the saved
// config.json, a waiting init also from the processes holding exec.fifo.
void recover_container(const Context& g, Handle& h) {
  std::unique_ptr<cgroups::Manager> cg;
  try {
    spec::Spec sp = h.config();
    Record rec;
    rec.oci.id = h.id();
    const auto& path = sp.linux_ ? sp.linux_->cgroups_path : std::nullopt;
    // Rootless: where create would have put it from here (a delete run from
    // another cgroup finds another place, which the mark then refuses).
    rec.cgroup_rootless = g.rootless;
    if (g.systemd_cgroup) {
      // The system manager's place for it (a user manager's is not known
      // from here: the mark check then finds nothing, systemd collects it).
      auto unit = cgroups::systemd_unit(path, h.id(), g.rootless);
      rec.cgroup_path = unit.cgroup;
      rec.cgroup_handle = std::string(g.rootless ? "systemd-user:" : "systemd:") + unit.unit;
    } else {
      rec.cgroup_path = g.rootless ? cgroups::choose_rootless(cgroups::rootless_host(), path, h.id()).path
                                   : cgroups::resolve_path(path, h.id());
    }
    // No record says whether create made the leaf or took over an existing
    // one: only the mark tells.
    rec.cgroup_created = {rec.cgroup_path};
    if (!rec.cgroup_path.empty()) cg = open_owned(rec);
  } catch (const Error& e) {
    log::warn(std::string("delete: no cgroup to clean up: ") + e.what());
  }
  log::debug("delete " + h.id() + ": recovering" + (cg ? ", removing cgroup " + cg->path() : ""));
  if (cg) cg->kill_all(SIGKILL);
  std::vector<Fd> holders;
  for (pid_t p : h.fifo_holders())
    if (Fd fd{static_cast<int>(::syscall(SYS_pidfd_open, p, 0))}) holders.push_back(std::move(fd));
  kill_and_wait(holders);
  if (cg) cg->destroy();
  h.remove();
}

// `h` opened without the lock.
spec::State visible_state(const Handle& h, const Record& rec) {
  spec::State s = rec.oci;
  Status live = live_status(rec);
  // Before the init's pid is recorded a create under way looks like one that
  // died: only its lock tells them apart (an engine polling state would
  // delete a container that was about to start).
  if (live == Status::stopped && parse_status(rec.oci.status) == Status::creating && h.held_elsewhere())
    live = Status::creating;
  if (live == Status::stopped) s.pid = 0;
  s.status = status_name(live);
  return s;
}

}  // namespace

int cmd_create(const Context& g, const CreateOptions& o) {
  Bundle b = open_bundle(o.bundle);
  enforce_operator_policy(g, b.spec, b.dir, b.host.probe());
  check_console_flags(*b.spec.process, o, true);
  ConsoleChannel console = open_console_channel(b.spec.process->terminal, o.console_socket);
  auto c = create_container(g, o, std::move(b), console.child.get());
  c->commit();
  return 0;
}

int cmd_start(const Context& g, const std::string& id) {
  Handle h = Handle::open(Store(g.root), id);
  start_container(h);
  return 0;
}

namespace {

int run_bundle(const Context& g, const CreateOptions& o, Bundle b, const CreateExtras& extras) {
  check_console_flags(*b.spec.process, o, o.detach);
  bool terminal = b.spec.process->terminal;

  // Signals are taken through a signalfd from before the clone on, so none is
  // lost; the init unblocks them for itself.
  Fd sigfd(o.detach ? -1 : forwarding_signalfd());

  ConsoleChannel console = open_console_channel(terminal, o.console_socket);
  auto c = create_container(g, o, std::move(b), console.child.get(), extras);
  console.child.reset();
  Fd master(console.parent ? recv_fd(console.parent.get()) : -1);
  start_container(c->handle, &c->spec);
  c->commit();
  if (o.detach) return 0;

  pid_t pid = c->rec.oci.pid;
  std::string id = c->rec.oci.id;
  spec::Spec sp = std::move(c->spec);  // its poststop hooks: not parsed again
  // Free the container lock while we wait so that state/kill/exec work.
  c.reset();
  int status = extras.wait ? extras.wait(pid, sigfd.get()) : wait_foreground(pid, sigfd.get(), master.get());
  if (!o.keep) {
    Handle h = Handle::open(Store(g.root), id);
    Record rec = h.load();
    destroy_container(h, rec, true, &sp);
  }
  return status;
}

}  // namespace

int cmd_run(const Context& g, const CreateOptions& o) {
  Bundle b = open_bundle(o.bundle);
  enforce_operator_policy(g, b.spec, b.dir, b.host.probe());
  return run_bundle(g, o, std::move(b), {});
}

int run_own_config(const Context& g, const CreateOptions& o, const std::string& config_text, const CreateExtras& extras) {
  try {
    return run_bundle(g, o, open_bundle(o.bundle, &config_text), extras);
  } catch (...) {
    // A failure after create (start, the wait) leaves a committed container.
    try {
      Handle h = Handle::open(Store(g.root), o.id);
      Record rec = h.load();
      destroy_container(h, rec, true);
    } catch (const Error&) {
    }
    throw;
  }
}

int cmd_state(const Context& g, const std::string& id) {
  Handle h = Handle::open(Store(g.root), id, false);
  std::cout << spec::state_to_json(visible_state(h, h.load()), true) << std::endl;
  return 0;
}

int cmd_kill(const Context& g, const std::string& id, const std::string& signal, bool all) {
  int sig = parse_signal(signal);
  Handle h = Handle::open(Store(g.root), id, false);
  Record rec = h.load();
  const Status st = live_status(rec);
  if (st == Status::creating) require(Verb::kill, st, id);
  // As runc does, a paused container is thawed after it is killed.
  const bool thaw_after = sig == SIGKILL && st == Status::paused;
  if (all) {
    // Without a pid namespace processes outlive the init: --all still reaches
    // them (containerd's shim relies on it), and is a no-op once the cgroup is gone.
    if (st == Status::stopped && (rec.cgroup_path.empty() || !cgroups::exists(rec.cgroup_path))) return 0;
    if (auto cg = open_cgroup(rec)) {
      cg->kill_all(sig);
      if (thaw_after) thaw_killed(*cg);
      return 0;
    }
  }
  require(Verb::kill, st, id);
  // A pidfd pins the process: checking it and signalling through it cannot
  // hit a recycled pid, nor one a planted state.json names.
  Fd pidfd = open_init(rec);
  if (!pidfd) throw Error("container not running");
  if (::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0) != 0) throw sys_error("kill container init");
  if (thaw_after)
    if (auto cg = open_cgroup(rec)) thaw_killed(*cg);
  return 0;
}

int cmd_delete(const Context& g, const std::string& id, bool force) {
  Store store(g.root);
  if (!force) {
    Handle h = Handle::open(store, id);
    Record rec = h.load();
    destroy_container(h, rec, false);
    return 0;
  }
  // A missing container is no error; a half-made or corrupt one is recovered.
  std::optional<Handle> h = Handle::open_dir(store, id);
  if (!h) return 0;
  h->check_ours();
  std::optional<Record> rec;
  try {
    rec = h->load();
  } catch (const Error& e) {
    log::warn(std::string("delete: ") + e.what());
  }
  if (rec) destroy_container(*h, *rec, true);
  else recover_container(g, *h);
  return 0;
}

namespace {

// runc's OWNER: the name of the uid owning the state, which is the caller
// (Store refuses anyone else's), "#<uid>" when /etc/passwd has none.
std::string state_owner() {
  const uid_t uid = ::geteuid();
  std::string name = ns::passwd_name(base::try_read_file("/etc/passwd").value_or(""), uid);
  return name.empty() ? "#" + std::to_string(uid) : name;
}

}  // namespace

int cmd_list(const Context& g, const std::string& format, bool quiet) {
  Store store(g.root);
  std::vector<spec::State> states;
  auto ids = store.ids();
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) {
    // A broken container is reported without hiding the others (as runc
    // does); one being created or deleted right now, or another runtime's in
    // a shared root, is passed over silently.
    try {
      Handle h = Handle::open(store, id, false);
      try {
        states.push_back(visible_state(h, h.load()));
      } catch (const Error& e) {
        try {
          h.check_ours();
        } catch (const Error&) {
          continue;
        }
        log::warn(e.what());
      }
    } catch (const Error& e) {
      if (e.err() != ENOENT) log::warn(e.what());
    }
  }
  const std::string owner = state_owner();
  for (auto& s : states)
    if (s.owner.empty()) s.owner = owner;
  if (quiet) {
    for (const auto& s : states) std::cout << s.id << "\n";
    return 0;
  }
  if (format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : states) arr.push_back(nlohmann::json::parse(spec::state_to_json(s, false)));
    std::cout << arr.dump() << std::endl;
    return 0;
  }
  if (format != "table") throw Error("invalid format option \"" + format + "\"");
  std::vector<std::vector<std::string>> rows{{"ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"}};
  for (const auto& s : states)
    rows.push_back({s.id, std::to_string(s.pid), s.status, s.bundle, s.created, s.owner});
  std::vector<size_t> width(6, 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 3, ' ');
    }
    std::cout << line << "\n";
  }
  return 0;
}

int cmd_spec(const std::string& bundle, const spec::ConfigDefaults& d) {
  std::string path = bundle + "/config.json";
  if (::access(path.c_str(), F_OK) == 0) throw Error("File " + path + " exists. Remove it first");
  base::write_file_atomic(path, spec::default_config_json(d), 0644);
  return 0;
}

int cmd_check(const Context& g, const std::string& bundle, const std::string& policy_arg) {
  std::string arg = policy_arg.empty() ? operator_policy(g) : policy_arg;
  policy::Policy policy = policy::load_policy(arg.empty() ? "baseline" : arg);
  spec::Spec spec = spec::load_bundle(bundle);
  const std::string dir = absolute_dir(bundle, "bundle");
  // As create judges them, from the objects opened; one that cannot be opened is judged as written.
  const HostObjects host = open_host_objects(spec, dir, false);
  std::vector<policy::Finding> findings = policy::evaluate(spec, policy, dir, host.probe());
  if (findings.empty())
    std::cout << bundle << ": no findings under policy " << policy.name << "\n";
  else
    std::cout << policy::findings_table(findings);
  return policy::violated(findings) ? 1 : 0;
}

int cmd_features() {
  spec::Features f;
  f.oci_version_max = "1.3.0";
  f.hooks = {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"};
  f.mount_options = spec::known_mount_options();
  f.namespaces = spec::known_namespaces();
  f.capabilities = spec::known_capabilities();
  auto mode = cgroups::detect_mode();
  f.cgroup_v1 = mode != cgroups::Mode::unified;
  f.cgroup_v2 = mode != cgroups::Mode::legacy;
  f.cgroup_rdma = true;
  // Built in, and its sd-bus helper installed with husk.
  f.cgroup_systemd = f.cgroup_systemd_user = ::access(companion_path("husk-systemd").c_str(), X_OK) == 0;
  f.mount_extensions_idmap = true;
  // features-linux.md: the runtime's support, "irrelevant to the availability
  // of AppArmor [SELinux] on the host"; what this host enforces is an annotation.
  f.apparmor = f.selinux = true;
  const lsm::HostLsm host = lsm::probe_host();
  f.annotations["org.husk.apparmor.host"] = host.apparmor ? "enabled" : "not enabled";
  f.annotations["org.husk.selinux.host"] = host.selinux ? "enabled" : "not enabled";
  // features.md has no field for these; annotations carry what was found.
  f.annotations["org.husk.cgroup.mode"] = mode == cgroups::Mode::unified  ? "unified"
                                          : mode == cgroups::Mode::hybrid ? "hybrid"
                                                                          : "legacy";
  std::string controllers;
  try {
    std::istringstream lines(base::read_file("/proc/cgroups"));
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream cols(line);
      std::string name, hierarchy, count, enabled;
      if (cols >> name >> hierarchy >> count >> enabled && name[0] != '#' && enabled == "1")
        controllers += (controllers.empty() ? "" : ",") + name;
    }
  } catch (const Error&) {
  }
  f.annotations["org.husk.cgroup.controllers"] = controllers;
  f.seccomp_enabled = true;
  f.seccomp_actions = seccomp::known_actions();
  f.seccomp_operators = seccomp::known_operators();
  f.seccomp_archs = seccomp::known_archs();
  f.seccomp_known_flags = seccomp::known_flags();
  f.seccomp_supported_flags = seccomp::supported_flags();
  std::cout << spec::features_to_json(f) << std::endl;
  return 0;
}

}  // namespace husk::rt
