#include "launch/reaper.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"

namespace husk::rt {
namespace {

[[noreturn]] void reap_until(pid_t command) {
  sigset_t all;
  sigfillset(&all);
  for (;;) {
    siginfo_t si;
    if (::sigwaitinfo(&all, &si) < 0) continue;  // EINTR: a stop and SIGCONT
    if (si.si_signo != SIGCHLD) {
      if (relays(si)) ::kill(command, si.si_signo);
      continue;
    }
    // One SIGCHLD may stand for several children.
    int status;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0)
      if (pid == command) _exit(reaper_exit_status(status));
  }
}

}  // namespace

int reaper_exit_status(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

bool relays(const siginfo_t& si) { return si.si_pid == 0; }

pid_t fork_behind_reaper() {
  // Blocked from before the fork: a signal pid 1 has no handler for is queued
  // (the kernel drops only unblocked ones) and none is lost meanwhile.
  sigset_t all, before;
  sigfillset(&all);
  if (::sigprocmask(SIG_SETMASK, &all, &before) != 0) throw sys_error("block signals in pid 1");
  // fork(2), not clone3: filters (Docker's default, husk's) refuse clone3 with ENOSYS.
  pid_t pid = ::fork();
  if (pid < 0) throw sys_error("fork the command behind pid 1");
  if (pid == 0) {
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    return 0;
  }
  ::syscall(SYS_close_range, 0u, ~0u, 0);
  reap_until(pid);
}

}  // namespace husk::rt
