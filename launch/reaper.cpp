#include "launch/reaper.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"

namespace husk::rt {
namespace {

// Nothing but pid 1 in its pid namespace: no child left (its zombies
// reaped; __WALL: also those with another exit signal), and no process at
// all that kill(-1) reaches (one that joined from outside with setns is no
// child of ours; one we may not signal, or one behind Landlock's signal
// scope, answers EPERM: not alone either).
bool alone_in_namespace() {
  int status;
  pid_t r;
  while ((r = ::waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
  }
  if (r == 0 || errno != ECHILD) return false;
  return ::kill(-1, 0) < 0 && errno == ESRCH;
}

[[noreturn]] void reap_until(pid_t command, int emptied_fd) {
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
      if (pid == command) {
        if (emptied_fd >= 0 && alone_in_namespace()) {
          ssize_t said = ::write(emptied_fd, "E", 1);
          (void)said;  // unsaid: the caller waits for pid 1's exit instead
        }
        _exit(reaper_exit_status(status));
      }
  }
}

}  // namespace

int reaper_exit_status(int wait_status) {
  return WIFSIGNALED(wait_status) ? 128 + WTERMSIG(wait_status) : WEXITSTATUS(wait_status);
}

bool relays(const siginfo_t& si) { return si.si_pid == 0; }

pid_t fork_behind_reaper(int emptied_fd) {
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
  if (emptied_fd > 0) ::syscall(SYS_close_range, 0u, static_cast<unsigned>(emptied_fd) - 1, 0);
  ::syscall(SYS_close_range, static_cast<unsigned>(emptied_fd) + 1, ~0u, 0);
  reap_until(pid, emptied_fd);
}

}  // namespace husk::rt
