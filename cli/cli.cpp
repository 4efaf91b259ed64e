#include "cli/cli.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>

#include "base/error.h"
#include "cli/print.h"
#include "container/args.h"
#include "container/commands.h"
#include "container/rootless.h"
#include "base/log.h"
#include "launch/self_exe.h"
#include "sandbox/sandbox.h"

namespace po = boost::program_options;

namespace husk::rt {
namespace {

constexpr const char* kVersion = "0.1.0";
constexpr const char* kSpecVersion = "1.3.0";

constexpr const char* kUsage = R"(husk: an OCI container runtime

usage: husk [global options] command [command options] [arguments...]

)";

// What a command's handler gets: its flags, its positional arguments (the
// table has checked their number; args[0] is the ID of a command that takes
// one) and the global settings.
struct Invocation {
  const po::variables_map& vm;
  std::vector<std::string> args;
  const Context& g;
  int preserve_fds;

  bool flag(const char* n) const { return vm.count(n) && vm[n].as<bool>(); }
  std::string str(const char* n) const { return vm.count(n) ? vm[n].as<std::string>() : std::string(); }
  std::vector<std::string> strs(const char* n) const {
    return vm.count(n) ? vm[n].as<std::vector<std::string>>() : std::vector<std::string>{};
  }
  const std::string& id() const { return args[0]; }
  std::vector<std::string> after_id() const { return {args.begin() + 1, args.end()}; }
};

// max_args for `exec ID CMD...` and `ps ID [PS ARGS...]`: after the ID comes a
// command line whose flags are its own, not husk's.
constexpr size_t kCommandLine = SIZE_MAX;

struct Command {
  const char* name;
  const char* args;  // usage line after the name
  const char* what;
  void (*options)(po::options_description&);  // its own flags; nullptr: none
  int (*run)(const Invocation&);
  size_t max_args;  // positional arguments; the first is the container ID when > 0
  bool launches;    // starts container processes from husk's binary (see self_exe.h)
  const char* first_arg = "a container ID";  // what the first positional argument is
};

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
      ("hide", po::value<std::vector<std::string>>()->composing(), "hide a file or directory (repeatable)")
      ("env", po::value<std::vector<std::string>>()->composing(), "K=V, or K to pass husk's own value (repeatable)")
      ("net", po::value<std::string>()->default_value("none"), "none (loopback only) or host")
      ("allow-host", po::value<std::vector<std::string>>()->composing(), "NAME[:PORT] reachable through husk's proxy (HTTP_PROXY) (repeatable)")
      ("allow-host-loopback", po::bool_switch(), "allowed names may resolve to the host's own addresses: loopback, its interfaces' (a local mirror)")
      ("allow-host-private", po::bool_switch(), "allowed names may resolve to private networks' addresses (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7)")
      ("user", po::value<std::string>(), "UID[:GID] the command runs as (root only; default: sudo's user)")
      ("memory", po::value<std::string>(), "memory limit, e.g. 512m")
      ("pids", po::value<std::string>(), "at most this many processes")
      ("cpus", po::value<std::string>(), "CPU time, in CPUs (e.g. 0.5)")
      ("timeout", po::value<std::string>(), "seconds; then SIGTERM, SIGKILL 2 s later, exit 124")
      ("allow-nested", po::bool_switch(), "allow user namespaces and mounts (a sandbox inside)")
      ("overlay", po::bool_switch(), "the host's directories and the working directory writable, changes discarded")
      ("keep-changes", po::value<std::string>(), "--overlay, the changes kept in DIR/upper")
      ("print-config", po::bool_switch(), "print the OCI config instead of running it");
}

int run_sandbox(const Invocation& in) {
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
  return cmd_sandbox(in.g, o);
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
  RunResult r = run(in.g, o);
  return print_late_error(r.late_error, r.status);
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
const Command kCommands[] = {
    {"create", "[--bundle DIR] [--pid-file F] [--console-socket S] [--no-pivot] [--preserve-fds N] ID",
     "create a container from a bundle; it waits for start", create_flags,
     [](In in) { return cmd_create(in.g, create_request(in)); }, 1, true},
    {"start", "ID", "run the user process of a created container", nullptr,
     [](In in) { return print_late_error(start(in.g, in.id()), 0); }, 1, false},
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
    {"delete", "[--force] ID", "delete a container and everything it made", delete_flags,
     [](In in) { return cmd_delete(in.g, in.id(), in.flag("force")); }, 1, false},
    {"list", "[--format table|json] [--quiet]", "list containers", list_flags,
     [](In in) { return print_list(list_containers(in.g), in.str("format"), in.flag("quiet")); }, 0, false},
    {"spec", "[--bundle DIR] [--rootless] [--permissive]", "write a default config.json into a bundle", spec_flags,
     [](In in) { return cmd_spec(in.str("bundle"), {in.flag("rootless"), in.flag("permissive")}); }, 0, false},
    {"sandbox", "[--rw DIR] [--ro DIR] [--hide P] [--overlay] [--allow-host H] [--pids N] [--timeout S] ... -- CMD...",
     "run a command from the host in a disposable sandbox, as you", sandbox_flags, run_sandbox, kCommandLine, true,
     "a command"},
    {"check", "[--policy baseline|restricted|FILE.yaml] BUNDLE",
     "check a bundle's config.json against a policy; exit 1 when it is broken", check_flags,
     [](In in) { return print_check(in.args[0], check_bundle(in.g, in.args[0], in.str("policy"))); }, 1, false,
     "a bundle directory"},
    {"features", "", "print the features husk supports as JSON", nullptr,
     [](In) { return print_features(runtime_features()); }, 0,
     false},
};

const Command* find_command(const std::string& name) {
  for (const auto& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

po::options_description own_options(const Command* c) {
  po::options_description d;
  if (c && c->options) c->options(d);
  return d;
}

po::options_description global_options() {
  po::options_description d;
  d.add_options()
      ("rootless", po::value<std::string>(), "true, false or auto (default): without root privileges")
      ("root", po::value<std::string>(), "state directory (default /run/husk, $XDG_RUNTIME_DIR/husk for non-root)")
      ("log", po::value<std::string>(), "append log lines to this file")
      ("log-format", po::value<std::string>()->default_value("text"), "text or json")
      ("debug", po::bool_switch(), "log debug lines")
      ("systemd-cgroup", po::bool_switch(), "cgroups through systemd: cgroupsPath is slice:prefix:name")
      ("criu", po::value<std::string>(), "accepted for runc compatibility")
      ("version,v", po::bool_switch(), "print the version")
      ("help,h", po::bool_switch(), "print this help");
  return d;
}

// Context options that take a value, to find where the command starts.
const std::set<std::string> kGlobalWithValue = {"--root", "--log", "--log-format", "--rootless", "--criu",
                                                "-root",  "-log",  "-log-format",  "-rootless",  "-criu"};

int style() {
  return (po::command_line_style::unix_style & ~po::command_line_style::allow_guessing) |
         po::command_line_style::allow_long_disguise;
}

// The table's rule for positional arguments: at most max_args, the first of
// them the container ID.
void check_args(const Command& c, const std::vector<std::string>& args) {
  const std::string cmd = c.name;
  if (args.size() > c.max_args)
    throw Error("\"" + cmd + "\" takes at most " + std::to_string(c.max_args) + " argument(s), got " +
                std::to_string(args.size()));
  if (c.max_args > 0 && args.empty()) throw Error("\"" + cmd + "\" requires " + c.first_arg);
}

// `exec ID sh -c x`, `ps ID -ef`: flags after the ID belong to the command. Cut the
// argument list after the first positional (the ID); the rest is the command.
void split_exec_command(std::vector<std::string>& args, const po::options_description& opts,
                        std::vector<std::string>& tail) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {  // everything after is positional: the ID, then the command
      std::vector<std::string> after(args.begin() + static_cast<long>(i) + 1, args.end());
      args.resize(i);
      if (!after.empty()) {
        args.push_back(after[0]);
        tail.assign(after.begin() + 1, after.end());
      }
      return;
    }
    if (a.size() > 1 && a[0] == '-') {
      if (a.find('=') != std::string::npos) continue;
      // "--cwd", "-cwd" (long in disguise) or "-c" (short, looked up with its dash)
      bool is_short = a.size() == 2;
      std::string key = is_short ? a : a.substr(a.find_first_not_of('-'));
      const po::option_description* d = opts.find_nothrow(key, false);
      if (d && d->semantic()->max_tokens() > 0) ++i;  // skip its value
      continue;
    }
    tail.assign(args.begin() + static_cast<long>(i) + 1, args.end());
    args.resize(i + 1);
    return;
  }
}

void print_help(const po::options_description& globals) {
  std::cout << kUsage << "commands:\n";
  for (const auto& c : kCommands) std::printf("  %-9s %s\n", c.name, c.what);
  std::cout << "\nglobal options:\n" << globals << "\ncommand usage (husk COMMAND --help for its options):\n";
  for (const auto& c : kCommands) std::cout << "  husk " << c.name << " " << c.args << "\n";
}

// `husk COMMAND --help`: that command's usage and flags only, as runc's.
void print_command_help(const Command& c) {
  std::cout << "usage: husk " << c.name << (*c.args ? " " : "") << c.args << "\n\n" << c.what << "\n";
  po::options_description own = own_options(&c);
  if (!own.options().empty()) std::cout << "\noptions:\n" << own;
  std::cout << "\nThe global options (husk --help) may also follow the command.\n";
}

// argv[1 .. index) are global flags, argv[index] is the command.
int command_index(int argc, char** argv) {
  int at = 1;
  while (at < argc && argv[at][0] == '-') at += (kGlobalWithValue.count(argv[at]) && at + 1 < argc) ? 2 : 1;
  return at;
}

// Usage errors are printed, not logged: no log is open before run_command.
std::optional<po::variables_map> parse_globals(int cmd_at, char** argv, const po::options_description& globals) {
  po::variables_map gvm;
  try {
    po::store(po::command_line_parser(cmd_at, argv).options(globals).style(style()).run(), gvm);
  } catch (const po::error& e) {
    std::cerr << e.what() << std::endl;
    return std::nullopt;
  }
  return gvm;
}

bool protect_binary(const std::string& cmd, char** argv) {
  try {
    ensure_protected_binary(argv, default_state_root());
    return true;
  } catch (const Error& e) {
    std::cerr << cmd << ": " << e.what() << std::endl;
    return false;
  }
}

// What follows the command: its own flags, the global ones again (those it
// does not define itself, e.g. spec's --rootless) and its positional arguments.
struct CommandLine {
  po::variables_map vm;
  std::vector<std::string> args;
};

std::optional<CommandLine> parse_command(const Command* c, const std::string& cmd, std::vector<std::string> rest) {
  CommandLine line;
  // An unknown command's flags are not judged: the error names the command
  // (run_command), not a flag it might have had.
  if (!c && !cmd.empty()) return line;
  try {
    po::options_description all = own_options(c);
    const po::options_description globals = global_options();
    for (const auto& o : globals.options())
      if (!all.find_nothrow(o->long_name(), false)) all.add(o);
    all.add_options()("args", po::value<std::vector<std::string>>(), "positional arguments");
    po::positional_options_description pos;
    pos.add("args", -1);
    std::vector<std::string> command_tail;
    if (c && c->max_args == kCommandLine) split_exec_command(rest, all, command_tail);
    po::store(po::command_line_parser(rest).options(all).positional(pos).style(style()).run(), line.vm);
    if (line.vm.count("args")) line.args = line.vm["args"].as<std::vector<std::string>>();
    line.args.insert(line.args.end(), command_tail.begin(), command_tail.end());
  } catch (const po::error& e) {
    std::cerr << cmd << ": " << e.what() << std::endl;
    return std::nullopt;
  }
  return line;
}

// A global option may also follow the command; the later one wins.
struct Settings {
  const po::variables_map& before;
  const po::variables_map& after;

  const po::variable_value* get(const char* n) const {
    if (after.count(n) && !after[n].defaulted()) return &after[n];
    if (before.count(n)) return &before[n];
    return nullptr;
  }
  bool flag(const char* n) const { auto* v = get(n); return v && v->as<bool>(); }
  std::string str(const char* n) const { auto* v = get(n); return v ? v->as<std::string>() : std::string(); }
};

// --version and --help answer without running anything; nullopt: go on.
std::optional<int> answer_help(const Settings& s, const Command* c, const std::string& cmd,
                               const po::options_description& globals) {
  if (s.flag("version")) {
    std::cout << "husk version " << kVersion << "\nspec: " << kSpecVersion << std::endl;
    return 0;
  }
  if (c && s.after.count("help") && s.after["help"].as<bool>()) {
    print_command_help(*c);
    return 0;
  }
  // An unknown command's --help is no answer: it fails naming the command.
  if ((s.flag("help") && (c || cmd.empty())) || cmd.empty()) {
    print_help(globals);
    return cmd.empty() && !s.flag("help") ? 1 : 0;
  }
  return std::nullopt;
}

// --preserve-fds hands fds 3..3+N-1 to the container: they must be the
// caller's. A hole there would be filled by one of ours (the log file, a
// namespace fd) and leak into the container, so refuse before opening anything.
int preserved_fds(const po::variables_map& vm) {
  int n = 0;
  if (vm.count("preserve-fds")) {
    rlimit nofile{};
    ::getrlimit(RLIMIT_NOFILE, &nofile);
    uint64_t most = nofile.rlim_cur > 3 ? std::min<uint64_t>(nofile.rlim_cur - 3, INT32_MAX) : 0;
    n = static_cast<int>(parse_decimal(vm["preserve-fds"].as<std::string>(), most, "--preserve-fds"));
  }
  for (int fd = 3; fd < 3 + n; ++fd)
    if (::fcntl(fd, F_GETFD) < 0)
      throw Error("--preserve-fds " + std::to_string(n) + ": fd " + std::to_string(fd) + " is not open");
  return n;
}

// False after printing why the global flags are unusable.
bool global_settings(const Settings& s, const Command* c, Context& g) {
  const std::string fmt = s.str("log-format");
  if (fmt != "text" && fmt != "json") {
    std::cerr << "invalid log-format \"" << fmt << "\": must be text or json" << std::endl;
    return false;
  }
  const std::string own_root = default_state_root();
  g.root = s.get("root") ? s.str("root") : own_root;
  g.systemd_cgroup = s.flag("systemd-cgroup");
  try {
    // spec's own --rootless is a switch: then only a global one before it is the mode.
    const po::variable_value* mode = s.get("rootless");
    if (mode && mode->value().type() != typeid(std::string))
      mode = s.before.count("rootless") ? &s.before["rootless"] : nullptr;
    g.rootless = detect_rootless(parse_rootless_flag(mode ? mode->as<std::string>() : ""));
  } catch (const Error& e) {
    std::cerr << e.what() << std::endl;
    return false;
  }
  // The seccomp cache lives in husk's default root, never in --root: that may
  // be containerd's shim root, which runc lists too. compile() makes only the
  // last level. No default root (no XDG_RUNTIME_DIR): no cache.
  if (own_root.empty()) return true;
  g.seccomp_cache = own_root + "/.seccomp-cache";
  if (c && c->launches) ::mkdir(own_root.c_str(), 0700);
  return true;
}

// Opens the log, checks the arguments against the table and runs the
// handler; from here on an error is logged too.
int run_command(const Command* c, const std::string& cmd, const CommandLine& line, const Settings& s,
                const Context& g, int preserve_fds) {
  try {
    const bool json = s.str("log-format") == "json";
    log::init(s.str("log"), json ? log::Format::json : log::Format::text, s.flag("debug"));
    if (s.get("root") && g.root.empty()) throw Error("--root: must not be empty");
#if defined(HUSK_SYSTEMD) && !HUSK_SYSTEMD
    if (g.systemd_cgroup) throw Error("--systemd-cgroup: this husk was built without the systemd driver (HUSK_SYSTEMD=OFF)");
#endif
    if (!c && (cmd == "checkpoint" || cmd == "restore"))  // ctr and podman ask for them
      throw Error(cmd + ": not supported by husk (it has no CRIU support yet)");
    if (!c) throw Error(quote(cmd) + " is not a husk command");
    check_args(*c, line.args);
    return c->run(Invocation{line.vm, line.args, g, preserve_fds});
  } catch (const std::exception& e) {
    log::error(e.what());
    std::cerr << e.what() << std::endl;
    return 1;
  }
}

}  // namespace

int cli_main(int argc, char** argv) {
  const int cmd_at = command_index(argc, argv);
  const po::options_description globals = global_options();
  std::optional<po::variables_map> before = parse_globals(cmd_at, argv, globals);
  if (!before) return 1;
  const std::string cmd = cmd_at < argc ? argv[cmd_at] : "";
  const Command* c = find_command(cmd);
  if (c && c->launches && !protect_binary(cmd, argv)) return 1;
  std::optional<CommandLine> line = parse_command(c, cmd, {argv + std::min(cmd_at + 1, argc), argv + argc});
  if (!line) return 1;
  const Settings settings{*before, line->vm};
  if (std::optional<int> answered = answer_help(settings, c, cmd, globals)) return *answered;

  int preserve_fds = 0;
  try {
    preserve_fds = preserved_fds(line->vm);
  } catch (const Error& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
  // Every other fd the caller left open is closed now, before husk opens
  // anything: a leaked fd must not reach the container, not even for the
  // time the init waits for start.
  ::syscall(SYS_close_range, 3u + static_cast<unsigned>(preserve_fds), ~0u, 0);

  Context g;
  if (!global_settings(settings, c, g)) return 1;
  const std::string called_as = argc > 0 ? argv[0] : "husk";
  g.binary_name = called_as.substr(called_as.rfind('/') + 1);
  return run_command(c, cmd, *line, settings, g, preserve_fds);
}

}  // namespace husk::rt
