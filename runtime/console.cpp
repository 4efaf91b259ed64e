#include "runtime/console.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>

#include "runtime/util.h"
#include "spec/error.h"

namespace husk::rt {

int connect_console_socket(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw Error("--console-socket " + path + ": path too long");
  memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw sys_error("socket for --console-socket");
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw sys_error("connect to console socket " + path);
  return fd.release();
}

void send_fd(int sock, int fd, const std::string& name) {
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<char*>(name.data()), name.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(c), &fd, sizeof(int));
  if (::sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) throw sys_error("send console fd");
}

int recv_fd(int sock) {
  char control[CMSG_SPACE(sizeof(int))] = {};
  char name[256];
  iovec iov{name, sizeof name};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) < 0) throw sys_error("receive console fd");
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS) throw Error("receive console fd: no fd in message");
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

void setup_console(int socket_fd, const std::optional<spec::ConsoleSize>& size) {
  Fd master(::open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master) throw sys_error("open /dev/ptmx");
  if (::unlockpt(master.get()) != 0) throw sys_error("unlockpt");
  // TIOCGPTPEER opens the slave through the master, never through a path
  // the container could have swapped.
  Fd slave(::ioctl(master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave) throw sys_error("open pty slave");
  if (size) {
    winsize ws{static_cast<unsigned short>(size->height), static_cast<unsigned short>(size->width), 0, 0};
    if (::ioctl(master.get(), TIOCSWINSZ, &ws) != 0) throw sys_error("set console size");
  }
  // config-linux.md: with a terminal, /dev/console is the pty (bind mount).
  int n;
  if (::ioctl(master.get(), TIOCGPTN, &n) != 0) throw sys_error("get pty number");
  std::string pts = "/dev/pts/" + std::to_string(n);
  Fd console(::open("/dev/console", O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0));
  if (console && ::mount(pts.c_str(), "/dev/console", nullptr, MS_BIND, nullptr) != 0)
    throw sys_error("bind " + pts + " on /dev/console");
  send_fd(socket_fd, master.get(), "/dev/ptmx");
  if (::setsid() < 0) throw sys_error("setsid");
  if (::ioctl(slave.get(), TIOCSCTTY, 0) != 0) throw sys_error("set controlling terminal");
  for (int i = 0; i < 3; ++i)
    if (::dup2(slave.get(), i) < 0) throw sys_error("dup pty slave to stdio");
}

}  // namespace husk::rt
