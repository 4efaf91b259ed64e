#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/reaper.h"

using husk::rt::reaper_exit_status;
using husk::rt::relays;

namespace {
// The wait status of a child that exits with `code`, or (code < 0) dies of signal -code.
int status_of(int code) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (code >= 0) _exit(code);
    ::signal(-code, SIG_DFL);  // Catch's own handlers are inherited
    const rlimit no_core{0, 0};  // SIGABRT leaves no core file behind
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::raise(-code);
    _exit(99);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}
}  // namespace

TEST_CASE("pid 1 exits with the command's status, or 128 + its signal") {
  CHECK(reaper_exit_status(status_of(0)) == 0);
  CHECK(reaper_exit_status(status_of(3)) == 3);
  CHECK(reaper_exit_status(status_of(-SIGTERM)) == 143);
  CHECK(reaper_exit_status(status_of(-SIGABRT)) == 134);
  CHECK(reaper_exit_status(status_of(-SIGKILL)) == 137);
}

TEST_CASE("pid 1 relays what comes from outside its namespace, not what the sandbox sends it") {
  siginfo_t from_husk{};
  from_husk.si_signo = SIGTERM;
  from_husk.si_code = SI_USER;
  from_husk.si_pid = 0;  // the sender's pid, not seen in the namespace
  CHECK(relays(from_husk));
  siginfo_t from_inside = from_husk;
  from_inside.si_pid = 2;  // `kill 0` or `kill 1` from the command
  CHECK_FALSE(relays(from_inside));
}
