// The protocol between husk and the processes it clones for a container (the
// init, an exec'd process, and the stage-1 helper either may need), over a
// SOCK_SEQPACKET socketpair: one message is one byte of type, then a payload.
#pragma once

#include <sys/types.h>

#include <string>

namespace husk::rt {

enum class Msg : char {
  // child -> parent
  kMapIds = 'M',   // a new user namespace exists: write uid_map/gid_map of the sender
  kPid = 'P',      // payload (pid_payload): pid of the real process, from a stage-1 helper
  kHooks = 'H',    // the init's mounts are done: run prestart + createRuntime now
  kSeccomp = 'S',  // the seccomp notify listener is attached (SCM_RIGHTS)
  kReady = 'R',    // the init is blocked on exec.fifo, ready for start
  kError = 'E',    // payload: the child's error message; it exits next
  // parent -> child
  kGo = 'g',           // the process is in its cgroup (and mapped): go on
  kMapsDone = 'm',     // reply to kMapIds
  kHooksDone = 'h',    // reply to kHooks
  kSeccompDone = 's',  // reply to kSeccomp: the agent has the listener
};

// The kPid payload: the pid in decimal.
std::string pid_payload(pid_t pid);
// Its strict reverse: only decimal digits naming a pid > 0, else an Error.
pid_t parse_pid_payload(const std::string& payload);

// "'X'" for an error about an unexpected message.
std::string msg_name(Msg m);

}  // namespace husk::rt
