// The last steps of a container process before its execve, the same for the
// init and for an exec'd process, in two phases: finish_process() takes the
// process from set up to unprivileged (the init then waits for `start` and
// runs startContainer hooks), Prepared::exec() ends it.
#pragma once

#include <string>
#include <vector>

#include "launch/lsm.h"
#include "launch/process.h"
#include "seccomp/seccomp.h"
#include "spec/spec.h"

namespace husk::rt {

struct FinishRequest {
  const spec::Process* proc = nullptr;
  const spec::Linux* linux_cfg = nullptr;  // memoryPolicy, personality: the init's; null for exec
  int console_fd = -1;        // connected console socket (closed here); -1: no terminal
  bool bind_console = false;  // the init also binds the pty on /dev/console
  int preserve_fds = 0;
  bool in_user_ns = false;
  int sock = -1;  // sync socket, for the seccomp listener hand-off
  const seccomp::Program* filter = nullptr;  // null: no seccomp
  // The init opens its labels while /proc is still the host's; null: opened
  // here, through the container's /proc (exec).
  lsm::ExecLabels* labels = nullptr;
  // A command that cannot be run fails in exec(), in a shell's words
  // (shell_exec_error), not here: husk sandbox reports it after start.
  bool shell_words = false;
};

class Prepared {
 public:
  // Load the filter when it was left for last (once: a process forked after
  // inherits it), then execve; throws on failure.
  [[noreturn]] void exec();
  void load_late_filter();
  // The command was found (FinishRequest::shell_words: it may not be).
  bool found() const { return !lookup_.path.empty(); }
  // A shell's status when the exec failed (shell_exec_status).
  int shell_status() const { return shell_exec_status(lookup_); }

 private:
  friend Prepared finish_process(const FinishRequest& r);
  const spec::Process* proc_ = nullptr;
  Lookup lookup_;
  bool shell_words_ = false;
  std::vector<std::string> env_;
  const seccomp::Program* late_filter_ = nullptr;
};

// Console, cwd, limits, the executable and env (looked up while privileged),
// stdio owner, LSM labels, fds for exec, then user and capabilities and
// no_new_privs. Seccomp: without no_new_privs loading needs CAP_SYS_ADMIN, so
// before the capabilities go; with it, as late as possible (fewer syscalls
// to allow), in exec(), unless the filter notifies: its listener must reach
// the parent through the sync socket, still connected here.
Prepared finish_process(const FinishRequest& r);

}  // namespace husk::rt
