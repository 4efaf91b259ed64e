// The command's terminal and its end: the terminal put back, signals passed
// on to pid 1, --timeout.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <sstream>

#include "base/error.h"
#include "base/file.h"
#include "sandbox/internal.h"

namespace husk::rt {

using base::Fd;

namespace {

// Whether `pid` handles or ignores sig itself (/proc/<pid>/status, the host's view).
bool takes_signal(pid_t pid, int sig) {
  std::istringstream lines(base::try_read_file("/proc/" + std::to_string(pid) + "/status").value_or(""));
  std::string line;
  uint64_t mask = 0;
  while (std::getline(lines, line))
    if (line.rfind("SigCgt:", 0) == 0 || line.rfind("SigIgn:", 0) == 0)
      mask |= std::strtoull(line.c_str() + 7, nullptr, 16);
  return mask & (1ull << (sig - 1));
}

void arm(int timer, double seconds) {
  itimerspec t{};
  t.it_value.tv_sec = static_cast<time_t>(seconds);
  t.it_value.tv_nsec = static_cast<long>((seconds - std::floor(seconds)) * 1e9);
  if (t.it_value.tv_sec == 0 && t.it_value.tv_nsec == 0) t.it_value.tv_nsec = 1;
  if (::timerfd_settime(timer, 0, &t, nullptr) != 0) throw sys_error("sandbox: timerfd_settime");
}

constexpr int kTimedOut = 124;  // timeout(1)'s status

}  // namespace

TerminalGuard::TerminalGuard() {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO})
    if (::isatty(fd) && ::tcgetattr(fd, &saved_) == 0 && ::ioctl(fd, TIOCGETD, &ldisc_) == 0) {
      fd_ = fd;
      if (::ioctl(fd, TIOCGEXCL, &exclusive_) != 0) exclusive_ = 0;
      break;
    }
}

void TerminalGuard::restore() {
  if (fd_ < 0) return;
  // From a background process group these would stop husk (SIGTTOU) when
  // create failed before the wait ignored it: blocked, they just apply.
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::sigprocmask(SIG_BLOCK, &ttou, &old);
  // A background husk leaves the settings to the job in the foreground
  // (its shell puts its own back when it gets the terminal again); a
  // terminal that is not husk's controlling one has no foreground to respect.
  if (pid_t fg = ::tcgetpgrp(fd_); fg < 0 || fg == ::getpgrp()) {
    int now = ldisc_;
    if (::ioctl(fd_, TIOCGETD, &now) == 0 && now != ldisc_) ::ioctl(fd_, TIOCSETD, &ldisc_);
    ::tcsetattr(fd_, TCSANOW, &saved_);
  }
  ::tcflow(fd_, TCOON);
  if (!exclusive_) ::ioctl(fd_, TIOCNXCL);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  fd_ = -1;
}

int wait_sandboxed(pid_t pid, int sigfd, double timeout, bool as_pid_1, bool& timed_out, int emptied,
                   const std::function<void()>& on_emptied) {
  // With TOSTOP set by the command, a message to the terminal would stop
  // husk (and with it --timeout) while the command runs on.
  ::signal(SIGTTOU, SIG_IGN);
  ::signal(SIGTTIN, SIG_IGN);
  Fd timer(timeout > 0 ? ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC) : -1);
  if (timeout > 0) {
    if (!timer) throw sys_error("sandbox: timerfd_create");
    arm(timer.get(), timeout);
  }
  int emulated = 0;
  timed_out = false;
  bool killed = false;
  auto deliver = [&](int sig) {
    static const int kHarmless[] = {SIGCHLD, SIGURG, SIGWINCH, SIGCONT};
    bool terminates = std::find(std::begin(kHarmless), std::end(kHarmless), sig) == std::end(kHarmless);
    if (as_pid_1 && terminates && !takes_signal(pid, sig)) {
      emulated = sig;
      ::kill(pid, SIGKILL);
    } else {
      ::kill(pid, sig);
    }
  };
  for (;;) {
    pollfd fds[3] = {{sigfd, POLLIN, 0}, {timer.get(), POLLIN, 0}, {emptied, POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      throw sys_error("poll");
    }
    if (fds[1].revents & POLLIN) {
      uint64_t ticks;
      if (::read(timer.get(), &ticks, sizeof ticks) < 0) ticks = 0;
      if (!timed_out) {
        timed_out = true;
        deliver(SIGTERM);
        arm(timer.get(), kKillGrace);
      } else if (!killed) {
        killed = true;
        ::kill(pid, SIGKILL);
      }
    }
    if (fds[2].revents & (POLLIN | POLLHUP)) {
      // Only its byte says so; end-of-file (pid 1 gone first) says nothing.
      char said = 0;
      if (::read(emptied, &said, 1) == 1 && said == 'E') {
        // Nothing runs any more: --timeout has nothing left to stop, and
        // must not fire while on_emptied works (a command that ended in
        // time is not one that timed out).
        timer.reset();
        if (on_emptied) on_emptied();
      }
      emptied = -1;  // poll skips it from now on
    }
    if (!(fds[0].revents & POLLIN)) continue;
    signalfd_siginfo si;
    if (::read(sigfd, &si, sizeof si) != sizeof si) continue;
    int sig = static_cast<int>(si.ssi_signo);
    if (sig != SIGCHLD) {
      deliver(sig);
      continue;
    }
    int status;
    pid_t r;
    while ((r = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (r != pid) continue;
      if (timed_out) return kTimedOut;
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && emulated) return 128 + emulated;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  }
}

}  // namespace husk::rt
