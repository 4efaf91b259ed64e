// `husk sandbox`: probe the host, build the config (config.cpp), run it as
// `run` would from a private state root, and clean everything up.
#include "sandbox/sandbox.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>
#include <iostream>
#include <memory>
#include <system_error>
#include <thread>

#include "base/error.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/path.h"
#include "base/printable.h"
#include "sandbox/internal.h"
#include "sandbox/no_userns.h"
#include "sandbox/proxy.h"
#include "sandbox/report.h"
#include "sandbox/socks.h"

namespace husk::rt {
namespace {

using base::Fd;

void say_notes(const SandboxConfig& sc) {
  for (const auto& n : sc.notes) std::cerr << "husk sandbox: " << n << std::endl;
}

// --print-config: the sandbox for any runtime, nothing run.
int print_config(const SandboxOptions& o) {
  SandboxConfig sc = sandbox_config(o, probe_sandbox_host(o), "rootfs");
  say_notes(sc);
  std::cout << sc.config.dump(1, '\t') << std::endl;
  return 0;
}

// --keep-changes DIR: made (empty) by the user; held by an fd, so that its
// work directory is removed there even if DIR is renamed or replaced.
struct KeptChanges {
  std::string path;  // "" without --keep-changes
  Fd fd;
};

KeptChanges keep_changes_dir(const SandboxOptions& o, const SandboxHost& host) {
  KeptChanges kept;
  if (o.keep_changes.empty()) return kept;
  const std::string keep = flag_path("--keep-changes", o.keep_changes, host.cwd);
  kept.path = keep;
  // Named by its real path, as --rw and --ro are: a symlink above it (one an
  // earlier sandbox planted in the working directory) would take the
  // layers elsewhere.
  const std::string parent = keep.substr(0, std::max<size_t>(keep.rfind('/'), 1));
  if (std::optional<std::string> real = real_path(parent); !real || *real != parent)
    throw Error("--keep-changes " + o.keep_changes + ": " + parent +
                (real ? " is a symlink (or below one) to " + *real + "; name the real directory"
                      : ": no such directory"));
  as_user(host.uid, host.gid, [&] {
    if (::mkdir(keep.c_str(), 0700) == 0) return;
    // An empty one is made again (ours, 0700); content may be an earlier review.
    bool exists = errno == EEXIST;
    if (exists && ::rmdir(keep.c_str()) != 0) {
      if (errno == ENOTEMPTY || errno == EEXIST)
        throw Error("--keep-changes " + o.keep_changes + ": " + keep +
                    " is not empty (an earlier review?); name a new or empty directory");
      // A symlink too: the layers go where the name says, never elsewhere.
      if (errno == ENOTDIR)
        throw Error("--keep-changes " + o.keep_changes + ": " + keep +
                    " is not a directory (a symlink is not followed); name a new or empty directory");
      throw sys_error("--keep-changes " + o.keep_changes + ": make " + keep + " again (rmdir)");
    }
    if (!exists || ::mkdir(keep.c_str(), 0700) != 0)
      throw sys_error("--keep-changes " + o.keep_changes + ": make " + keep);
  });
  kept.fd = Fd(::open(keep.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!kept.fd) throw sys_error("--keep-changes " + o.keep_changes + ": open " + keep);
  // What was opened is DIR itself, not what a parent swapped for a symlink
  // since the check above leads to.
  if (real_path("/proc/self/fd/" + std::to_string(kept.fd.get())) != keep)
    throw Error("--keep-changes " + o.keep_changes + ": " + keep + " moved while it was made; name it again");
  return kept;
}

// The compiled profile is cached where the user's husk keeps it (no
// XDG_RUNTIME_DIR: /tmp/husk-UID). A cache the sandbox could write would
// hand the next sandbox a filter that allows everything: both places are
// masked in every sandbox (sandbox_config), and compile() ignores a cache
// not owned by the caller or open to others. A /tmp/husk-UID someone else
// made, open to others or a symlink is not used either (compile() refuses
// it too): without a cache the filter is the same, only built again,
// where failing would let any user deny the sandbox to another by
// planting the directory first. "" when there is none.
std::string seccomp_cache() {
  std::string mine = "/tmp/husk-" + std::to_string(::geteuid());
  ::mkdir(mine.c_str(), 0700);
  Fd dir(::open(mine.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (dir && ::fstat(dir.get(), &st) == 0 && st.st_uid == ::geteuid() && !(st.st_mode & 022))
    return mine + "/.seccomp-cache";
  std::cerr << "husk sandbox: " << mine
            << " is not yours alone (another user's, open to others, or a symlink): the seccomp filter is "
               "built without its cache"
            << std::endl;
  return "";
}

// The caller's context with a state root of the sandbox's own.
Context sandbox_context(const Context& g, const Workdir& work, const SandboxHost& host) {
  Context sg = g;
  sg.root = work.state();
  sg.systemd_cgroup |= host.systemd_scope;
  if (sg.seccomp_cache.empty()) sg.seccomp_cache = seccomp_cache();
  return sg;
}

// The second wall, Landlock: what this kernel cannot do of it is said once, with --debug.
void say_landlock(const landlock::Plan& plan) {
  const landlock::Rights r = landlock::rights(plan, landlock::abi());
  for (const auto& l : r.lacking) log::debug("husk sandbox: Landlock ABI " + std::to_string(r.abi) + ": " + l);
  if (!plan.file_system)
    log::debug("husk sandbox: --allow-nested: Landlock has no file rules (they would refuse the nested sandbox's "
               "mounts): the mount view alone hides and keeps read-only");
  for (const auto& h : r.not_hidden)
    log::debug("husk sandbox: Landlock: " + h + " is inside a writable directory: hidden by the mount view alone");
}

// No cgroup is made without limits (root too: none may be visible, as
// inside `ip netns exec`), nor where the probe found none to have.
CreateExtras sandbox_extras(const SandboxOptions& o, const SandboxHost& host) {
  CreateExtras extras;
  extras.quiet_no_cgroup = true;  // said above, as a note on the limits it costs
  extras.reaper = !o.as_pid_1;
  extras.shell_words = true;
  if (!o.limited())
    extras.no_cgroup_reason = "husk sandbox without limits: its pid namespace ends every process with the command";
  else if (!host.cgroup)
    extras.no_cgroup_reason = "husk sandbox: no cgroup of its own here, its limits are rlimits";
  return extras;
}

// The layers are the sandbox user's: its init mounts them without privilege over host files.
void make_layers(const SandboxConfig& sc, const Workdir& work, const KeptChanges& kept, const SandboxHost& host) {
  if (sc.overlay_dirs.empty()) return;
  const bool ours = kept.path.empty();
  const std::string top = ours ? work.overlay() : kept.path;
  Fd dir(ours ? ::openat(work.layers_fd(), "overlay", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1);
  if (ours && !dir) throw sys_error("sandbox: open " + top);
  const int layers = ours ? dir.get() : kept.fd.get();
  as_user(host.uid, host.gid, [&] {
    for (const auto& d : sc.overlay_dirs) make_dirs_at(layers, d.substr(top.size() + 1), top);
  });
}

// --keep-changes keeps the upper layer only: overlayfs's work directory
// next to it goes when the sandbox ends.
struct DropWorkDir {
  int fd;
  uint32_t uid, gid;
  ~DropWorkDir() {
    if (fd >= 0) remove_users_tree(uid, gid, fd, "work");
  }
};

// --keep-changes, once the sandbox is gone: the upper layers nothing was
// written to are removed (rmdir as their user, it removes nothing else),
// the others said with the path each stands for. DIR/upper is opened
// without following a symlink: a --rw above DIR lets the command swap it.
void report_kept_changes(const KeptChanges& kept, const SandboxConfig& sc, const SandboxHost& host) {
  if (kept.path.empty()) return;
  const std::string top = kept.path + "/upper/";
  auto open_upper = [&] {
    return Fd(::openat(kept.fd.get(), "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  };
  as_user(host.uid, host.gid, [&] {
    if (Fd upper = open_upper())
      for (const auto& u : sc.uppers) ::unlinkat(upper.get(), u.first.substr(top.size()).c_str(), AT_REMOVEDIR);
    ::unlinkat(kept.fd.get(), "upper", AT_REMOVEDIR);
  });
  Fd upper = open_upper();
  struct stat st;
  if (!upper && ::fstatat(kept.fd.get(), "upper", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    std::cerr << "husk sandbox: --keep-changes: " << base::printable(kept.path)
              << "/upper is no directory any more (the command replaced it)" << std::endl;
    return;
  }
  bool any = false;
  for (const auto& [path, shown] : sc.uppers) {
    if (!upper || ::fstatat(upper.get(), path.substr(top.size()).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    std::cerr << "husk sandbox: changes kept in " << base::printable(path) << " (for " << base::printable(shown) << ")"
              << std::endl;
    any = true;
  }
  if (!any)
    std::cerr << "husk sandbox: --keep-changes: nothing was changed, " << base::printable(kept.path) << " is empty"
              << std::endl;
}

// The mount that stands in for a missing name: the first at its place
// (a missing name has no other mount there).
nlohmann::ordered_json::iterator stand_in(nlohmann::ordered_json& mounts, const std::string& path) {
  return std::find_if(mounts.begin(), mounts.end(), [&](const auto& m) { return m["destination"] == path; });
}

// After the placeholders were made: the mounts over those that could not
// be (where the user may not make a name, the command may not either) are
// dropped; those that are there by now (another sandbox's placeholder of
// another kind, or past the walk's bound) are bound read-only on
// themselves, as the walk would have had them.
void adjust_stand_ins(SandboxConfig& sc, const std::vector<std::string>& refused,
                      const std::vector<MissingName>& found) {
  auto& mounts = sc.config["mounts"];
  for (const auto& r : refused)
    if (auto it = stand_in(mounts, r); it != mounts.end()) mounts.erase(it);
  for (const auto& f : found)
    if (auto it = stand_in(mounts, f.path); it != mounts.end()) *it = bind_mount(f.path, f.path, false, f.file);
}

constexpr const char* kSandboxId = "sandbox-";  // and husk's pid: the container's id, the report's "sandbox"

// What runs beside the command and reports on it: the proxy, --control-fd's
// reader, the cgroup's counts of limits reached.
struct Live {
  Report report;
  std::unique_ptr<Proxy> proxy;
  std::unique_ptr<Control> control;
  LimitWatch limits;
};

// --allow-host: the proxy listens in the sandbox's network namespace once
// its init is there (with --control-fd, from an empty list); the control
// fd is read from then on.
std::function<void(pid_t)> start_proxy(const SandboxOptions& o, Live& live) {
  std::vector<AllowedHost> allowed;
  for (const auto& a : o.allow_hosts) allowed.push_back(parse_allowed_host(a));
  for (const auto& d : o.deny_hosts) {
    allowed.push_back(parse_allowed_host(d));
    allowed.back().denied = true;
  }
  return [&live, allowed, local_ok = o.allow_host_loopback, private_ok = o.allow_host_private,
          control = o.control_fd](pid_t init) {
    RefusalHook hook;
    if (live.report) hook = [&report = live.report](const ProxyRefusal& r) { report.refused(r); };
    std::vector<base::Fd> listeners = listen_in_sandbox(init, {kProxyPort, socks::kPort});
    live.proxy = std::make_unique<Proxy>(std::move(listeners[0]), std::move(listeners[1]), allowed, local_ok,
                                         private_ok, hook);
    if (control >= 0) live.control = std::make_unique<Control>(control, *live.proxy, live.report);
  };
}

// The command's status once it is gone, the terminal put back, then what
// the proxy refused, said.
int wait_command(pid_t pid, int sigfd, const SandboxOptions& o, TerminalGuard& terminal, Live& live,
                 ScratchHome& scratch, const std::function<void(pid_t)>& ready, int emptied,
                 const std::function<void(bool pid_1_exiting)>& gone) {
  scratch.open(pid);
  bool timed_out = false;
  if (ready) ready(pid);
  // A session's --timeout is each command's (session.cpp), not its own.
  bool went = false;
  int status = wait_sandboxed(pid, sigfd, ready ? 0 : o.timeout, o.as_pid_1, timed_out, emptied, [&] {
    gone(true);
    went = true;
  });
  if (!went) gone(false);
  // pid 1 is gone, and with it every process of the sandbox: the terminal is ours again.
  terminal.restore();
  live.control.reset();
  if (std::string lost = scratch.discarded(); !lost.empty()) std::cerr << lost << std::endl;
  live.limits.say(live.report);
  if (timed_out) {
    std::cerr << "husk sandbox: --timeout " << o.timeout << "s reached: SIGTERM, then SIGKILL " << kKillGrace
              << "s later if needed" << std::endl;
    live.report.emit("limit", report::timeout(o.timeout));
  }
  std::unique_ptr<Proxy>& proxy = live.proxy;
  if (proxy) {
    std::vector<std::string> denied = proxy->denied(), unresolved = proxy->unresolved();
    proxy.reset();
    auto say = [](const char* what, const std::vector<std::string>& items) {
      std::string list;
      // Host names the command asked for: no control byte of theirs reaches the terminal.
      for (const auto& d : items) list += (list.empty() ? "" : ", ") + base::printable(d);
      if (!list.empty()) std::cerr << "husk sandbox: --allow-host " << what << ": " << list << std::endl;
    };
    say("refused", denied);
    say("could not resolve", unresolved);
  }
  return status;
}

// "start": what the sandbox decided; `sc` null without a user namespace
// (`reason`), where the limits are rlimits.
void report_start(const Report& report, const SandboxOptions& o, const SandboxHost& host, const SandboxConfig* sc,
                  const std::string& reason) {
  if (!report) return;
  report::Start st;
  st.command = o.args;
  st.cwd = host.cwd;
  st.uid = host.uid;
  st.gid = host.gid;
  st.user_namespace = sc != nullptr;
  st.net = o.net;
  st.allowed_hosts = o.allow_hosts;
  st.control = o.control_fd >= 0;
  st.limits = !o.limited() ? "none" : !sc || !host.cgroup ? "rlimit" : host.systemd_scope ? "systemd-scope" : "cgroup";
  st.pids = o.pids;
  st.memory = o.memory;
  st.cpus = o.cpus;
  st.timeout = o.timeout;
  st.landlock_abi = landlock::abi();
  if (sc) {
    st.hidden = sc->hidden;
    st.protected_paths = sc->guarded;
    for (const auto& m : sc->placeholders) st.protected_paths.push_back(m.path);
    st.writable = sc->writable;
    st.notes = sc->notes;
  } else {
    st.notes = {"no user namespace here: " + reason + "; the walls are Landlock, seccomp and rlimits (said on stderr)"};
  }
  report.emit("start", report::start(st));
}

int sandbox(const Context& g, const SandboxOptions& o, SandboxHost& host, Live& live, const SessionReady* session) {
  // A core dump of husk would land in the (writable) working directory with
  // the caller's environment in it.
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  Workdir work(host.uid, host.gid, o.overlay && o.keep_changes.empty());
  if (std::string reason = userns_restricted_up_front(); !reason.empty()) {
    if (session) throw Error("husk sandbox: --session needs user namespaces, refused here (" + reason + ")");
    report_start(live.report, o, host, nullptr, reason);
    return run_without_userns(sandbox_context(g, work, host), o, host, work, reason, false, &live.report);
  }
  KeptChanges kept = keep_changes_dir(o, host);
  Context sg = sandbox_context(g, work, host);
  CreateExtras extras = sandbox_extras(o, host);
  CreateOptions co;
  co.id = kSandboxId + std::to_string(::getpid());
  co.bundle = work.dir();
  // Forked before the config is built: fewer of our pages are shared with
  // it, so fewer copy-on-write faults while we go on.
  Guardian guardian(sg, co.id, work, kept.fd.get());
  SandboxConfig sc =
      sandbox_config(o, host, work.rootfs(), kept.path.empty() ? work.overlay() : kept.path, work.empty_file());
  say_notes(sc);
  report_start(live.report, o, host, &sc, "");
  make_layers(sc, work, kept, host);
  DropWorkDir drop_work{kept.fd.get(), host.uid, host.gid};
  say_landlock(sc.landlock);
  // Each command of a session builds the same walls again (ExecExtras).
  std::function<void(pid_t)> ready;
  if (session) ready = [session, &sg, &co, plan = sc.landlock](pid_t init) { session->ready(sg, co.id, plan, init); };
  extras.landlock = std::move(sc.landlock);
  Placeholders placeholders(host.uid, host.gid);
  placeholders.hold(sc.guarded);
  std::vector<MissingName> found;
  const std::vector<std::string> refused =
      placeholders.make(sc.placeholders, [&](const Placeholders::One& one) { guardian.placeholder(one); }, found);
  adjust_stand_ins(sc, refused, found);
  NewFiles made(host.uid, host.gid);
  made.watch(sc.watched, [&](const NewFiles::One& one) { guardian.watch(one); });
  ScratchHome scratch(sc.config, host.home);
  root_of_its_own(sc.config);  // last: nothing above reads it as one of the view's mounts

  if (o.proxied()) extras.on_init_open = start_proxy(o, live);
  // Saved before the command starts: it may change the settings at once.
  TerminalGuard terminal;
  const bool watch = live.report && o.limited() && host.cgroup;
  extras.on_created = [&, watch](pid_t init) {
    scratch.open(init);
    if (watch) live.limits.open(init, o);
  };
  // Removed while the rest of the exit goes on (freeing a directory can
  // wait for the disk): pid 1 is gone, and with it every process that saw
  // them. Joined on the way out, before ~Placeholders (which removes them
  // when the command never ran).
  std::jthread removing;
  // Said by pid 1 once nothing else runs in the sandbox (InitRequest::
  // emptied_fd): the placeholders go while its namespaces are torn down.
  // Not in a session, whose later commands join from outside its tree.
  base::Fd emptied, emptied_write;
  if (extras.reaper && !session) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) == 0) {
      // Above stdio, even when husk was started with one of it closed.
      emptied = base::Fd(::fcntl(p[0], F_DUPFD_CLOEXEC, 3));
      emptied_write = base::Fd(::fcntl(p[1], F_DUPFD_CLOEXEC, 3));
      ::close(p[0]);
      ::close(p[1]);
      if (emptied && emptied_write) extras.reaper_emptied_fd = emptied_write.get();
    }
  }
  extras.wait = [&](pid_t pid, int sigfd) {
    emptied_write.reset();  // pid 1 has its own
    return wait_command(pid, sigfd, o, terminal, live, scratch, ready, emptied.get(), [&](bool pid_1_exiting) {
      // Said by pid 1 before its exit: we would only wait for that meanwhile.
      if (pid_1_exiting) {
        placeholders.remove();
        return;
      }
      try {
        removing = std::jthread([&] { placeholders.remove(); });
      } catch (const std::system_error&) {  // no thread to be had: here and now
        placeholders.remove();
      }
    });
  };
  extras.on_late_error = [](const std::string& error) {
    std::cerr << "husk sandbox: " << base::printable(error) << std::endl;
  };
  timespec started{};
  ::clock_gettime(CLOCK_REALTIME, &started);
  int status;
  try {
    status = run_own_config(sg, co, std::move(sc.config), extras);
  } catch (const Error& e) {
    const std::string reason = userns_refused(e);
    if (reason.empty() || session) throw;
    report_start(live.report, o, host, nullptr, reason);
    return run_without_userns(sg, o, host, work, reason, true, &live.report);
  }
  made.move_aside();
  // The placeholders, made before `started`, are not taken for new ones.
  say_new_repositories(host.uid, host.gid, sc.writable, started);
  report_kept_changes(kept, sc, host);
  return status;
}

}  // namespace

// --report FILE where the command may write (the working directory, --rw):
// hidden from it, as --hide would, else it could add events of its own.
SandboxOptions hide_report(const SandboxOptions& o, const SandboxHost& host) {
  SandboxOptions out = o;
  if (o.report.empty()) return out;
  const std::string path = flag_path("--report", o.report, host.cwd);
  bool writable = base::is_within(path, host.cwd);
  for (const auto& d : o.rw)
    writable |= base::is_within(path, host.real(flag_path("--rw", d, host.cwd)).value_or("/nonexistent/"));
  if (writable) out.hide.push_back(path);
  return out;
}

int cmd_sandbox(const Context& g, const SandboxOptions& o) {
  if (o.print_config) return print_config(o);
  if (!o.session.empty()) return cmd_session(g, o);
  return run_sandbox(g, o, nullptr);
}

int run_sandbox(const Context& g, const SandboxOptions& given, const SessionReady* session) {
  SandboxHost host = probe_sandbox_host(given);
  timespec began{};
  ::clock_gettime(CLOCK_MONOTONIC, &began);
  if (given.control_fd >= 0) claim_fd("--control-fd", given.control_fd, false);
  Live live;
  live.report = Report(given, host, kSandboxId + std::to_string(::getpid()));
  const SandboxOptions o = hide_report(given, host);
  try {
    const int status = sandbox(g, o, host, live, session);
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    live.report.emit("exit", report::exit(status, static_cast<double>(now.tv_sec - began.tv_sec) +
                                                      static_cast<double>(now.tv_nsec - began.tv_nsec) / 1e9));
    return status;
  } catch (const Error& e) {
    // The harness learns why nothing ran (or why the run broke off).
    live.report.emit("error", {{"message", e.what()}});
    throw;
  }
}

}  // namespace husk::rt
