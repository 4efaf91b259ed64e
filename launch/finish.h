// The last steps of a container process before its execve, the same for the
// init and for an exec'd process, in two phases: finish_process() takes the
// process from set up to unprivileged (the init then waits for `start` and
// runs startContainer hooks), Prepared::exec() ends it.
#pragma once

#include <string>
#include <vector>

#include "launch/lsm.h"
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
};

class Prepared {
 public:
  // Load the filter when it was left for last, then execve; throws on failure.
  [[noreturn]] void exec() const;

 private:
  friend Prepared finish_process(const FinishRequest& r);
  const spec::Process* proc_ = nullptr;
  std::string exe_;
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
