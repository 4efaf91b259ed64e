#include "runtime/sync.h"

#include <linux/sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "base/fdpass.h"
#include "seccomp/seccomp.h"
#include "base/error.h"

namespace husk::rt {

void send_msg(int fd, char type, const std::string& payload) {
  std::string m(1, type);
  m += payload;
  if (::send(fd, m.data(), m.size(), MSG_NOSIGNAL) < 0) throw sys_error("sync: send");
}

bool recv_msg(int fd, char& type, std::string& payload, int* passed) {
  if (passed) *passed = -1;
  // Peek at the size first: messages are mostly one byte, sometimes a state JSON.
  ssize_t n;
  do n = ::recv(fd, nullptr, 0, MSG_PEEK | MSG_TRUNC);
  while (n < 0 && errno == EINTR);
  if (n < 0) throw sys_error("sync: receive");
  if (n == 0) return false;
  std::string buf(static_cast<size_t>(n), '\0');
  int got;
  n = base::recv_with_fd(fd, buf.data(), buf.size(), &got);
  if (n < 0) throw sys_error("sync: receive");
  if (passed) *passed = got;
  else if (got >= 0) ::close(got);
  if (n == 0) return false;
  type = buf[0];
  payload.assign(buf.data() + 1, static_cast<size_t>(n) - 1);
  return true;
}

void hand_listener_to_parent(int sock, int listener) {
  if (listener < 0) return;
  char type = kSeccomp;
  ssize_t n = base::send_with_fd(sock, &type, 1, listener);
  if (n < 0) throw sys_error("sync: send the seccomp listener");
  char t;
  std::string payload;
  if (!recv_msg(sock, t, payload)) _exit(1);  // parent gone: nothing to report to
  if (t != kSeccompDone) throw Error(std::string("sync: unexpected message '") + t + "'");
  ::close(listener);
}

void forward_listener(int sock, int listener, const spec::Spec& spec, pid_t pid,
                      const std::string& state_json) {
  const spec::Seccomp* cfg = spec.linux_ && spec.linux_->seccomp ? &*spec.linux_->seccomp : nullptr;
  if (!cfg) throw Error("sync: a seccomp listener without linux.seccomp");
  if (listener < 0) throw Error("sync: seccomp message without the listener fd");
  seccomp::send_to_listener(cfg->listener_path, listener,
                            seccomp::process_state_json(spec.oci_version, pid, cfg->listener_metadata, state_json));
  send_msg(sock, kSeccompDone);
}

pid_t clone3_raw(uint64_t flags, int cgroup_fd) {
  clone_args args{};
  args.flags = flags;
  // With CLONE_PARENT the kernel takes the exit signal from the caller and
  // refuses one given here.
  args.exit_signal = (flags & CLONE_PARENT) ? 0 : SIGCHLD;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup_fd);
  }
  return static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
}

void child_prologue() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

void child_fail(int sock, const char* what) noexcept {
  // No allocation here: this may run because memory ran out.
  char msg[4096];
  msg[0] = 'E';
  size_t len = strnlen(what, sizeof msg - 1);
  memcpy(msg + 1, what, len);
  ::send(sock, msg, len + 1, MSG_NOSIGNAL);
  _exit(1);
}

}  // namespace husk::rt
