#include "launch/sync.h"

#include <linux/sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include "base/error.h"
#include "base/fdpass.h"
#include "seccomp/seccomp.h"

namespace husk::rt {

void send_msg(int fd, Msg type, const std::string& payload) {
  std::string m(1, static_cast<char>(type));
  m += payload;
  if (::send(fd, m.data(), m.size(), MSG_NOSIGNAL) < 0) throw sys_error("sync: send");
}

bool recv_msg(int fd, Message& m) {
  m.fd.reset();
  // A peer that exited with our last message unread makes one receive fail
  // with ECONNRESET, the peek or the read after it, even though what it sent
  // before (its error) is still queued.
  bool reset = false;
  auto again = [&](ssize_t n) {
    return n < 0 && (errno == EINTR || (errno == ECONNRESET && !std::exchange(reset, true)));
  };
  // Peek at the size first: messages are mostly one byte, sometimes a state JSON.
  ssize_t n;
  do n = ::recv(fd, nullptr, 0, MSG_PEEK | MSG_TRUNC);
  while (again(n));
  if (n < 0) throw sys_error("sync: receive");
  if (n == 0) return false;
  std::string buf(static_cast<size_t>(n), '\0');
  int got;
  do n = base::recv_with_fd(fd, buf.data(), buf.size(), &got);
  while (again(n));
  if (n < 0) throw sys_error("sync: receive");
  m.fd.reset(got);
  if (n == 0) return false;
  m.type = static_cast<Msg>(buf[0]);
  m.payload.assign(buf.data() + 1, static_cast<size_t>(n) - 1);
  return true;
}

void expect_msg(int fd, Msg want) {
  Message m;
  if (!recv_msg(fd, m)) _exit(1);
  if (m.type != want) throw Error("sync: unexpected message " + msg_name(m.type));
}

void wait_for_go(int fd) {
  Message m;
  if (!recv_msg(fd, m) || m.type != Msg::kGo) _exit(1);
}

void hand_listener_to_parent(int sock, int listener) {
  if (listener < 0) return;
  char type = static_cast<char>(Msg::kSeccomp);
  ssize_t n = base::send_with_fd(sock, &type, 1, listener);
  if (n < 0) throw sys_error("sync: send the seccomp listener");
  expect_msg(sock, Msg::kSeccompDone);
  ::close(listener);
}

void hand_listener_to_agent(int listener, const spec::Spec& spec, pid_t pid, const spec::State& state) {
  const spec::Seccomp* cfg = spec.linux_ && spec.linux_->seccomp ? &*spec.linux_->seccomp : nullptr;
  if (!cfg) throw Error("sync: a seccomp listener without linux.seccomp");
  if (listener < 0) throw Error("sync: seccomp message without the listener fd");
  seccomp::send_to_listener(cfg->listener_path, listener,
                            seccomp::process_state_json(spec.oci_version, pid, cfg->listener_metadata,
                                                        spec::state_to_json(state, false)));
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
  pid_t pid = static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
  // Docker's and containerd's default seccomp profiles answer clone3 with
  // ENOSYS (its flags are out of a filter's reach) so that callers fall back
  // to clone(2), whose flags the filter judges: husk inside their containers.
  // Without a stack clone(2) forks; CLONE_INTO_CGROUP has no equivalent there.
  if (pid < 0 && errno == ENOSYS && cgroup_fd < 0) {
#if defined(__s390__) || defined(__CRIS__)
    // These take the stack first, then the flags.
    pid = static_cast<pid_t>(::syscall(SYS_clone, 0, flags | args.exit_signal, 0, 0, 0));
#else
    pid = static_cast<pid_t>(::syscall(SYS_clone, flags | args.exit_signal, 0, 0, 0, 0));
#endif
  }
  return pid;
}

void child_prologue(bool stay_dumpable) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (!stay_dumpable) ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

void child_fail(int sock, const char* what) noexcept {
  // No allocation here: this may run because memory ran out.
  char msg[4096];
  msg[0] = static_cast<char>(Msg::kError);
  size_t len = strnlen(what, sizeof msg - 1);
  memcpy(msg + 1, what, len);
  ::send(sock, msg, len + 1, MSG_NOSIGNAL);
  _exit(1);
}

}  // namespace husk::rt
