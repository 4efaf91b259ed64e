#include "launch/console.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <linux/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>

#include "base/error.h"
#include "base/fd.h"
#include "base/fdpass.h"

namespace husk::rt {

using base::Fd;

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

ConsoleChannel open_console_channel(bool terminal, const std::string& console_socket) {
  ConsoleChannel ch;
  if (!terminal) return ch;
  if (!console_socket.empty()) {
    ch.child.reset(connect_console_socket(console_socket));
    return ch;
  }
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw sys_error("socketpair for console");
  ch.parent.reset(sv[0]);
  ch.child.reset(sv[1]);
  return ch;
}

void send_fd(int sock, int fd, const std::string& name) {
  if (base::send_with_fd(sock, name.data(), name.size(), fd) < 0) throw sys_error("send the " + name + " fd");
}

int recv_fd(int sock) {
  char name[256];
  int fd;
  if (base::recv_with_fd(sock, name, sizeof name, &fd) < 0) throw sys_error("receive an fd");
  if (fd < 0) throw Error("receive an fd: no fd in the message");
  return fd;
}

void setup_console(int socket_fd, const std::optional<spec::ConsoleSize>& size, bool bind_console) {
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
  // config-linux.md: the init's terminal is also /dev/console (a bind mount).
  // Both ends are fds, so a path swapped by the container cannot redirect it.
  if (bind_console) {
    Fd console(::open("/dev/console", O_CREAT | O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0));
    if (!console) throw sys_error("create /dev/console");
    struct stat st;
    if (::fstat(console.get(), &st) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))
      throw Error("/dev/console in the container is not a file or character device");
    Fd tree(static_cast<int>(::syscall(SYS_open_tree, slave.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)));
    if (!tree) throw sys_error("clone the pty for /dev/console");
    if (::syscall(SYS_move_mount, tree.get(), "", console.get(), "",
                  MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0)
      throw sys_error("bind the pty on /dev/console");
  }
  send_fd(socket_fd, master.get(), "/dev/ptmx");
  // The caller made us a session leader (setsid) already.
  if (::ioctl(slave.get(), TIOCSCTTY, 0) != 0) throw sys_error("set controlling terminal");
  for (int i = 0; i < 3; ++i)
    if (::dup2(slave.get(), i) < 0) throw sys_error("dup pty slave to stdio");
}

}  // namespace husk::rt
