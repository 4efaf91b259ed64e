#include "runtime/cli.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <set>

#include "runtime/args.h"
#include "runtime/commands.h"
#include "runtime/log.h"
#include "runtime/self_exe.h"
#include "base/error.h"

namespace po = boost::program_options;

namespace husk::rt {
namespace {

constexpr const char* kVersion = "0.1.0";
constexpr const char* kSpecVersion = "1.3.0";

constexpr const char* kUsage = R"(husk: an OCI container runtime

usage: husk [global options] command [command options] [arguments...]

)";

struct Command {
  const char* name;
  const char* args;  // usage line after the name
  const char* what;
};
constexpr Command kCommands[] = {
    {"create", "[--bundle DIR] [--pid-file F] [--console-socket S] [--no-pivot] [--preserve-fds N] ID",
     "create a container from a bundle; it waits for start"},
    {"start", "ID", "run the user process of a created container"},
    {"run", "[create options] [--detach] [--keep] ID", "create and start a container (foreground unless -d)"},
    {"state", "ID", "print the state of a container as JSON"},
    {"exec", "[--process F | ...flags] [--detach] [--pid-file F] [--tty] ID [COMMAND ARGS...]",
     "run a new process inside a running container"},
    {"kill", "[--all] ID [SIGNAL]", "send a signal to the container's init (or all processes)"},
    {"pause", "ID", "freeze every process of a container"},
    {"resume", "ID", "thaw a paused container"},
    {"ps", "[--format table|json] ID [PS ARGS...]", "list the processes of a container"},
    {"update", "[--resources FILE|-] [--memory M] [--pids-limit N] [--cpu-quota Q] ... ID",
     "change the resource limits of a running container"},
    {"events", "[--stats] [--interval 5s] ID", "print stats (and OOM) events of a container as JSON"},
    {"delete", "[--force] ID", "delete a container and everything it made"},
    {"list", "[--format table|json] [--quiet]", "list containers"},
    {"spec", "[--bundle DIR] [--rootless]", "write a default config.json into a bundle"},
    {"features", "", "print the features husk supports as JSON"},
};

const Command* find_command(const std::string& name) {
  for (const auto& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

// `after_command`: the copy accepted after the command name; `spec` has its
// own --rootless flag there.
po::options_description global_options(const std::string& after_command = "") {
  po::options_description d;
  if (after_command != "spec")
    d.add_options()("rootless", po::value<std::string>(), "accepted for runc compatibility");
  d.add_options()
      ("root", po::value<std::string>(), "state directory (default /run/husk, $XDG_RUNTIME_DIR/husk for non-root)")
      ("log", po::value<std::string>(), "append log lines to this file")
      ("log-format", po::value<std::string>()->default_value("text"), "text or json")
      ("debug", po::bool_switch(), "log debug lines")
      ("systemd-cgroup", po::bool_switch(), "cgroupsPath is slice:prefix:name (not supported yet)")
      ("criu", po::value<std::string>(), "accepted for runc compatibility")
      ("version,v", po::bool_switch(), "print the version")
      ("help,h", po::bool_switch(), "print this help");
  return d;
}

// Global options that take a value, to find where the command starts.
const std::set<std::string> kGlobalWithValue = {"--root", "--log", "--log-format", "--rootless", "--criu",
                                                "-root",  "-log",  "-log-format",  "-rootless",  "-criu"};

int style() {
  return (po::command_line_style::unix_style & ~po::command_line_style::allow_guessing) |
         po::command_line_style::allow_long_disguise;
}

std::string default_root() {
  if (::geteuid() == 0) return "/run/husk";
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  return std::string(xdg && *xdg ? xdg : "/tmp") + "/husk";
}

po::options_description command_options(const std::string& cmd) {
  po::options_description d;
  if (cmd == "create" || cmd == "run") {
    d.add_options()
        ("bundle,b", po::value<std::string>()->default_value("."), "bundle directory")
        ("pid-file", po::value<std::string>(), "write the init's pid here")
        ("console-socket", po::value<std::string>(), "unix socket that receives the pty master")
        ("no-pivot", po::bool_switch(), "chroot instead of pivot_root (initramfs hosts)")
        ("no-new-keyring", po::bool_switch(), "keep the caller's session keyring")
        ("preserve-fds", po::value<std::string>(), "pass N fds after stdio to the container")
        ("no-subreaper", po::bool_switch(), "accepted for runc compatibility");
    if (cmd == "run")
      d.add_options()
          ("detach,d", po::bool_switch(), "return after start")
          ("keep", po::bool_switch(), "do not delete the container after it exits");
  } else if (cmd == "exec") {
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
  } else if (cmd == "ps") {
    d.add_options()("format,f", po::value<std::string>()->default_value("table"), "table or json");
  } else if (cmd == "events") {
    d.add_options()
        ("stats", po::bool_switch(), "print one stats event and exit")
        ("interval", po::value<std::string>()->default_value("5s"), "time between stats events");
  } else if (cmd == "update") {
    d.add_options()
        ("resources,r", po::value<std::string>(), "linux.resources JSON file, - for stdin")
        ("memory", po::value<std::string>(), "memory limit (e.g. 64m)")
        ("memory-reservation", po::value<std::string>(), "memory soft limit")
        ("memory-swap", po::value<std::string>(), "memory + swap limit")
        ("kernel-memory", po::value<std::string>(), "kernel memory limit (v1)")
        ("kernel-memory-tcp", po::value<std::string>(), "accepted for runc compatibility")
        ("pids-limit", po::value<std::string>(), "maximum number of processes")
        ("cpu-quota", po::value<std::string>(), "CFS quota in microseconds")
        ("cpu-period", po::value<std::string>(), "CFS period in microseconds")
        ("cpu-share", po::value<std::string>(), "CPU shares (relative weight)")
        ("cpu-rt-period", po::value<std::string>(), "realtime period in microseconds")
        ("cpu-rt-runtime", po::value<std::string>(), "realtime runtime in microseconds")
        ("cpuset-cpus", po::value<std::string>(), "CPUs to use, e.g. 0-1")
        ("cpuset-mems", po::value<std::string>(), "memory nodes to use")
        ("blkio-weight", po::value<std::string>(), "block IO weight (10-1000)")
        ("l3-cache-schema", po::value<std::string>(), "Intel RDT (not supported)")
        ("mem-bw-schema", po::value<std::string>(), "Intel RDT (not supported)");
  } else if (cmd == "kill") {
    d.add_options()("all,a", po::bool_switch(), "signal every process in the container");
  } else if (cmd == "delete") {
    d.add_options()("force,f", po::bool_switch(), "kill a running container first");
  } else if (cmd == "list") {
    d.add_options()
        ("format,f", po::value<std::string>()->default_value("table"), "table or json")
        ("quiet,q", po::bool_switch(), "print only IDs");
  } else if (cmd == "spec") {
    d.add_options()
        ("bundle,b", po::value<std::string>()->default_value("."), "bundle directory")
        ("rootless", po::bool_switch(), "a config for unprivileged users");
  }
  return d;
}

std::string need_id(const std::vector<std::string>& args, const std::string& cmd) {
  if (args.empty()) throw Error("\"" + cmd + "\" requires a container ID");
  return args[0];
}

void check_arg_count(const std::vector<std::string>& args, size_t max, const std::string& cmd) {
  if (args.size() > max)
    throw Error("\"" + cmd + "\" takes at most " + std::to_string(max) + " argument(s), got " +
                std::to_string(args.size()));
}

int dispatch(const std::string& cmd, const po::variables_map& vm, const Global& g, int preserve_fds) {
  std::vector<std::string> args;
  if (vm.count("args")) args = vm["args"].as<std::vector<std::string>>();
  auto flag = [&](const char* n) { return vm.count(n) && vm[n].as<bool>(); };
  auto str = [&](const char* n) { return vm.count(n) ? vm[n].as<std::string>() : std::string(); };

  if (cmd == "create" || cmd == "run") {
    check_arg_count(args, 1, cmd);
    CreateOptions o;
    o.id = need_id(args, cmd);
    o.bundle = str("bundle");
    o.pid_file = str("pid-file");
    o.console_socket = str("console-socket");
    o.no_pivot = flag("no-pivot");
    o.no_new_keyring = flag("no-new-keyring");
    o.preserve_fds = preserve_fds;
    if (cmd == "create") return cmd_create(g, o);
    o.detach = flag("detach");
    o.keep = flag("keep");
    return cmd_run(g, o);
  }
  if (cmd == "exec") {
    ExecOptions o;
    o.id = need_id(args, cmd);
    o.args.assign(args.begin() + 1, args.end());
    o.process_file = str("process");
    o.detach = flag("detach");
    o.pid_file = str("pid-file");
    o.console_socket = str("console-socket");
    o.tty = flag("tty");
    o.cwd = str("cwd");
    if (vm.count("env")) o.env = vm["env"].as<std::vector<std::string>>();
    o.user = str("user");
    if (vm.count("additional-gids"))
      for (const auto& gid : vm["additional-gids"].as<std::vector<std::string>>())
        o.additional_gids.push_back(static_cast<uint32_t>(parse_decimal(gid, kMaxId, "--additional-gids")));
    if (vm.count("cap")) o.caps = vm["cap"].as<std::vector<std::string>>();
    o.no_new_privs = flag("no-new-privs");
    o.preserve_fds = preserve_fds;
    o.ignore_paused = flag("ignore-paused");
    // runc puts the process in a sub-cgroup of the container's; running it in
    // the container's own cgroup instead would silently drop that request.
    if (vm.count("cgroup")) throw Error("--cgroup: exec into a sub-cgroup is not supported by husk");
    o.process_label = str("process-label");
    o.apparmor_profile = str("apparmor");
    return cmd_exec(g, o);
  }
  if (cmd == "pause" || cmd == "resume") {
    check_arg_count(args, 1, cmd);
    std::string id = need_id(args, cmd);
    return cmd == "pause" ? cmd_pause(g, id) : cmd_resume(g, id);
  }
  if (cmd == "ps") {
    std::string id = need_id(args, cmd);
    return cmd_ps(g, id, str("format"), std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (cmd == "events") {
    check_arg_count(args, 1, cmd);
    return cmd_events(g, need_id(args, cmd), flag("stats"), str("interval"));
  }
  if (cmd == "update") {
    check_arg_count(args, 1, cmd);
    UpdateOptions o;
    o.id = need_id(args, cmd);
    o.resources_file = str("resources");
    o.memory = str("memory");
    o.memory_reservation = str("memory-reservation");
    o.memory_swap = str("memory-swap");
    o.kernel_memory = str("kernel-memory");
    o.pids_limit = str("pids-limit");
    o.cpu_quota = str("cpu-quota");
    o.cpu_period = str("cpu-period");
    o.cpu_share = str("cpu-share");
    o.cpu_rt_period = str("cpu-rt-period");
    o.cpu_rt_runtime = str("cpu-rt-runtime");
    o.cpuset_cpus = str("cpuset-cpus");
    o.cpuset_mems = str("cpuset-mems");
    o.blkio_weight = str("blkio-weight");
    if (!str("l3-cache-schema").empty() || !str("mem-bw-schema").empty())
      throw Error("update: Intel RDT is not supported");
    return cmd_update(g, o);
  }
  if (cmd == "start" || cmd == "state") {
    check_arg_count(args, 1, cmd);
    std::string id = need_id(args, cmd);
    return cmd == "start" ? cmd_start(g, id) : cmd_state(g, id);
  }
  if (cmd == "kill") {
    check_arg_count(args, 2, cmd);
    return cmd_kill(g, need_id(args, cmd), args.size() > 1 ? args[1] : "SIGTERM", flag("all"));
  }
  if (cmd == "delete") {
    check_arg_count(args, 1, cmd);
    return cmd_delete(g, need_id(args, cmd), flag("force"));
  }
  if (cmd == "list") {
    check_arg_count(args, 0, cmd);
    return cmd_list(g, str("format"), flag("quiet"));
  }
  if (cmd == "spec") {
    check_arg_count(args, 0, cmd);
    return cmd_spec(str("bundle"), flag("rootless"));
  }
  if (cmd == "features") {
    check_arg_count(args, 0, cmd);
    return cmd_features();
  }
  throw Error("\"" + cmd + "\" is not a husk command");
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
  po::options_description own = command_options(c.name);
  if (!own.options().empty()) std::cout << "\noptions:\n" << own;
  std::cout << "\nThe global options (husk --help) may also follow the command.\n";
}

}  // namespace

int cli_main(int argc, char** argv) {
  // Split argv at the command: global options before it, the command's own after.
  int cmd_at = 1;
  while (cmd_at < argc && argv[cmd_at][0] == '-') {
    std::string a = argv[cmd_at];
    cmd_at += (kGlobalWithValue.count(a) && cmd_at + 1 < argc) ? 2 : 1;
  }
  auto globals = global_options();
  po::variables_map gvm;
  try {
    po::store(po::command_line_parser(cmd_at, argv).options(globals).style(style()).run(), gvm);
  } catch (const po::error& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
  const std::string cmd = cmd_at < argc ? argv[cmd_at] : "";
  if (cmd == "create" || cmd == "run" || cmd == "exec") {
    try {
      ensure_protected_binary(argv);
    } catch (const Error& e) {
      std::cerr << cmd << ": " << e.what() << std::endl;
      return 1;
    }
  }

  po::variables_map vm;
  try {
    po::options_description all;
    all.add(command_options(cmd)).add(global_options(cmd));
    all.add_options()("args", po::value<std::vector<std::string>>(), "positional arguments");
    po::positional_options_description pos;
    pos.add("args", -1);
    std::vector<std::string> rest(argv + std::min(cmd_at + 1, argc), argv + argc);
    std::vector<std::string> command_tail;
    if (cmd == "exec" || cmd == "ps") split_exec_command(rest, all, command_tail);
    po::store(po::command_line_parser(rest).options(all).positional(pos).style(style()).run(), vm);
    if (!command_tail.empty()) {
      auto args = vm.count("args") ? vm["args"].as<std::vector<std::string>>() : std::vector<std::string>{};
      args.insert(args.end(), command_tail.begin(), command_tail.end());
      vm.erase("args");
      vm.insert({"args", po::variable_value(args, false)});
    }
  } catch (const po::error& e) {
    std::cerr << cmd << ": " << e.what() << std::endl;
    return 1;
  }
  // A global option may also follow the command; the later one wins.
  auto global = [&](const char* n) -> const po::variable_value* {
    if (vm.count(n) && !vm[n].defaulted()) return &vm[n];
    if (gvm.count(n)) return &gvm[n];
    return nullptr;
  };
  auto gflag = [&](const char* n) { auto* v = global(n); return v && v->as<bool>(); };
  auto gstr = [&](const char* n) { auto* v = global(n); return v ? v->as<std::string>() : std::string(); };

  if (gflag("version")) {
    std::cout << "husk version " << kVersion << "\nspec: " << kSpecVersion << std::endl;
    return 0;
  }
  if (const Command* c = find_command(cmd); c && vm.count("help") && vm["help"].as<bool>()) {
    print_command_help(*c);
    return 0;
  }
  if (gflag("help") || cmd.empty()) {
    print_help(globals);
    return cmd.empty() && !gflag("help") ? 1 : 0;
  }

  // --preserve-fds hands fds 3..3+N-1 to the container: they must be the
  // caller's. A hole there would be filled by one of ours (the log file, a
  // namespace fd) and leak into the container, so refuse before opening anything.
  int preserve_fds = 0;
  try {
    if (vm.count("preserve-fds")) {
      rlimit nofile{};
      ::getrlimit(RLIMIT_NOFILE, &nofile);
      uint64_t most = nofile.rlim_cur > 3 ? std::min<uint64_t>(nofile.rlim_cur - 3, INT32_MAX) : 0;
      preserve_fds = static_cast<int>(parse_decimal(vm["preserve-fds"].as<std::string>(), most, "--preserve-fds"));
    }
    for (int fd = 3; fd < 3 + preserve_fds; ++fd)
      if (::fcntl(fd, F_GETFD) < 0)
        throw Error("--preserve-fds " + std::to_string(preserve_fds) + ": fd " + std::to_string(fd) + " is not open");
  } catch (const Error& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
  // Every other fd the caller left open is closed now, before husk opens
  // anything: a leaked fd must not reach the container, not even for the
  // time the init waits for start.
  ::syscall(SYS_close_range, 3u + static_cast<unsigned>(preserve_fds), ~0u, 0);

  std::string fmt = gstr("log-format");
  if (fmt != "text" && fmt != "json") {
    std::cerr << "invalid log-format \"" << fmt << "\": must be text or json" << std::endl;
    return 1;
  }
  Global g;
  g.root = global("root") ? gstr("root") : default_root();
  g.systemd_cgroup = gflag("systemd-cgroup");
  // The seccomp cache lives in husk's default root, never in --root: that may
  // be containerd's shim root, which runc lists too. compile() makes only the
  // last level.
  g.seccomp_cache = default_root() + "/.seccomp-cache";
  if (cmd == "create" || cmd == "run" || cmd == "exec") ::mkdir(default_root().c_str(), 0700);
  try {
    log::init(gstr("log"), fmt == "json" ? log::Format::json : log::Format::text, gflag("debug"));
    if (g.root.empty()) throw Error("--root: must not be empty");
    if (g.systemd_cgroup) throw Error("--systemd-cgroup: the systemd cgroup driver is not supported; use cgroupfs");
    return dispatch(cmd, vm, g, preserve_fds);
  } catch (const std::exception& e) {
    log::error(e.what());
    std::cerr << e.what() << std::endl;
    return 1;
  }
}

}  // namespace husk::rt
