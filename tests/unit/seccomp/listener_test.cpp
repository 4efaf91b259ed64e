// send_to_listener() / process_state_json(): the agent side of the protocol.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "helpers.h"
#include "seccomp/seccomp.h"

using namespace husk;
using seccomp_test::Received;
using seccomp_test::receive_all;

namespace {

struct Listener {
  std::string dir, path;
  int fd = -1;
  Listener() {
    char tmpl[] = "/tmp/husk-seccomp-agent-XXXXXX";
    if (!mkdtemp(tmpl)) FAIL("mkdtemp: " << strerror(errno));
    dir = tmpl;
    path = dir + "/agent.sock";
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strcpy(a.sun_path, path.c_str());
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 1) != 0)
      FAIL("listen on " << path << ": " << strerror(errno));
  }
  ~Listener() {
    close(fd);
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
};

// Accept one connection and read it to EOF, as a seccomp agent does.
Received accept_all(int lfd) {
  int c = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
  return c < 0 ? Received{} : receive_all(c);
}

}  // namespace

TEST_CASE("process_state_json: the runtime-spec container process state", "[seccomp][listener]") {
  auto j = nlohmann::json::parse(seccomp::process_state_json(
      "1.2.0", 4422, "MKNOD=/dev/null", R"({"ociVersion":"1.2.0","id":"c1","status":"creating","pid":4422,"bundle":"/b"})"));
  CHECK(j == nlohmann::json::parse(R"({"ociVersion":"1.2.0","fds":["seccompFd"],"pid":4422,
      "metadata":"MKNOD=/dev/null",
      "state":{"ociVersion":"1.2.0","id":"c1","status":"creating","pid":4422,"bundle":"/b"}})"));
  auto no_meta = nlohmann::json::parse(seccomp::process_state_json("1.2.0", 1, "", "{}"));
  CHECK_FALSE(no_meta.contains("metadata"));
  CHECK_THROWS_WITH(seccomp::process_state_json("1.2.0", 1, "", "{nope"),
                    Catch::StartsWith("seccomp: container state is not JSON: "));
}

TEST_CASE("send_to_listener: one connection, the payload, the fd once", "[seccomp][listener]") {
  Listener l;
  // A payload bigger than a socket buffer forces several sendmsg calls.
  const std::string big(4 << 20, 'x');
  const std::string payload = R"({"ociVersion":"1.2.0","fds":["seccompFd"],"pid":1,"state":{},"pad":")" + big + "\"}";
  int p[2];
  REQUIRE(pipe2(p, O_CLOEXEC) == 0);
  Received got;
  std::thread agent([&] { got = accept_all(l.fd); });
  CHECK_NOTHROW(seccomp::send_to_listener(l.path, p[0], payload));
  agent.join();
  CHECK(got.payload == payload);
  REQUIRE(got.fds.size() == 1);
  CHECK(got.messages_with_fds == 1);
  // The agent holds the same open file: what goes into the pipe comes out of its copy.
  REQUIRE(write(p[1], "ok", 2) == 2);
  char buf[2];
  CHECK(read(got.fds[0], buf, 2) == 2);
  CHECK(std::string(buf, 2) == "ok");
  CHECK((fcntl(p[0], F_GETFD) >= 0));  // the caller's fd stays open
  close(got.fds[0]);
  close(p[0]);
  close(p[1]);
}

TEST_CASE("send_to_listener: errors name the listener", "[seccomp][listener]") {
  CHECK_THROWS_WITH(seccomp::send_to_listener("/nonexistent-husk/agent.sock", 0, "{}"),
                    "linux.seccomp.listenerPath: connect to /nonexistent-husk/agent.sock: No such file or directory");
  CHECK_THROWS_WITH(seccomp::send_to_listener(std::string(200, 'a'), 0, "{}"),
                    Catch::StartsWith("linux.seccomp.listenerPath: aaaa") && Catch::Contains("path must be 1..107 bytes"));
  // A socket nobody listens on any more.
  std::string stale;
  {
    Listener l;
    stale = l.path;
    close(l.fd);
    l.fd = -1;
    CHECK_THROWS_WITH(seccomp::send_to_listener(stale, 0, "{}"),
                      "linux.seccomp.listenerPath: connect to " + stale + ": Connection refused");
  }
}
