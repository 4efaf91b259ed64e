#include "container/internal.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include <memory>

#include "base/error.h"
#include "base/fd.h"
#include "base/file.h"
#include "base/log.h"
#include "base/process.h"
#include "base/time.h"
#include "cgroups/cgroups.h"
#include "cgroups/systemd.h"
#include "container/operator_policy.h"
#include "container/placement.h"
#include "container/state.h"
#include "launch/console.h"
#include "launch/host_objects.h"
#include "launch/init.h"
#include "launch/launch.h"
#include "launch/lsm.h"
#include "launch/self_exe.h"

namespace husk::rt {

using base::Fd;

Creation::~Creation() {
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

namespace {

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
  // With systemd: where the manager will put it; its answer replaces it at start.
  const CgroupPlace place = place_cgroup(g, lx.cgroups_path, rec.oci.id, extras.no_cgroup_reason);
  if (place.path.empty()) return make_no_cgroup(c, config_text, place.none_reason, extras.quiet_no_cgroup);
  rec.cgroup_path = place.path;
  rec.cgroup_rootless = g.rootless;
  const std::optional<cgroups::SystemdUnit>& unit = place.unit;
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
  if (extras.landlock) req.landlock = &*extras.landlock;
  req.reaper = extras.reaper;
  req.emptied_fd = extras.reaper_emptied_fd;
  req.shell_words = extras.shell_words;

  ProcIdMapWriter id_maps(c.spec);
  std::unique_ptr<Launcher> launcher = g.init_launcher ? g.init_launcher(req) : std::make_unique<InitLauncher>(req);
  Pipeline p;
  p.spec = &c.spec;
  p.proc = &*c.spec.process;
  p.id_maps = &id_maps;
  // A container given no cgroup stays in ours (Pipeline::cgroup).
  p.cgroup = c.rec.no_cgroup.empty() ? c.cgroup.get() : nullptr;
  p.launcher = launcher.get();
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

}  // namespace

void check_console_flags(const spec::Process& p, const CreateOptions& o, bool detached) {
  if (p.terminal && detached && o.console_socket.empty())
    throw Error("process.terminal: a detached container's terminal goes to --console-socket, which is not given");
  if (!p.terminal && !o.console_socket.empty())
    throw Error("--console-socket: given, but process.terminal is false (no terminal to send)");
}

// create, with the console fd already decided (-1: no terminal).
std::unique_ptr<Creation> create_container(const Context& g, const CreateOptions& o, Bundle&& b, int console_fd,
                                           const CreateExtras& extras) {
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

int cmd_create(const Context& g, const CreateOptions& o, const CreateExtras& extras) {
  Bundle b = open_bundle(o.bundle);
  enforce_operator_policy(g, b.spec, b.dir, b.host.probe());
  check_console_flags(*b.spec.process, o, true);
  ConsoleChannel console = open_console_channel(b.spec.process->terminal, o.console_socket);
  auto c = create_container(g, o, std::move(b), console.child.get(), extras);
  c->commit();
  return 0;
}

}  // namespace husk::rt
