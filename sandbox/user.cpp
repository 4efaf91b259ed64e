// Steps as the sandbox's user, and the guardian that cleans up after a killed husk.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "base/error.h"
#include "sandbox/internal.h"

namespace husk::rt {

using base::Fd;

void as_user(uint32_t uid, uint32_t gid, const std::function<void()>& fn) {
  if (::geteuid() != 0) return fn();
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw sys_error("sandbox: pipe");
  Fd rd(p[0]), wr(p[1]);
  pid_t child = ::fork();
  if (child < 0) throw sys_error("sandbox: fork");
  if (child == 0) {
    std::string err;
    try {
      if (::setgroups(0, nullptr) != 0 || ::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0)
        throw sys_error("become uid " + std::to_string(uid));
      fn();
    } catch (const std::exception& e) {
      err = e.what();
    }
    if (!err.empty() && ::write(wr.get(), err.data(), err.size()) < 0) _exit(2);
    _exit(err.empty() ? 0 : 1);
  }
  wr.reset();
  std::string err;
  char buf[512];
  ssize_t n;
  while ((n = ::read(rd.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) err.append(buf, static_cast<size_t>(n));
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!err.empty()) throw Error(err);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error("sandbox: a step as uid " + std::to_string(uid) + " failed");
}

void remove_users_tree(uint32_t uid, uint32_t gid, int parent, const std::string& name) {
  try {
    as_user(uid, gid, [&] { remove_tree(parent, name); });
  } catch (const Error&) {
    // What the user cannot remove stays, like any remove_tree leftover.
  }
  ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
}

Guardian::Guardian(const Context& g, const std::string& id, const Workdir& work, int keep_fd) {
  // Datagrams: each placeholder comes with its directory's fd; "D" is done.
  int p[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p) != 0) throw sys_error("sandbox: socketpair");
  pid_ = ::fork();
  if (pid_ < 0) throw sys_error("sandbox: fork the guardian");
  if (pid_ == 0) {
    ::close(p[1]);
    ::setpgid(0, 0);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU}) ::signal(sig, SIG_IGN);
    Placeholders placeholders(work.uid(), work.gid());
    NewFiles made(work.uid(), work.gid());
    Placeholders::Heard heard;
    while ((heard = placeholders.receive(p[0], &made)) == Placeholders::Heard::placeholder) {
    }
    if (heard == Placeholders::Heard::gone) {
      try {
        cmd_delete(g, id, true);
      } catch (const Error&) {
      }
      work.remove();
      if (keep_fd >= 0) remove_users_tree(work.uid(), work.gid(), keep_fd, "work");
      placeholders.remove();
      made.move_aside();
    }
    _exit(0);
  }
  ::close(p[0]);
  tell_ = Fd(p[1]);
}

Guardian::~Guardian() {
  if (::send(tell_.get(), "D", 1, MSG_NOSIGNAL) == 1) ::waitpid(pid_, nullptr, 0);
}

}  // namespace husk::rt
