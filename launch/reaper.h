// A small pid 1 in front of the command (husk sandbox): the container's init
// forks the command and stays as the reaper of every orphan, the command's
// signals' relay and the carrier of its status. Without it the command is pid
// 1, whose signals without a handler the kernel drops (`kill -TERM $$` does
// nothing) and whose orphans stay zombies.
#pragma once

#include <signal.h>
#include <sys/types.h>

namespace husk::rt {

// What pid 1 exits with for the command's wait status: its exit status, or
// 128 + the signal that killed it, as a shell reports it.
int reaper_exit_status(int wait_status);

// Whether a signal pid 1 received goes on to the command: one sent from
// outside the pid namespace (husk, whose pid it cannot see: si_pid 0) or
// by the kernel. One a process of the sandbox sent pid 1 is dropped, as the
// kernel drops it for a pid 1 without handlers: `kill 0` from the command
// would otherwise reach it twice.
bool relays(const siginfo_t& si);

// Forks the command's process, which returns 0 to go on to its exec with the
// caller's signal mask. The caller (pid 1) never returns: it closes every fd
// it has (it holds none of the command's open), then reaps until the command
// is gone and exits with reaper_exit_status. It never execs: it stays husk,
// not dumpable since the init's start, so the command can neither ptrace
// it nor open its /proc/1/exe or memory; under the same seccomp filter and
// no_new_privs as the command. `emptied_fd` (-1: none) stays open in pid 1:
// see InitRequest::emptied_fd.
pid_t fork_behind_reaper(int emptied_fd = -1);

}  // namespace husk::rt
