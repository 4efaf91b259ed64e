// The parent's side of the init/exec protocol against a scripted child: what
// a child that misbehaves or dies makes create and exec report, and that the
// session never leaves it behind.
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <functional>

#include "base/error.h"
#include "launch/launch.h"
#include "launch/sync.h"

using husk::Error;
using husk::base::Fd;
using namespace husk::rt;

namespace {

struct Scripted {
  pid_t pid;
  Fd sock;
};

// A forked child running `script` on its end of a socketpair, then exiting 0.
Scripted fork_child(const std::function<void(int)>& script) {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(sv[0]);
    try {
      script(sv[1]);
    } catch (...) {
      _exit(100);
    }
    _exit(0);
  }
  ::close(sv[1]);
  return {pid, Fd(sv[0])};
}

bool reaped(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

TEST_CASE("child session: the child's error message is the error") {
  auto c = fork_child([](int s) { send_msg(s, Msg::kError, "mount proc on /proc: Permission denied"); });
  ChildSession s(std::move(c.sock), c.pid, false);
  Message m;
  CHECK_THROWS_WITH(s.next(m), "mount proc on /proc: Permission denied");
}

TEST_CASE("child session: a pid message from a child that is no stage-1 helper is refused") {
  auto c = fork_child([](int s) { send_msg(s, Msg::kPid, pid_payload(1)); });
  ChildSession s(std::move(c.sock), c.pid, false);
  Message m;
  CHECK_THROWS_WITH(s.next(m), Catch::Matchers::Contains("a pid message without a stage-1 helper"));
  CHECK(s.pid() == c.pid);  // pid 1 was not taken as the container's
}

TEST_CASE("child session: a stage-1 helper's pid message that is no pid is refused") {
  auto c = fork_child([](int s) { send_msg(s, Msg::kPid, "1; rm -rf /"); });
  ChildSession s(std::move(c.sock), c.pid, true);
  Message m;
  CHECK_THROWS_WITH(s.next(m), Catch::Matchers::Contains("sync: invalid pid"));
  CHECK(s.pid() == -1);
}

TEST_CASE("child session: a child that dies without a word is reported with how it died") {
  SECTION("an exit status") {
    auto c = fork_child([](int) { _exit(3); });
    ChildSession s(std::move(c.sock), c.pid, false);
    Message m;
    CHECK_FALSE(s.next(m));
    CHECK(std::string(s.exit_error().what()) == "container init exited unexpectedly with status 3");
    CHECK(reaped(c.pid));
  }
  SECTION("a signal") {
    auto c = fork_child([](int) { ::raise(SIGKILL); });
    ChildSession s(std::move(c.sock), c.pid, false);
    Message m;
    CHECK_FALSE(s.next(m));
    CHECK(std::string(s.exit_error().what()) == "container init was killed by signal 9");
  }
}

TEST_CASE("child session: a send to a child that failed meanwhile throws the child's error, not EPIPE") {
  auto c = fork_child([](int s) { send_msg(s, Msg::kError, "setsid: Operation not permitted"); });
  ChildSession s(std::move(c.sock), c.pid, false);
  // The child is gone (not reaped yet), its error still queued: the send fails with EPIPE.
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOWAIT) == 0);
  CHECK_THROWS_WITH(s.sending([&] { send_msg(s.sock(), Msg::kGo); }), "setsid: Operation not permitted");
}

TEST_CASE("child session: a child still running when the session ends is killed and reaped") {
  pid_t pid;
  {
    auto c = fork_child([](int) { ::pause(); });
    pid = c.pid;
    ChildSession s(std::move(c.sock), c.pid, false);
  }
  CHECK(reaped(pid));
}

TEST_CASE("child session: done() keeps the child") {
  auto c = fork_child([](int) { ::pause(); });
  {
    ChildSession s(std::move(c.sock), c.pid, false);
    CHECK(s.done() == c.pid);
  }
  CHECK(::kill(c.pid, 0) == 0);
  ::kill(c.pid, SIGKILL);
  ::waitpid(c.pid, nullptr, 0);
}
