#include "launch/hooks.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

#include "base/error.h"
#include "base/fd.h"
#include "base/log.h"

namespace husk::rt {

using base::Fd;

static void run_one(const spec::Hook& h, const std::string& label, const std::string& state_json) {
  // A socketpair, not a pipe: send(MSG_NOSIGNAL) survives a hook that never
  // reads stdin without touching SIGPIPE, whose disposition exec would inherit.
  int in[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) throw sys_error(label + ": socketpair");
  Fd rd(in[0]), wr(in[1]);
  std::vector<char*> argv, envp;
  // args[0] is argv[0]; with no args the path is argv[0].
  if (h.args.empty()) argv.push_back(const_cast<char*>(h.path.c_str()));
  for (const auto& a : h.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : h.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // A hook without env gets the runtime's environment, as under runc and crun.
  char** env = h.env.empty() ? environ : envp.data();

  pid_t pid = ::fork();
  if (pid < 0) throw sys_error(label + ": fork");
  if (pid == 0) {
    ::dup2(rd.get(), 0);
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    ::execve(h.path.c_str(), argv.data(), env);
    const char msg[] = "hook exec failed\n";
    ssize_t ignored = ::write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(127);
  }
  rd.reset();
  // A hook that never reads a state larger than the socket buffer must not
  // stall us past its timeout.
  if (h.timeout) {
    timeval tv{*h.timeout, 0};
    ::setsockopt(wr.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  ssize_t ignored = ::send(wr.get(), state_json.data(), state_json.size(), MSG_NOSIGNAL);
  (void)ignored;
  wr.reset();

  int status = 0;
  if (h.timeout) {
    // pidfd lets us wait with a timeout without SIGCHLD plumbing.
    Fd pfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pfd) {
      int err = errno;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      throw sys_error(label + ": pidfd_open", err);
    }
    pollfd p{pfd.get(), POLLIN, 0};
    int rc;
    do rc = ::poll(&p, 1, *h.timeout * 1000);
    while (rc < 0 && errno == EINTR);
    if (rc == 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      throw Error(label + ": timed out after " + std::to_string(*h.timeout) + "s");
    }
  }
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw sys_error(label + ": wait");
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status)) throw Error(label + ": exit status " + std::to_string(WEXITSTATUS(status)));
  throw Error(label + ": killed by signal " + std::to_string(WTERMSIG(status)));
}

void run_hooks(const std::vector<spec::Hook>& hooks, const std::string& phase, const std::string& state_json) {
  for (size_t i = 0; i < hooks.size(); ++i)
    run_one(hooks[i], phase + " hook #" + std::to_string(i) + " (" + hooks[i].path + ")", state_json);
}

void run_hooks_logged(const std::vector<spec::Hook>& hooks, const std::string& phase,
                      const std::string& state_json) {
  for (size_t i = 0; i < hooks.size(); ++i) {
    try {
      run_one(hooks[i], phase + " hook #" + std::to_string(i) + " (" + hooks[i].path + ")", state_json);
    } catch (const Error& e) {
      log::warn(e.what());
    }
  }
}

}  // namespace husk::rt
