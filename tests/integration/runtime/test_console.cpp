// terminal: true with --console-socket: the pty master comes over the socket.
#include <catch2/catch.hpp>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "harness.h"

using namespace hit;

namespace {

bool readable(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) > 0;
}

// Reads until the slave side is gone (EIO) or the deadline passes.
std::string drain(int fd, std::chrono::milliseconds limit) {
  std::string out;
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (!readable(fd, 100)) continue;
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

TEST_CASE("console socket receives a working pty master", "[console]") {
  Container c("console");
  c.cfg["process"]["terminal"] = true;
  c.cfg["process"]["consoleSize"] = {{"height", 33}, {"width", 111}};
  c.args({"sh"});
  c.write_config();
  std::string sock = c.bundle + "/console.sock";
  Fd listener = listen_unix(sock);

  Child create({runtime(), "--root", c.root, "create", "--bundle", c.bundle, "--console-socket", sock, c.id});
  Fd master = receive_fd(listener.get());
  REQUIRE(master);
  auto r = create.wait();
  INFO(r.err);
  REQUIRE(r.ok());
  CHECK(c.status() == "created");

  auto s = c.start();
  INFO(s.err);
  REQUIRE(s.ok());
  std::string cmd = "stty size; tty; echo hi-$((20+22)); exit\n";
  REQUIRE(::write(master.get(), cmd.data(), cmd.size()) == static_cast<ssize_t>(cmd.size()));
  auto out = drain(master.get(), 5s);
  INFO(out);
  CHECK(contains(out, "33 111"));
  CHECK(contains(out, "hi-42"));  // the shell ran it, not just the echo of the input
  CHECK(contains(out, "/dev/pts/"));
  CHECK(c.wait_status("stopped"));
}

TEST_CASE("terminal: true without --console-socket is refused for create", "[console]") {
  Container c("console-nosock");
  c.cfg["process"]["terminal"] = true;
  c.args({"sh"});
  auto r = c.create();
  CHECK(r.code != 0);
  CHECK_FALSE(r.err.empty());
  CHECK(leftovers(c).empty());
}
