// linux.seccomp -> a seccomp filter. The translation to rules is pure and
// unit-tested; load() is called in each container process before its exec.
#pragma once

#include <linux/filter.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::seccomp {

struct ArgCmp {
  unsigned index;
  int op;  // scmp_compare
  uint64_t value, value_two;
};

struct Rule {
  int syscall_nr;        // resolved for the native arch via libseccomp
  uint32_t action;       // SCMP_ACT_* (with errno / trace value folded in)
  std::vector<ArgCmp> args;  // ANDed; at most one per argument index
  std::string name;      // syscall name, for error messages
  size_t origin = 0;     // index into linux.seccomp.syscalls, for error messages
};

// Syscalls numbered above max_nr on arch (an SCMP_ARCH_* token; x32 numbers
// carry bit 30) fail with ENOSYS instead of taking the default action.
struct EnosysLimit {
  uint32_t arch;
  uint32_t max_nr;
};

struct Plan {
  uint32_t default_action = 0;
  std::vector<uint32_t> arches;  // SCMP_ARCH_* besides native
  std::vector<Rule> rules;       // unknown syscall names are skipped (as runc does)
  unsigned flags = 0;            // SECCOMP_FILTER_FLAG_* requested
  bool notify = false;           // some emitted rule is SCMP_ACT_NOTIFY
  // As runc does: a profile cannot know syscalls newer than the newest it
  // names, and libc only falls back to older syscalls on ENOSYS. One limit
  // per filter arch (native included) that has a named syscall; empty when
  // the default action lets syscalls through (ALLOW, LOG, TRACE) or already
  // is ERRNO(ENOSYS).
  std::vector<EnosysLimit> enosys;
};

// The filter compiled to classic BPF, ready for seccomp(2).
struct Program {
  std::vector<sock_filter> insns;
  unsigned flags = 0;    // SECCOMP_FILTER_FLAG_* to pass (TSYNC, LOG, SPEC_ALLOW)
  bool notify = false;   // ask the kernel for a listener fd
};

// Pure: validate and translate; errors name the field,
// e.g. "linux.seccomp.syscalls[3].action: unknown action \"SCMP_ACT_FOO\"".
// Semantics follow runc: ERRNO/TRACE default to EPERM; errnoRet on another
// action is an error; a rule whose action equals the default is dropped; an
// entry whose args use one index twice becomes one rule per arg (OR), else
// one rule with all args (AND); names libseccomp does not know are skipped;
// SCMP_ACT_NOTIFY needs listenerPath, is refused as defaultAction and on
// `write` (as runc, whose init writes the listener's number to its parent)
// and `sendmsg` (husk's container process sends the listener to its parent
// with it: notified, no agent could ever get the fd).
Plan plan(const spec::Seccomp& cfg);

// libseccomp's BPF generation is the slow part of a start (measured here for
// a Docker-sized profile: 25-45 ms with the x86_64+x86+x32 arches Docker
// lists, 5-7 ms for one arch; a cache hit takes ~20 us and load(Program)
// 0.1-0.3 ms), so the runtime compiles in the parent before cloning the init
// and the init only calls load(Program). With a non-empty cache_dir the
// program is reused across starts: cache_dir is created 0700 if missing, and
// a cache (dir or file) not owned by this euid or writable by others is
// ignored, as is one whose parent directory another user owns or may write
// (root's sticky /tmp excepted), or is a symlink; an entry is used only when the whole plan it was built from
// matches. Cache write failures only cost the reuse.
// Errors: "seccomp: compile filter: ...", unsupported flags -> "... not supported".
Program compile(const Plan& plan, const std::string& cache_dir = "");

// Install the program in the calling process (needs no_new_privs or
// CAP_SYS_ADMIN; the runtime decides no_new_privs, this never sets it).
// Allocates nothing unless it fails, so it is safe right after clone()/fork()
// of a multi-threaded runtime. Returns the notify listener fd (O_CLOEXEC) when
// prog.notify, else -1. Errors: "seccomp: load filter: Permission denied".
int load(const Program& prog);

// compile(plan) + load(program) in the calling process.
int load(const Plan& plan);

// Names the features.json seccomp section reports.
std::vector<std::string> known_actions();
std::vector<std::string> known_operators();
std::vector<std::string> known_archs();
std::vector<std::string> known_flags();
// The subset of known_flags() this libseccomp and kernel can apply
// (features.json "supportedFlags").
std::vector<std::string> supported_flags();

// The runtime-spec "container process state" sent to the seccomp agent:
// {"ociVersion", "fds": ["seccompFd"], "pid", "metadata" (omitted when
// empty), "state": <state_json>}. state_json is an already serialized state
// object (spec::state_to_json).
std::string process_state_json(const std::string& oci_version, int pid,
                               const std::string& metadata,
                               const std::string& state_json);

// Connect to the AF_UNIX SOCK_STREAM socket at listener_path, send
// state_json (normally process_state_json(...)) with notify_fd attached via
// SCM_RIGHTS on the first sendmsg, then close the connection. notify_fd stays
// open for the caller. Runs in the husk parent, on the host: listener_path is
// a host path. Throws "linux.seccomp.listenerPath: connect to <path>: ..." /
// "linux.seccomp.listenerPath: send to <path>: ...".
void send_to_listener(const std::string& listener_path, int notify_fd,
                      const std::string& state_json);

}  // namespace husk::seccomp
