#include "launch/finish.h"

#include <unistd.h>

#include "launch/console.h"
#include "launch/process.h"
#include "launch/sync.h"

namespace husk::rt {

Prepared finish_process(const FinishRequest& r) {
  const spec::Process& p = *r.proc;
  if (r.console_fd >= 0) {
    setup_console(r.console_fd, p.console_size, r.bind_console);
    ::close(r.console_fd);
  }
  enter_cwd(p.cwd);
  apply_limits(p, r.linux_cfg);
  Prepared out;
  out.proc_ = r.proc;
  out.exe_ = find_executable(p.args[0], p.env);
  out.env_ = process_env(p);
  chown_stdio(p);
  // As runc: while privileged and before any filter (the attr writes are not
  // the container's syscalls to allow); the init's startContainer hooks run under them too.
  if (r.labels) r.labels->apply();
  else lsm::ExecLabels::open(p).apply();
  // Before any filter: a profile without close_range must not break the exec.
  prepare_fds_for_exec(r.preserve_fds);

  // Each process has a filter, and a listener, of its own.
  const bool nnp = p.no_new_privileges;
  if (r.filter && !nnp) hand_listener_to_parent(r.sock, seccomp::load(*r.filter));
  switch_user_and_caps(p, r.in_user_ns);
  apply_no_new_privs(p);
  if (r.filter && nnp && r.filter->notify) hand_listener_to_parent(r.sock, seccomp::load(*r.filter));
  if (r.filter && nnp && !r.filter->notify) out.late_filter_ = r.filter;
  return out;
}

void Prepared::exec() const {
  if (late_filter_) seccomp::load(*late_filter_);
  exec_process(exe_, *proc_, env_);
}

}  // namespace husk::rt
