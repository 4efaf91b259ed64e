#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/reaper.h"

#include <functional>
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
// pid 1 of a new pid namespace (a user namespace's without root) in front
// of `command`; `beside`, given pid 1's pid, runs in the process that made
// the namespace (it may add processes to it) before that process reaps
// every child of its own (pid 1's exit waits for those inside to be
// reaped). Returns what pid 1 said on its pipe before exiting ("" at
// end-of-file) and its exit status.
std::pair<std::string, int> behind_reaper(const std::function<void()>& command,
                                          const std::function<void(pid_t)>& beside = {}) {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  pid_t outer = ::fork();
  if (outer == 0) {
    if (::unshare(CLONE_NEWPID) != 0 && ::unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0) _exit(98);
    pid_t init = ::fork();
    if (init == 0) {
      if (husk::rt::fork_behind_reaper(p[1]) == 0) command();
      _exit(99);  // never reached: the reaper exits with the command's status
    }
    if (beside) beside(init);
    ::close(p[1]);
    int status = 0, st = 0;
    for (pid_t w; (w = ::waitpid(-1, &st, 0)) > 0;)
      if (w == init) status = st;
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 97);
  }
  ::close(p[1]);
  std::string said;
  char c;
  while (::read(p[0], &c, 1) == 1) said += c;
  ::close(p[0]);
  int status = 0;
  ::waitpid(outer, &status, 0);
  return {said, WEXITSTATUS(status)};
}
}  // namespace

TEST_CASE("pid 1 says the sandbox is empty once the command is gone and nothing else runs") {
  auto [said, status] = behind_reaper([] { _exit(7); });
  CHECK(said == "E");
  CHECK(status == 7);
}

TEST_CASE("pid 1 says nothing while a process the command left runs on") {
  // The orphan outlives the command (until pid 1's exit ends it): removing
  // what protects the host then would let it write there.
  auto [said, status] = behind_reaper([] {
    if (::fork() == 0) {
      ::pause();
      _exit(0);
    }
    _exit(5);
  });
  CHECK(said.empty());
  CHECK(status == 5);
}

TEST_CASE("pid 1 says nothing while a process that joined its namespace from outside runs", "[sandbox]") {
  // A process that entered with setns (nsenter, husk exec) is no child of
  // pid 1: it must not be taken for gone. The command ends once it is in.
  int ready[2];
  REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
  auto [said, status] = behind_reaper(
      [&] {
        char c;
        _exit(::read(ready[0], &c, 1) == 1 ? 6 : 95);
      },
      [&](pid_t init) {
        // A child of ours born in pid 1's namespace, its parent outside.
        const std::string ns = "/proc/" + std::to_string(init) + "/ns/pid";
        const int nsfd = ::open(ns.c_str(), O_RDONLY | O_CLOEXEC);
        if (nsfd < 0 || ::setns(nsfd, CLONE_NEWPID) != 0) _exit(96);
        if (::fork() == 0) {
          ::pause();  // runs on after the command, until pid 1's exit ends it
          _exit(0);
        }
        if (::write(ready[1], "x", 1) != 1) _exit(94);
      });
  ::close(ready[0]);
  ::close(ready[1]);
  CHECK(said.empty());
  CHECK(status == 6);
}
