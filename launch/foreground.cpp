#include "launch/foreground.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"

namespace husk::rt {
namespace {

class RawTerminal {
 public:
  explicit RawTerminal(int fd) : fd_(fd) {
    if (!::isatty(fd) || ::tcgetattr(fd, &saved_) != 0) return;
    termios raw = saved_;
    cfmakeraw(&raw);
    active_ = ::tcsetattr(fd, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
  }

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

bool copy_once(int from, int to) {
  char buf[8192];
  ssize_t n = ::read(from, buf, sizeof buf);
  if (n <= 0) return false;
  for (ssize_t off = 0; off < n;) {
    ssize_t w = ::write(to, buf + off, static_cast<size_t>(n - off));
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    off += w;
  }
  return true;
}

}  // namespace

int wait_foreground(pid_t pid, int sigfd, int master) {
  RawTerminal raw(master >= 0 ? STDIN_FILENO : -1);
  if (master >= 0) {
    winsize ws;
    if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) ::ioctl(master, TIOCSWINSZ, &ws);
  }
  bool stdin_open = master >= 0;
  for (;;) {
    pollfd fds[3] = {{sigfd, POLLIN, 0}, {master, POLLIN, 0}, {stdin_open ? STDIN_FILENO : -1, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      throw sys_error("poll");
    }
    if (fds[1].revents & (POLLIN | POLLHUP)) {
      if (!copy_once(master, STDOUT_FILENO) && !(fds[1].revents & POLLIN)) fds[1].fd = -1, master = -1;
    }
    if (fds[2].revents & (POLLIN | POLLHUP)) {
      if (!copy_once(STDIN_FILENO, master)) stdin_open = false;
    }
    if (!(fds[0].revents & POLLIN)) continue;
    signalfd_siginfo si;
    if (::read(sigfd, &si, sizeof si) != sizeof si) continue;
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGWINCH && master >= 0) {
      winsize ws;
      if (::ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0) ::ioctl(master, TIOCSWINSZ, &ws);
      continue;
    }
    if (sig != SIGCHLD) {
      ::kill(pid, sig);
      continue;
    }
    int status;
    pid_t r;
    while ((r = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (r != pid) continue;
      if (master >= 0)
        while (copy_once(master, STDOUT_FILENO)) {
        }
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
}


int forwarding_signalfd() {
  sigset_t mask;
  sigfillset(&mask);
  for (int s : {SIGILL, SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGKILL, SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE})
    sigdelset(&mask, s);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int fd = ::signalfd(-1, &mask, SFD_CLOEXEC);
  if (fd < 0) throw sys_error("signalfd");
  return fd;
}

}  // namespace husk::rt
