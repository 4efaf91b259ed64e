#include "cli/command_table.h"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdint>
#include <iostream>

#include "base/error.h"
#include "cli/print.h"
#include "cli/sandbox_settings.h"
#include "container/args.h"
#include "container/checkpoint.h"
#include "container/commands.h"
#include "launch/self_exe.h"
#include "sandbox/connect.h"
#include "sandbox/sandbox.h"

namespace husk::rt {

namespace {

void create_flags(po::options_description& d) {
  d.add_options()
      ("bundle,b", po::value<std::string>()->default_value("."), "bundle directory")
      ("pid-file", po::value<std::string>(), "write the init's pid here")
      ("console-socket", po::value<std::string>(), "unix socket that receives the pty master")
      ("no-pivot", po::bool_switch(), "chroot instead of pivot_root (initramfs hosts)")
      ("no-new-keyring", po::bool_switch(), "keep the caller's session keyring")
      ("preserve-fds", po::value<std::string>(), "pass N fds after stdio to the container")
      ("no-subreaper", po::bool_switch(), "accepted for runc compatibility");
}

void run_flags(po::options_description& d) {
  create_flags(d);
  d.add_options()
      ("detach,d", po::bool_switch(), "return after start")
      ("keep", po::bool_switch(), "do not delete the container after it exits");
}

void exec_flags(po::options_description& d) {
  d.add_options()
      ("process,p", po::value<std::string>(), "process.json to run instead of the command")
      ("detach,d", po::bool_switch(), "return once the process runs")
      ("pid-file", po::value<std::string>(), "write the process's pid here")
      ("console-socket", po::value<std::string>(), "unix socket that receives the pty master")
      ("tty,t", po::bool_switch(), "allocate a pty")
      ("cwd", po::value<std::string>(), "working directory inside the container")
      ("env,e", po::value<std::vector<std::string>>(), "KEY=value (repeatable)")
      ("user,u", po::value<std::string>(), "uid[:gid]")
      ("additional-gids,g", po::value<std::vector<std::string>>(), "extra group (repeatable)")
      ("cap,c", po::value<std::vector<std::string>>(), "add a capability (repeatable)")
      ("no-new-privs", po::bool_switch(), "set no_new_privs")
      ("preserve-fds", po::value<std::string>(), "pass N fds after stdio")
      ("ignore-paused", po::bool_switch(), "exec even if the container is paused")
      ("process-label", po::value<std::string>(), "SELinux label of the process")
      ("apparmor", po::value<std::string>(), "AppArmor profile of the process")
      ("cgroup", po::value<std::vector<std::string>>(), "run in a sub-cgroup (not supported: refused)");
}

void format_flag(po::options_description& d) {
  d.add_options()("format,f", po::value<std::string>()->default_value("table"), "table or json");
}

void list_flags(po::options_description& d) {
  format_flag(d);
  d.add_options()("quiet,q", po::bool_switch(), "print only IDs");
}

void events_flags(po::options_description& d) {
  d.add_options()
      ("stats", po::bool_switch(), "print one stats event and exit")
      ("interval", po::value<std::string>()->default_value("5s"), "time between stats events");
}

// runc's update flags, each a string field of UpdateOptions ("" = not
// given); a null field is accepted and ignored (kernel-memory-tcp) or refused
// by run_update (Intel RDT).
struct UpdateFlag {
  const char* name;
  std::string UpdateOptions::*field;
  const char* what;
};
const UpdateFlag kUpdateFlags[] = {
    {"resources,r", &UpdateOptions::resources_file, "linux.resources JSON file, - for stdin"},
    {"memory", &UpdateOptions::memory, "memory limit (e.g. 64m)"},
    {"memory-reservation", &UpdateOptions::memory_reservation, "memory soft limit"},
    {"memory-swap", &UpdateOptions::memory_swap, "memory + swap limit"},
    {"kernel-memory", &UpdateOptions::kernel_memory, "kernel memory limit (v1)"},
    {"kernel-memory-tcp", nullptr, "accepted for runc compatibility"},
    {"pids-limit", &UpdateOptions::pids_limit, "maximum number of processes"},
    {"cpu-quota", &UpdateOptions::cpu_quota, "CFS quota in microseconds"},
    {"cpu-period", &UpdateOptions::cpu_period, "CFS period in microseconds"},
    {"cpu-share", &UpdateOptions::cpu_share, "CPU shares (relative weight)"},
    {"cpu-rt-period", &UpdateOptions::cpu_rt_period, "realtime period in microseconds"},
    {"cpu-rt-runtime", &UpdateOptions::cpu_rt_runtime, "realtime runtime in microseconds"},
    {"cpuset-cpus", &UpdateOptions::cpuset_cpus, "CPUs to use, e.g. 0-1"},
    {"cpuset-mems", &UpdateOptions::cpuset_mems, "memory nodes to use"},
    {"blkio-weight", &UpdateOptions::blkio_weight, "block IO weight (10-1000)"},
    {"l3-cache-schema", nullptr, "Intel RDT (not supported)"},
    {"mem-bw-schema", nullptr, "Intel RDT (not supported)"},
};

void update_flags(po::options_description& d) {
  for (const auto& f : kUpdateFlags) d.add_options()(f.name, po::value<std::string>(), f.what);
}

void kill_flags(po::options_description& d) {
  d.add_options()("all,a", po::bool_switch(), "signal every process in the container");
}

void delete_flags(po::options_description& d) {
  d.add_options()("force,f", po::bool_switch(), "kill a running container first");
}

void check_flags(po::options_description& d) {
  d.add_options()("policy", po::value<std::string>(),
                  "baseline, restricted or a YAML policy file (default: the operator's, else baseline)");
}

void sandbox_flags(po::options_description& d) {
  d.add_options()
      ("rw", po::value<std::vector<std::string>>()->composing(), "a directory the command may write (repeatable); the working directory always")
      ("ro", po::value<std::vector<std::string>>()->composing(), "show a hidden directory read-only (repeatable)")
      ("hide", po::value<std::vector<std::string>>()->composing(), "hide a file or directory, or a pattern's matches: one with *, ? or [ is a pattern unless a path so named exists (** any levels, **/.env, *.pem, dir/**); its walk of the shown trees stops the start past 16 levels or 20,000 names: narrow the pattern or the tree (repeatable)")
      ("env", po::value<std::vector<std::string>>()->composing(), "K=V, or K to pass husk's own value (repeatable)")
      ("net", po::value<std::string>()->default_value("none"), "none (loopback only) or host")
      ("allow-host", po::value<std::vector<std::string>>()->composing(), "NAME[:PORT] reachable through husk's proxy (HTTP_PROXY) (repeatable)")
      ("allow-host-loopback", po::bool_switch(), "allowed names may resolve to the host's own addresses: loopback, its interfaces' (a local mirror)")
      ("allow-host-private", po::bool_switch(), "allowed names may resolve to private networks' addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)")
      ("user", po::value<std::string>(), "UID[:GID] the command runs as (root only; default: sudo's user); settled before any file is read for that user, whose default settings file is never read")
      ("memory", po::value<std::string>(), "memory limit, e.g. 512m")
      ("pids", po::value<std::string>(), "at most this many processes")
      ("cpus", po::value<std::string>(), "CPU time, in CPUs (e.g. 0.5)")
      ("timeout", po::value<std::string>(), "seconds; then SIGTERM, SIGKILL 2 s later, exit 124")
      ("allow-nested", po::bool_switch(), "allow user namespaces and mounts, for husk, bwrap or another sandbox inside; it also unmasks /proc and /sys and drops Landlock's file rules (the kernel refuses mounts under them): the mounts alone, locked inside, hide credentials and keep the host read-only. Not for root")
      ("overlay", po::bool_switch(), "the host's directories and the working directory writable, changes discarded")
      ("keep-changes", po::value<std::string>(), "--overlay, the changes kept in DIR/upper")
      ("print-config", po::bool_switch(), "print the OCI config instead of running it")
      ("as-pid-1", po::bool_switch(), "the command is pid 1 itself: no init in front that reaps orphans and passes signals on")
      ("allow-write", po::value<std::vector<std::string>>()->composing(), "a protected persistence file (.git/hooks, .bashrc, ...) writable after all (repeatable)")
      ("report", po::value<std::string>(), "FILE: what the sandbox decided, refused and hit, as JSON lines (made as you, truncated)")
      ("report-fd", po::value<std::string>(), "N: the report on this open fd of the caller's")
      ("control-fd", po::value<std::string>(), "N: read {\"allow-host\": \"NAME[:PORT]\"} lines while it runs (the proxy runs)");
  // The settings files (cli/sandbox_settings.cpp) and the deny lists srt's have.
  d.add_options()
      ("deny-host", po::value<std::vector<std::string>>()->composing(), "NAME[:PORT] the proxy refuses even where --allow-host allows it (repeatable)")
      ("deny-write", po::value<std::vector<std::string>>()->composing(), "a path inside a writable directory made read-only, or a pattern's matches, as --hide has them (repeatable)")
      ("settings", po::value<std::vector<std::string>>()->composing(), "a settings file: YAML or JSON, husk's keys (the flags' names; a path's leading ~ is the home of the user the command runs as) or srt's (repeatable; the later wins)")
      ("project-settings", po::value<std::vector<std::string>>()->composing(), "a settings file the project wrote: it may only narrow (repeatable)")
      ("print-settings", po::bool_switch(), "print the settings in force and where each came from, then exit")
      ("no-user-settings", po::bool_switch(), "skip the default settings file ($XDG_CONFIG_HOME/husk/sandbox.yaml or .json, else ~/.config/husk/; as root, root's own from passwd: never the user's or $HOME's)");
  // Session mode (sandbox/session.cpp): no keys of a settings file either.
  d.add_options()
      ("session", po::value<std::string>(), "NAME: one sandbox for many commands: --start it (with the flags above), run -- CMD in it, --stop it")
      ("start", po::bool_switch(), "--session: make the sandbox and return once it runs")
      ("stop", po::bool_switch(), "--session: end it and remove everything it made")
      ("status", po::bool_switch(), "--session: say whether it runs (exit 0) or not (1)");
}

int run_sandbox(const Invocation& given) {
  po::variables_map vm = given.vm;
  po::options_description d;
  sandbox_flags(d);
  // A session's command runs behind the walls its --start set: the
  // settings' walls would be refused beside it.
  const bool session_command = vm.count("session") && !(vm.count("start") && vm["start"].as<bool>());
  if (!session_command && apply_sandbox_settings(vm, d)) return 0;
  const Invocation in{vm, given.args, given.g, given.preserve_fds};
  SandboxOptions o;
  o.args = in.args;
  o.rw = in.strs("rw");
  o.ro = in.strs("ro");
  o.hide = in.strs("hide");
  o.env = in.strs("env");
  o.net = in.str("net");
  o.allow_hosts = in.strs("allow-host");
  o.allow_host_loopback = in.flag("allow-host-loopback");
  o.allow_host_private = in.flag("allow-host-private");
  o.user = in.str("user");
  o.memory = in.str("memory");
  o.cpus = in.str("cpus");
  if (in.vm.count("pids")) o.pids = parse_decimal(in.str("pids"), 1u << 22, "--pids");
  if (in.vm.count("timeout")) {
    const std::string t = in.str("timeout");
    char* end = nullptr;
    o.timeout = std::strtod(t.c_str(), &end);
    if (t.empty() || *end || !(o.timeout > 0) || o.timeout > 1e7)
      throw Error("--timeout " + t + ": must be a positive number of seconds");
  }
  o.allow_nested = in.flag("allow-nested");
  o.print_config = in.flag("print-config");
  o.overlay = in.flag("overlay");
  o.keep_changes = in.str("keep-changes");
  o.as_pid_1 = in.flag("as-pid-1");
  o.allow_write = in.strs("allow-write");
  o.deny_hosts = in.strs("deny-host");
  o.deny_write = in.strs("deny-write");
  o.session = in.str("session");
  o.session_start = in.flag("start");
  o.session_stop = in.flag("stop");
  o.session_status = in.flag("status");
  if (o.session.empty() && (o.session_start || o.session_stop || o.session_status))
    throw Error("--start, --stop and --status need --session NAME");
  o.report = in.str("report");
  if (in.vm.count("report-fd"))
    o.report_fd = static_cast<int>(parse_decimal(in.str("report-fd"), 1 << 30, "--report-fd"));
  if (in.vm.count("control-fd"))
    o.control_fd = static_cast<int>(parse_decimal(in.str("control-fd"), 1 << 30, "--control-fd"));
  return cmd_sandbox(in.g, o);
}

// The CRIU flags checkpoint and restore share (runc's).
void criu_flags(po::options_description& d) {
  d.add_options()
      ("image-path", po::value<std::string>(), "the image directory (default ./checkpoint)")
      ("work-path", po::value<std::string>(), "where CRIU writes its log (default: the image directory)")
      ("tcp-established", po::bool_switch(), "take established TCP connections along")
      ("ext-unix-sk", po::bool_switch(), "allow external unix sockets")
      ("shell-job", po::bool_switch(), "allow a terminal or session from outside (a shell job)")
      ("file-locks", po::bool_switch(), "take file locks along")
      ("manage-cgroups-mode", po::value<std::string>(), "soft, full, strict or ignore: what CRIU does with cgroups")
      ("empty-ns", po::value<std::vector<std::string>>()->composing(), "network: make the namespace but leave it empty (repeatable)")
      ("auto-dedup", po::bool_switch(), "free the image pages a later dump or restore no longer needs")
      ("lazy-pages", po::bool_switch(), "leave memory pages to be fetched when touched (userfaultfd)");
}

void checkpoint_flags(po::options_description& d) {
  criu_flags(d);
  d.add_options()
      ("parent-path", po::value<std::string>(), "the previous (pre-)dump, relative to the image directory")
      ("leave-running", po::bool_switch(), "leave the container running after the dump")
      ("pre-dump", po::bool_switch(), "dump the memory only, for a later dump with --parent-path (keeps running)")
      ("page-server", po::value<std::string>(), "ADDRESS:PORT of a CRIU page server that takes the pages")
      ("status-fd", po::value<std::string>(), "N: CRIU writes a byte here once the lazy pages can be served");
}

void restore_flags(po::options_description& d) {
  criu_flags(d);
  d.add_options()
      ("bundle,b", po::value<std::string>()->default_value("."), "bundle directory")
      ("detach,d", po::bool_switch(), "return once the container runs")
      ("pid-file", po::value<std::string>(), "write the restored init's pid here")
      ("console-socket", po::value<std::string>(), "unix socket that receives the pty master")
      ("no-subreaper", po::bool_switch(), "accepted for runc compatibility (the restored init is husk's own child)")
      ("no-pivot", po::bool_switch(), "accepted for runc compatibility (CRIU enters the root itself)")
      ("lsm-profile", po::value<std::string>(), "TYPE:NAME, the LSM profile of the restored processes")
      ("lsm-mount-context", po::value<std::string>(), "the SELinux context of the restored mounts");
}

ckpt::CriuFlags criu_request(const Invocation& in) {
  ckpt::CriuFlags f;
  f.tcp_established = in.flag("tcp-established");
  f.ext_unix_sk = in.flag("ext-unix-sk");
  f.shell_job = in.flag("shell-job");
  f.file_locks = in.flag("file-locks");
  f.auto_dedup = in.flag("auto-dedup");
  f.lazy_pages = in.flag("lazy-pages");
  f.manage_cgroups_mode = in.str("manage-cgroups-mode");
  f.empty_ns = in.strs("empty-ns");
  return f;
}

int run_checkpoint(const Invocation& in) {
  ckpt::CheckpointFlags f;
  f.criu = criu_request(in);
  f.image_path = in.str("image-path");
  f.work_path = in.str("work-path");
  f.parent_path = in.str("parent-path");
  f.leave_running = in.flag("leave-running");
  f.pre_dump = in.flag("pre-dump");
  f.page_server = in.str("page-server");
  if (in.vm.count("status-fd"))
    f.status_fd = static_cast<int>(parse_decimal(in.str("status-fd"), INT32_MAX, "--status-fd"));
  return cmd_checkpoint(in.g, in.id(), f);
}

int run_restore(const Invocation& in) {
  ckpt::RestoreFlags f;
  f.criu = criu_request(in);
  f.image_path = in.str("image-path");
  f.work_path = in.str("work-path");
  f.bundle = in.str("bundle");
  f.detach = in.flag("detach");
  f.pid_file = in.str("pid-file");
  f.console_socket = in.str("console-socket");
  f.no_subreaper = in.flag("no-subreaper");
  f.no_pivot = in.flag("no-pivot");
  f.lsm_profile = in.str("lsm-profile");
  f.lsm_mount_context = in.str("lsm-mount-context");
  return cmd_restore(in.g, in.id(), f);
}

void spec_flags(po::options_description& d) {
  d.add_options()
      ("bundle,b", po::value<std::string>()->default_value("."), "bundle directory")
      ("rootless", po::bool_switch(), "a config for unprivileged users")
      ("permissive", po::bool_switch(), "runc's template as it is: no seccomp profile");
}

CreateOptions create_request(const Invocation& in) {
  CreateOptions o;
  o.id = in.id();
  o.bundle = in.str("bundle");
  o.pid_file = in.str("pid-file");
  o.console_socket = in.str("console-socket");
  o.no_pivot = in.flag("no-pivot");
  o.no_new_keyring = in.flag("no-new-keyring");
  o.preserve_fds = in.preserve_fds;
  return o;
}

int run_run(const Invocation& in) {
  CreateOptions o = create_request(in);
  o.detach = in.flag("detach");
  o.keep = in.flag("keep");
  CreateExtras extras;
  extras.on_late_error = print_late_error;
  return run(in.g, o, extras);
}

int run_exec(const Invocation& in) {
  ExecOptions o;
  o.id = in.id();
  o.args = in.after_id();
  o.process_file = in.str("process");
  o.detach = in.flag("detach");
  o.pid_file = in.str("pid-file");
  o.console_socket = in.str("console-socket");
  o.tty = in.flag("tty");
  o.cwd = in.str("cwd");
  o.env = in.strs("env");
  o.user = in.str("user");
  for (const auto& gid : in.strs("additional-gids"))
    o.additional_gids.push_back(static_cast<uint32_t>(parse_decimal(gid, kMaxId, "--additional-gids")));
  o.caps = in.strs("cap");
  o.no_new_privs = in.flag("no-new-privs");
  o.preserve_fds = in.preserve_fds;
  o.ignore_paused = in.flag("ignore-paused");
  // runc puts the process in a sub-cgroup of the container's; running it in
  // the container's own cgroup instead would silently drop that request.
  if (in.vm.count("cgroup")) throw Error("--cgroup: exec into a sub-cgroup is not supported by husk");
  o.process_label = in.str("process-label");
  o.apparmor_profile = in.str("apparmor");
  return cmd_exec(in.g, o);
}

int run_update(const Invocation& in) {
  UpdateOptions o;
  o.id = in.id();
  for (const auto& f : kUpdateFlags) {
    if (!f.field) continue;
    std::string name = f.name;
    o.*f.field = in.str(name.substr(0, name.find(',')).c_str());
  }
  if (!in.str("l3-cache-schema").empty() || !in.str("mem-bw-schema").empty())
    throw Error("update: Intel RDT is not supported");
  return cmd_update(in.g, o);
}

using In = const Invocation&;
const std::vector<Command> kCommands = {
    {"create", "[--bundle DIR] [--pid-file F] [--console-socket S] [--no-pivot] [--preserve-fds N] ID",
     "create a container from a bundle; it waits for start", create_flags,
     [](In in) { return cmd_create(in.g, create_request(in)); }, 1, true},
    {"start", "ID", "run the user process of a created container", nullptr,
     [](In in) {
       print_late_error(start(in.g, in.id()));
       return 0;
     },
     1, false},
    {"run", "[create options] [--detach] [--keep] ID", "create and start a container (foreground unless -d)",
     run_flags, run_run, 1, true},
    {"state", "ID", "print the state of a container as JSON", nullptr,
     [](In in) { return print_state(container_state(in.g, in.id())); }, 1, false},
    {"exec", "[--process F | ...flags] [--detach] [--pid-file F] [--tty] ID [COMMAND ARGS...]",
     "run a new process inside a running container", exec_flags, run_exec, kCommandLine, true},
    {"kill", "[--all] ID [SIGNAL]", "send a signal to the container's init (or all processes)", kill_flags,
     [](In in) { return cmd_kill(in.g, in.id(), in.args.size() > 1 ? in.args[1] : "SIGTERM", in.flag("all")); },
     2, false},
    {"pause", "ID", "freeze every process of a container", nullptr,
     [](In in) { return cmd_pause(in.g, in.id()); }, 1, false},
    {"resume", "ID", "thaw a paused container", nullptr,
     [](In in) { return cmd_resume(in.g, in.id()); }, 1, false},
    {"ps", "[--format table|json] ID [PS ARGS...]", "list the processes of a container", format_flag,
     [](In in) { return print_ps(container_pids(in.g, in.id()), in.str("format"), in.after_id()); },
     kCommandLine, false},
    {"update", "[--resources FILE|-] [--memory M] [--pids-limit N] [--cpu-quota Q] ... ID",
     "change the resource limits of a running container", update_flags, run_update, 1, false},
    {"events", "[--stats] [--interval 5s] ID", "print stats (and OOM) events of a container as JSON",
     events_flags,
     [](In in) {
       watch_events(in.g, in.id(), in.flag("stats"), in.str("interval"), print_event);
       return 0;
     },
     1, false},
    {"checkpoint", "[--image-path DIR] [--leave-running] [--pre-dump] [--parent-path DIR] ... ID",
     "dump a running container to disk through CRIU (it is gone afterwards unless --leave-running)",
     checkpoint_flags, run_checkpoint, 1, false},
    {"restore", "[--image-path DIR] [--bundle DIR] [--detach] [--pid-file F] [--console-socket S] ... ID",
     "make a running container from a checkpoint image through CRIU", restore_flags, run_restore, 1, false},
    {"delete", "[--force] ID", "delete a container and everything it made", delete_flags,
     [](In in) { return cmd_delete(in.g, in.id(), in.flag("force")); }, 1, false},
    {"list", "[--format table|json] [--quiet]", "list containers", list_flags,
     [](In in) { return print_list(list_containers(in.g), in.str("format"), in.flag("quiet")); }, 0, false},
    {"spec", "[--bundle DIR] [--rootless] [--permissive]", "write a default config.json into a bundle", spec_flags,
     [](In in) { return cmd_spec(in.str("bundle"), {in.flag("rootless"), in.flag("permissive")}); }, 0, false},
    {"sandbox", "[--rw DIR] [--ro DIR] [--hide P] [--overlay] [--allow-host H] [--pids N] [--timeout S] ... -- CMD...",
     "run a command from the host in a disposable sandbox, as you", sandbox_flags, run_sandbox, kCommandLine, true,
     "a command"},
    {"connect", "HOST PORT",
     "inside a husk sandbox: HOST:PORT through its proxy, on stdin/stdout (ssh's ProxyCommand)", nullptr,
     [](In in) {
       if (in.args.size() != 2) throw Error("\"connect\" requires a host and a port (husk connect HOST PORT)");
       return cmd_connect(in.args[0], in.args[1]);
     },
     2, false, "a host and a port"},
    {"check", "[--policy baseline|restricted|FILE.yaml] BUNDLE",
     "check a bundle's config.json against a policy; exit 1 when it is broken", check_flags,
     [](In in) { return print_check(in.args[0], check_bundle(in.g, in.args[0], in.str("policy"))); }, 1, false,
     "a bundle directory"},
    {"features", "", "print the features husk supports as JSON", nullptr,
     [](In) { return print_features(runtime_features()); }, 0,
     false},
};

}  // namespace

const std::vector<Command>& commands() { return kCommands; }

const Command* find_command(const std::string& name) {
  for (const auto& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

}  // namespace husk::rt
