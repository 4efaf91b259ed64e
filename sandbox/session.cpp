// `husk sandbox --session NAME`: one sandbox made once (--start), each
// command run in it as `husk exec` runs one in a container (its own
// seccomp, no_new_privs and Landlock, the sandbox's namespaces and cgroup),
// all of it removed by --stop. A session is a directory of the caller's
// own, 0700: its lock (held by the process that keeps the sandbox: taken,
// the session is gone), its state (written once the sandbox runs) and that
// process's messages. Nothing in the sandbox reaches it (the runtime
// directory and /tmp/husk-UID are hidden there), and no command is started
// by the keeping process: a command's husk joins the sandbox itself.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/fd.h"
#include "base/file.h"
#include "base/printable.h"
#include "container/state.h"
#include "sandbox/internal.h"
#include "spec/spec.h"

namespace husk::rt {

using base::Fd;

namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw sys_error("husk sandbox: read");
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string current_dir() {
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) throw sys_error("husk sandbox: getcwd");
  return cwd;
}

// `name` below `at`, made 0700 if missing, opened without following a
// symlink: it must be `uid`'s and closed to everybody else.
Fd own_dir_at(int at, const std::string& name, const std::string& shown, uid_t uid, bool make = true) {
  if (make && ::mkdirat(at, name.c_str(), 0700) != 0 && errno != EEXIST) throw sys_error("husk sandbox: mkdir " + shown);
  Fd dir(::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) {
    if (errno == ENOENT && !make) return dir;
    throw sys_error("husk sandbox: open " + shown + " (a symlink is not followed)");
  }
  struct stat st;
  if (::fstat(dir.get(), &st) != 0) throw sys_error("husk sandbox: fstat " + shown);
  if (st.st_uid != uid || (st.st_mode & 077))
    throw Error("husk sandbox: " + shown + " is not yours alone (owner uid " + std::to_string(st.st_uid) +
                ", mode 0" + std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                std::to_string(st.st_mode & 7) + "): refused");
  return dir;
}

// Where the caller's sessions are: root's under /run; a user's in their
// runtime directory when it is theirs alone, else /tmp/husk-UID (where
// their seccomp cache is too).
std::pair<Fd, std::string> sessions_dir() {
  const uid_t uid = ::geteuid();
  if (uid == 0) return {private_dir("/run/husk-sessions", 0, 0700), "/run/husk-sessions"};
  std::vector<std::string> bases;
  if (const char* xdg = std::getenv("XDG_RUNTIME_DIR"); xdg && xdg[0] == '/') bases.push_back(xdg);
  bases.push_back("/run/user/" + std::to_string(uid));
  for (const auto& b : bases) {
    Fd dir(::open(b.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st;
    if (dir && ::fstat(dir.get(), &st) == 0 && st.st_uid == uid && !(st.st_mode & 077))
      return {own_dir_at(dir.get(), "husk-sessions", b + "/husk-sessions", uid), b + "/husk-sessions"};
  }
  Fd tmp(::open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!tmp) throw sys_error("husk sandbox: open /tmp");
  const std::string mine = "husk-" + std::to_string(uid);
  Fd base = own_dir_at(tmp.get(), mine, "/tmp/" + mine, uid);
  return {own_dir_at(base.get(), "sessions", "/tmp/" + mine + "/sessions", uid), "/tmp/" + mine + "/sessions"};
}

struct SessionDir {
  Fd fd;
  std::string path;
};

SessionDir open_session(const std::string& name, bool make) {
  check_session_name(name);
  auto [base, shown] = sessions_dir();
  SessionDir s{own_dir_at(base.get(), name, shown + "/" + name, ::geteuid(), make), shown + "/" + name};
  if (!s.fd) throw Error("husk sandbox: no session " + name + " (start it with --session " + name + " --start)");
  return s;
}

Fd open_lock(const SessionDir& s) {
  Fd lock(::openat(s.fd.get(), "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock) throw sys_error("husk sandbox: open " + s.path + "/lock");
  return lock;
}

// Whether the session's keeper holds its lock (it runs, or is starting).
bool held(int lock) {
  if (::flock(lock, LOCK_SH | LOCK_NB) == 0) {
    ::flock(lock, LOCK_UN);
    return false;
  }
  if (errno != EWOULDBLOCK) throw sys_error("husk sandbox: flock the session's lock");
  return true;
}

// The state the keeper wrote once the sandbox ran; nullopt before.
std::optional<nlohmann::json> read_state(const SessionDir& s) {
  Fd f(::openat(s.fd.get(), "state", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!f) {
    if (errno == ENOENT) return std::nullopt;
    throw sys_error("husk sandbox: open " + s.path + "/state");
  }
  std::string text = read_all(f.get());
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error("husk sandbox: " + s.path + "/state: not JSON");
  return j;
}

void write_state(const SessionDir& s, const nlohmann::json& j) {
  base::write_file_atomic(s.fd.get(), "state", j.dump() + "\n", 0600, s.path + "/state");
}

// What a command's exec reads of the sandbox's config.json, kept beside the
// state: all of it but the mounts, and its seccomp filter compiled once
// (ExecExtras::container, ::filter): two thirds of the parsing gone. True
// when the filter is kept apart (the config then has no linux.seccomp).
bool write_exec_config(const SessionDir& s, const Context& sg, const std::string& id) {
  Handle h = Handle::open(Store(sg.root), id, false);
  auto j = nlohmann::json::parse(spec::read_json_file_at(h.dir_fd(), "config.json", h.dir() + "/config.json"));
  j.erase("mounts");
  const spec::Spec spec = spec::parse(j.dump());
  bool apart = false;
  if (spec.linux_ && spec.linux_->seccomp) {
    const seccomp::Program prog = seccomp::compile(seccomp::plan(*spec.linux_->seccomp), sg.seccomp_cache);
    // A listener goes to its agent with the config's listenerPath: that filter stays in the config.
    if (!prog.notify) {
      base::write_file_atomic(s.fd.get(), "filter", program_to_bytes(prog), 0600, s.path + "/filter");
      j["linux"].erase("seccomp");
      apart = true;
    }
  }
  base::write_file_atomic(s.fd.get(), "config", j.dump(), 0600, s.path + "/config");
  return apart;
}

// What the keeper said since the last time, said on our stderr.
void say_log(const SessionDir& s) {
  Fd log(::openat(s.fd.get(), "log", O_RDWR | O_NOFOLLOW | O_CLOEXEC));
  if (!log) return;
  std::string text = read_all(log.get());
  // Host names a command asked for are in it: no control byte reaches the terminal.
  for (size_t at = 0, nl; at < text.size(); at = nl + 1) {
    nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    std::cerr << base::printable(text.substr(at, nl - at)) << std::endl;
  }
  if (::ftruncate(log.get(), 0) != 0) throw sys_error("husk sandbox: truncate " + s.path + "/log");
}

// Everything of a session that is over: its messages said, its files gone.
void remove_session(const SessionDir& s, const std::string& name) {
  say_log(s);
  for (const char* f : {"state", "config", "filter", "log", "lock"}) ::unlinkat(s.fd.get(), f, 0);
  auto [base, shown] = sessions_dir();
  ::unlinkat(base.get(), name.c_str(), AT_REMOVEDIR);
}

// The command pid 1 runs, once exec'd in the sandbox's user namespace: a
// command's husk joins its namespaces (pid 1's are root's alone to open).
pid_t waiting_command(pid_t init) {
  const std::string children = "/proc/" + std::to_string(init) + "/task/" + std::to_string(init) + "/children";
  for (int tries = 0; tries < 5000; ++tries) {
    const pid_t child = std::atoi(base::try_read_file(children).value_or("").c_str());
    if (child > 0 && base::try_read_file("/proc/" + std::to_string(child) + "/comm").value_or("") == "sleep\n")
      return child;
    ::usleep(1000);
  }
  throw Error("husk sandbox: the sandbox's waiting command did not start");
}

// The keeper: detached from the caller's session and terminal, its
// messages in the session's log; `ready` carries one error, or "ok".
[[noreturn]] void keep_session(const Context& g, SandboxOptions o, const SessionDir& s, int ready) {
  ::setsid();
  ::signal(SIGPIPE, SIG_IGN);
  Fd null(::open("/dev/null", O_RDWR | O_CLOEXEC));
  // Appended to: --start says and empties what the start said.
  Fd log(::openat(s.fd.get(), "log", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (null && log) {
    ::dup2(null.get(), STDIN_FILENO);
    ::dup2(null.get(), STDOUT_FILENO);
    ::dup2(log.get(), STDERR_FILENO);
  }
  const double timeout = o.timeout;
  // The command that keeps the sandbox alive until --stop's signal, passed on by the pid-1 reaper.
  o.args = {"sleep", "infinity"};
  SessionReady hook;
  hook.ready = [&](const Context& sg, const std::string& id, const landlock::Plan& plan, pid_t init) {
    const bool filter = write_exec_config(s, sg, id);  // before the state: a state says the session is ready
    write_state(s, {{"root", sg.root},
                    {"filter", filter},
                    {"id", id},
                    {"join", waiting_command(init)},
                    {"seccomp_cache", sg.seccomp_cache},
                    {"keeper", ::getpid()},
                    {"timeout", timeout},
                    {"landlock", plan_to_json(plan)}});
    ssize_t ignored = ::write(ready, "ok", 2);  // the caller gone: it will not wait
    (void)ignored;
    ::close(ready);
    ready = -1;
  };
  int status = 1;
  try {
    status = run_sandbox(g, o, &hook);
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (ready < 0 || ::write(ready, what.data(), what.size()) < 0) std::cerr << what << std::endl;
  }
  ::unlinkat(s.fd.get(), "state", 0);
  std::cout.flush();
  std::cerr.flush();
  std::exit(status);
}

int start(const Context& g, const SandboxOptions& o) {
  SessionDir s = open_session(o.session, true);
  Fd lock = open_lock(s);
  if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) throw Error("husk sandbox: session " + o.session + " runs already (--stop it first)");
    throw sys_error("husk sandbox: flock " + s.path + "/lock");
  }
  ::unlinkat(s.fd.get(), "state", 0);  // a keeper killed outright left it
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw sys_error("husk sandbox: pipe");
  Fd rd(p[0]), wr(p[1]);
  std::cout.flush();
  std::cerr.flush();
  pid_t pid = ::fork();
  if (pid < 0) throw sys_error("husk sandbox: fork the session's keeper");
  if (pid == 0) {
    rd.reset();
    keep_session(g, o, s, wr.release());
  }
  wr.reset();
  lock.reset();  // the keeper holds it
  // "ok" once it runs (the guardian and the sandbox hold this pipe too: no
  // end of file then), else why it failed, then end of file.
  char first[2];
  ssize_t n;
  while ((n = ::read(rd.get(), first, sizeof first)) < 0 && errno == EINTR) {}
  std::string said(first, static_cast<size_t>(std::max<ssize_t>(n, 0)));
  if (n > 0 && said != "ok") said += read_all(rd.get());
  if (said == "ok") {
    say_log(s);
    return 0;
  }
  if (said.empty()) said = "husk sandbox: session " + o.session + ": its sandbox ended before it was ready";
  // Not started: nothing of it stays. The pipe's end of file can come
  // before the keeper's exit has closed its lock: reaped, it holds nothing.
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  Fd again = open_lock(s);
  if (::flock(again.get(), LOCK_EX | LOCK_NB) == 0) remove_session(s, o.session);
  throw Error(said);
}

int stop(const SandboxOptions& o) {
  SessionDir s = open_session(o.session, false);
  Fd lock = open_lock(s);
  if (held(lock.get())) {
    std::optional<nlohmann::json> state = read_state(s);
    if (!state) throw Error("husk sandbox: session " + o.session + " is starting; --stop it once --start returned");
    const pid_t keeper = state->value("keeper", 0);
    Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, keeper, 0)));
    // The keeper still holds the lock once its pid is pinned: the pid is its own, not a reused one.
    if (!pidfd || !held(lock.get()) || read_state(s) != state) throw Error("husk sandbox: session " + o.session + " ended meanwhile");
    // The keeper passes it on to the sandbox's pid 1, which ends the keeping command.
    if (::syscall(SYS_pidfd_send_signal, pidfd.get(), SIGTERM, nullptr, 0) != 0)
      throw sys_error("husk sandbox: signal the keeper of session " + o.session);
    // Taken once the keeper and its guardian are gone, the sandbox removed.
    if (::flock(lock.get(), LOCK_EX) != 0) throw sys_error("husk sandbox: wait for session " + o.session + " to end");
  }
  remove_session(s, o.session);
  return 0;
}

int status(const SandboxOptions& o) {
  SessionDir s = open_session(o.session, false);
  Fd lock = open_lock(s);
  const bool running = held(lock.get()) && read_state(s);
  std::cout << o.session << ": " << (running ? "running" : "not running") << std::endl;
  return running ? 0 : 1;
}

// One command in the session's sandbox: exec's pipeline on its container,
// the sandbox's Landlock plan built again, the sandbox's wait (--timeout,
// signals passed on, the terminal put back).
int run_command(const Context& g, const SandboxOptions& o) {
  SessionDir s = open_session(o.session, false);
  std::optional<nlohmann::json> state = read_state(s);
  if (!state || !held(open_lock(s).get())) throw Error("husk sandbox: session " + o.session + " is not running");
  Context sg = g;
  sg.root = state->at("root").get<std::string>();
  sg.seccomp_cache = state->at("seccomp_cache").get<std::string>();
  const landlock::Plan plan = plan_from_json(state->at("landlock"));
  const spec::Spec container = spec::parse(spec::read_json_file_at(s.fd.get(), "config", s.path + "/config"));
  std::optional<seccomp::Program> filter;
  if (state->value("filter", false)) {
    Fd f(::openat(s.fd.get(), "filter", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!f) throw sys_error("husk sandbox: open " + s.path + "/filter");
    filter = program_from_bytes(read_all(f.get()));
  }
  const double timeout = o.timeout > 0 ? o.timeout : state->value("timeout", 0.0);
  ExecOptions eo;
  eo.id = state->at("id").get<std::string>();
  eo.args = o.args;
  eo.cwd = current_dir();
  // Root's session for a user: exec enters the directory before it becomes
  // the user, so the user must be able to enter it (a symlink the command
  // planted could lead root's harness behind a directory closed to it).
  if (::geteuid() == 0 && container.process && container.process->user.uid != 0) {
    const spec::User& user = container.process->user;
    as_user(user.uid, user.gid, [&] {
      if (::chdir(eo.cwd.c_str()) != 0)
        throw sys_error("husk sandbox: the working directory " + eo.cwd + " is not uid " + std::to_string(user.uid) +
                        "'s to enter");
    });
  }
  for (const auto& e : o.env) {
    if (e.find('=') != std::string::npos) {
      eo.env.push_back(e);
    } else if (const char* v = std::getenv(e.c_str())) {
      eo.env.push_back(e + "=" + v);
    }
  }
  TerminalGuard terminal;
  ExecExtras extras;
  extras.landlock = &plan;
  extras.container = &container;
  extras.filter = filter ? &*filter : nullptr;
  extras.ns_pid = state->at("join").get<pid_t>();
  extras.shell_words = true;
  extras.wait = [&](pid_t pid, int sigfd) {
    bool timed_out = false;
    const int st = wait_sandboxed(pid, sigfd, timeout, false, timed_out);
    terminal.restore();
    if (timed_out)
      std::cerr << "husk sandbox: --timeout " << timeout << "s reached: SIGTERM, then SIGKILL " << kKillGrace
                << "s later if needed" << std::endl;
    return st;
  };
  return cmd_exec(sg, eo, extras);
}

// The walls are the session's, set at --start: a flag that would change
// them for one command is refused, not dropped.
void refuse_walls(const SandboxOptions& o) {
  const std::vector<std::pair<bool, const char*>> given = {{!o.rw.empty(), "--rw"},
                                                           {!o.ro.empty(), "--ro"},
                                                           {!o.hide.empty(), "--hide"},
                                                           {o.net != "none", "--net"},
                                                           {!o.allow_hosts.empty(), "--allow-host"},
                                                           {o.allow_host_loopback, "--allow-host-loopback"},
                                                           {o.allow_host_private, "--allow-host-private"},
                                                           {!o.user.empty(), "--user"},
                                                           {o.limited(), "--memory, --pids or --cpus"},
                                                           {o.allow_nested, "--allow-nested"},
                                                           {o.overlaid(), "--overlay or --keep-changes"},
                                                           {o.as_pid_1, "--as-pid-1"},
                                                           {!o.allow_write.empty(), "--allow-write"},
                                                           {!o.deny_hosts.empty(), "--deny-host"},
                                                           {!o.deny_write.empty(), "--deny-write"},
                                                           {o.control_fd >= 0, "--control-fd"},
                                                           {!o.report.empty() || o.report_fd >= 0, "--report"}};
  for (const auto& [on, flag] : given)
    if (on) throw Error(std::string(flag) + ": the walls of session " + o.session + " were set by its --start");
}

}  // namespace

int cmd_session(const Context& g, const SandboxOptions& o) {
  if (int n = o.session_start + o.session_stop + o.session_status; n > 1 || (n == 1 && !o.args.empty()))
    throw Error("--session: one of --start, --stop, --status or a command");
  check_session_name(o.session);  // before any message names it
  if (o.session_start) return start(g, o);
  refuse_walls(o);
  if (o.session_stop) return stop(o);
  if (o.session_status) return status(o);
  if (o.args.empty()) throw Error("--session " + o.session + ": --start, --stop, --status or -- COMMAND");
  return run_command(g, o);
}

}  // namespace husk::rt
