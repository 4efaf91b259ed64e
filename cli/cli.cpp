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
#include <vector>

#include "base/error.h"
#include "base/log.h"
#include "cli/command_table.h"
#include "cli/version.h"
#include "container/args.h"
#include "container/commands.h"
#include "container/rootless.h"
#include "launch/self_exe.h"


namespace husk::rt {
namespace {

constexpr const char* kUsage = R"(husk: an OCI container runtime

usage: husk [global options] command [command options] [arguments...]

)";


po::options_description own_options(const Command* c) {
  po::options_description d;
  if (c && c->options) c->options(d);
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
// `sandbox --session NAME --start` (--stop, --status) runs no command.
void check_args(const Command& c, const std::vector<std::string>& args, const po::variables_map& vm) {
  const std::string cmd = c.name;
  if (args.size() > c.max_args)
    throw Error("\"" + cmd + "\" takes at most " + std::to_string(c.max_args) + " argument(s), got " +
                std::to_string(args.size()));
  auto on = [&](const char* f) { return vm.count(f) && vm[f].as<bool>(); };
  const bool session_verb = cmd == "sandbox" && vm.count("session") && (on("start") || on("stop") || on("status"));
  if (c.max_args > 0 && args.empty() && !session_verb) throw Error("\"" + cmd + "\" requires " + c.first_arg);
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
  for (const auto& c : commands()) std::printf("  %-9s %s\n", c.name, c.what);
  std::cout << "\nglobal options:\n" << globals << "\ncommand usage (husk COMMAND --help for its options):\n";
  for (const auto& c : commands()) std::cout << "  husk " << c.name << " " << c.args << "\n";
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
    std::cout << version_text() << std::endl;
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

// The fds `husk sandbox --report-fd N --control-fd N` names: the caller's,
// kept past the close below, close-on-exec at once (the sandbox checks them, claim_fd).
std::vector<unsigned> named_fds(const po::variables_map& vm) {
  std::vector<unsigned> out;
  for (const char* flag : {"report-fd", "control-fd", "status-fd"}) {
    if (!vm.count(flag)) continue;
    const std::string at = std::string("--") + flag;
    const auto fd = static_cast<unsigned>(parse_decimal(vm[flag].as<std::string>(), INT32_MAX, at));
    ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
    out.push_back(fd);
  }
  std::sort(out.begin(), out.end());
  return out;
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
    if (!c) throw Error("unknown command " + quote(cmd) + " (husk --help lists the commands)");
    check_args(*c, line.args, line.vm);
    return c->run(Invocation{line.vm, line.args, g, preserve_fds});
  } catch (const std::exception& e) {
    log::error(e.what());
    std::cerr << e.what() << std::endl;
    return 1;
  }
}

}  // namespace

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
  std::vector<unsigned> named;
  try {
    preserve_fds = preserved_fds(line->vm);
    named = named_fds(line->vm);
  } catch (const Error& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
  // Every other fd the caller left open is closed now, before husk opens
  // anything: a leaked fd must not reach the container, not even for the
  // time the init waits for start.
  unsigned from = 3u + static_cast<unsigned>(preserve_fds);
  for (unsigned keep : named) {
    if (keep > from) ::syscall(SYS_close_range, from, keep - 1, 0);
    from = std::max(from, keep + 1);
  }
  ::syscall(SYS_close_range, from, ~0u, 0);

  Context g;
  if (!global_settings(settings, c, g)) return 1;
  const std::string called_as = argc > 0 ? argv[0] : "husk";
  g.binary_name = called_as.substr(called_as.rfind('/') + 1);
  return run_command(c, cmd, *line, settings, g, preserve_fds);
}

}  // namespace husk::rt
