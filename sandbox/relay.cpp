#include "sandbox/relay.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace husk::rt {

namespace {

// Sockets get send (no SIGPIPE), pipes and files write.
ssize_t put(int fd, const char* p, size_t n) {
  ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
  if (w < 0 && errno == ENOTSOCK) w = ::write(fd, p, n);
  return w;
}

// The end of what goes to `fd`: a socket's write side, or the fd closed.
void close_write(int fd) {
  if (::shutdown(fd, SHUT_WR) != 0 && errno == ENOTSOCK) ::close(fd);
}

}  // namespace

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = put(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

void relay(int a, int b, int a_to, int b_to) {
  const int to[2] = {a_to >= 0 ? a_to : b, b_to >= 0 ? b_to : a};
  char buf[16384];
  bool open[2] = {true, true};  // reading from a, from b
  while (open[0] || open[1]) {
    pollfd fds[2] = {{open[0] ? a : -1, POLLIN, 0}, {open[1] ? b : -1, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return;
      if (n == 0) {
        open[i] = false;
        close_write(to[i]);
      } else if (!write_all(to[i], buf, static_cast<size_t>(n))) {
        return;
      }
    }
  }
}

}  // namespace husk::rt
