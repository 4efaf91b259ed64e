// Sending and receiving the messages of launch/protocol.h, and the raw
// clone3 both the init and exec use.
#pragma once

#include <linux/sched.h>
#include <sys/types.h>
#include <unistd.h>

#include <exception>

#include <cstdint>
#include <string>

#include "base/fd.h"
#include "launch/protocol.h"
#include "spec/spec.h"

namespace husk::rt {

void send_msg(int fd, Msg type, const std::string& payload = {});

struct Message {
  Msg type;
  std::string payload;
  base::Fd fd;  // sent along (SCM_RIGHTS, O_CLOEXEC), or none
};
// False on EOF (the other side exited or exec'd).
bool recv_msg(int fd, Message& m);

// Child side: wait for `want` from the parent; the parent gone means nothing
// is left to report to (_exit(1)), another message is an Error.
void expect_msg(int fd, Msg want);

// Child side: wait for Msg::kGo, the parent's word that the process is placed
// (cgroup, maps); anything else, or the parent gone, ends the child (_exit(1)).
void wait_for_go(int fd);

// The seccomp notify listener of a container process goes to the agent at
// linux.seccomp.listenerPath, a host path: the process sends it to the husk
// parent (kSeccomp, fd attached), which connects from the host and answers
// kSeccompDone once the agent has it.

// Child side, right after seccomp::load: a single sendmsg, then a wait, so
// that only sendmsg must stay un-notified (seccomp::plan refuses it); every
// later syscall the filter notifies reaches an agent that holds the fd.
// Closes `listener`. Nothing when listener < 0.
void hand_listener_to_parent(int sock, int listener);

// Parent side of kSeccomp: send the container process state (pid as the host
// sees it, `state` the container's) with `listener` to the agent; the caller
// then releases the child (kSeccompDone). Errors name linux.seccomp.listenerPath.
void hand_listener_to_agent(int listener, const spec::Spec& spec, pid_t pid, const spec::State& state);

// clone3 returning in the child like fork; cgroup_fd >= 0 adds CLONE_INTO_CGROUP.
// Where a seccomp filter answers clone3 with ENOSYS, clone(2) without it.
pid_t clone3_raw(uint64_t flags, int cgroup_fd);

// Report an exception from a child over the sync socket and exit; the
// parent turns the message into its own error.
[[noreturn]] void child_fail(int sock, const char* what) noexcept;

// The body of a cloned child: nothing may unwind into the parent's copied
// stack, so every exception becomes a message to the parent and _exit(1).
template <class Body>
[[noreturn]] void child_run(int sock, Body&& body) noexcept {
  try {
    body();
  } catch (const std::exception& e) {
    child_fail(sock, e.what());
  } catch (...) {
    child_fail(sock, "unexpected error in the container's setup");
  }
  child_fail(sock, "container setup returned without exec");
}

// Start of every child that will end up in the container: default signal
// mask, and not dumpable until exec, so container processes cannot open our
// /proc/<pid>/exe or memory (CVE-2019-5736). `stay_dumpable`: the caller
// makes it non-dumpable later (an init in a user namespace of its own).
void child_prologue(bool stay_dumpable = false);

// From a stage-1 child (after joining a pid namespace, which applies to
// children only): clone the real process as our parent's child, tell the
// parent its pid (Msg::kPid) and exit.
template <class Final>
[[noreturn]] void spawn_sibling_and_exit(int sock, Final&& final) {
  pid_t pid = clone3_raw(CLONE_PARENT, -1);
  if (pid == 0) final();
  if (pid < 0) child_fail(sock, "clone the container process: cannot create process");
  send_msg(sock, Msg::kPid, pid_payload(pid));
  _exit(0);
}

}  // namespace husk::rt
