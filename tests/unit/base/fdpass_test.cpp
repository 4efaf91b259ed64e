// base: passing fds over a socket, and what a hostile sender cannot do.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "base/fd.h"
#include "base/fdpass.h"

namespace base = husk::base;

namespace {

struct Pair {
  base::Fd a, b;
  Pair() {
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    a.reset(sv[0]);
    b.reset(sv[1]);
  }
};

int open_fds() {
  int n = 0;
  for (int fd = 0; fd < 1024; ++fd) n += fcntl(fd, F_GETFD) >= 0;
  return n;
}

}  // namespace

TEST_CASE("fdpass: an fd and its data arrive, close-on-exec") {
  Pair p;
  base::Fd null(open("/dev/null", O_RDONLY | O_CLOEXEC));
  REQUIRE(base::send_with_fd(p.a.get(), "x", 1, null.get()) == 1);
  char c = 0;
  int got;
  REQUIRE(base::recv_with_fd(p.b.get(), &c, 1, &got) == 1);
  base::Fd owned(got);
  CHECK(c == 'x');
  REQUIRE(owned);
  CHECK((fcntl(owned.get(), F_GETFD) & FD_CLOEXEC) != 0);
  REQUIRE(base::send_with_fd(p.a.get(), "y", 1, -1) == 1);
  REQUIRE(base::recv_with_fd(p.b.get(), &c, 1, &got) == 1);
  CHECK(got == -1);
}

TEST_CASE("fdpass: a sender packing several fds gets one through, the rest closed") {
  Pair p;
  int before = open_fds();
  int fds[2] = {open("/dev/null", O_RDONLY | O_CLOEXEC), open("/dev/null", O_RDONLY | O_CLOEXEC)};
  char data = 'z';
  iovec iov{&data, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  REQUIRE(sendmsg(p.a.get(), &msg, 0) == 1);
  close(fds[0]);
  close(fds[1]);
  int got;
  REQUIRE(base::recv_with_fd(p.b.get(), &data, 1, &got) == 1);
  REQUIRE(got >= 0);
  close(got);
  CHECK(open_fds() == before);
}
