#include "launch/finish.h"

#include <unistd.h>

#include "base/error.h"
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
  out.shell_words_ = r.shell_words;
  if (r.shell_words) out.lookup_ = lookup_executable(p.args[0], p.env);
  else out.lookup_.path = find_executable(p.args[0], p.env);
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

void Prepared::load_late_filter() {
  if (late_filter_) seccomp::load(*late_filter_);
  late_filter_ = nullptr;
}

void Prepared::exec() {
  const std::string& arg0 = proc_->args[0];
  // Only with shell_words: finish_process threw otherwise.
  if (!found()) throw Error(shell_exec_error(arg0, lookup_, false, 0), lookup_.err);
  load_late_filter();
  try {
    exec_process(lookup_.path, *proc_, env_);
  } catch (const Error& e) {
    if (!shell_words_) throw;
    throw Error(shell_exec_error(arg0, lookup_, true, e.err()), e.err());
  }
}

}  // namespace husk::rt
