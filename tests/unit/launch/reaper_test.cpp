#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/reaper.h"

#include <string>
#include <utility>

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

namespace {
// A process that plays pid 1 (a subreaper, so the command's orphans come to
// it) in front of `command`; returns what it said on its pipe before exiting
// ("" at end-of-file) and its exit status.
std::pair<std::string, int> behind_reaper(void (*command)()) {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  pid_t reaper = ::fork();
  if (reaper == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    if (husk::rt::fork_behind_reaper(p[1]) == 0) command();
    _exit(99);  // never reached: the reaper exits with the command's status
  }
  ::close(p[1]);
  std::string said;
  char c;
  while (::read(p[0], &c, 1) == 1) said += c;
  ::close(p[0]);
  int status = 0;
  ::waitpid(reaper, &status, 0);
  return {said, WEXITSTATUS(status)};
}
}  // namespace

TEST_CASE("pid 1 says the sandbox is empty once the command is gone and nothing else runs") {
  auto [said, status] = behind_reaper([] { _exit(7); });
  CHECK(said == "E");
  CHECK(status == 7);
}

TEST_CASE("pid 1 says nothing while a process the command left runs on") {
  // The orphan outlives the command (and keeps the pipe open until it ends):
  // removing what protects the host then would let it write there.
  auto [said, status] = behind_reaper([] {
    if (::fork() == 0) {
      ::usleep(300 * 1000);
      _exit(0);
    }
    _exit(5);
  });
  CHECK(said.empty());
  CHECK(status == 5);
}
