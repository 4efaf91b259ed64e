// Turning the calling process into the container's process: everything from
// process.* of the spec that is applied between setup and execve.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "spec/spec.h"

namespace husk::rt {

// Resolve args[0] against PATH from `env` (or the default PATH) as execvp
// would, inside the current root. Errors use Go's lower-case errno texts as
// runc does, because Docker maps them to exit codes: `exec: "foo": executable
// file not found in $PATH`, `no such file or directory` (127), `permission denied` (126).
std::string find_executable(const std::string& arg0, const std::vector<std::string>& env);

// The same lookup, its failure kept: `path` empty and `err` ENOENT (nowhere)
// or EACCES (found, but a directory or a file without x bits; on PATH only
// when nothing executable came before or after, as execvp(3)).
struct Lookup {
  std::string path;
  int err = 0;
  bool on_path = false;  // args[0] has no '/': PATH was searched
};
Lookup lookup_executable(const std::string& arg0, const std::vector<std::string>& env);

// A shell's status and words for a command that could not be run (husk
// sandbox): 127 when nothing was found, 126 when something was but it cannot
// be executed; "nosuchcmd: command not found", "./x: permission denied",
// "./script: cannot execute: ... (its interpreter ...)". `found`: the lookup
// succeeded and execve(2) failed with `err`.
int shell_exec_status(const Lookup& l);
std::string shell_exec_error(const std::string& arg0, const Lookup& l, bool found, int err);

// rlimits, memory policy, personality, scheduler, ioPriority: applied while still privileged.
void apply_limits(const spec::Process& p, const spec::Linux* linux_cfg);

// setgroups/setgid/setuid keeping the configured capabilities, then set the
// five capability sets; umask. Ends unprivileged unless caps say otherwise.
void switch_user_and_caps(const spec::Process& p, bool in_user_ns);

// process.oomScoreAdj, written by the parent through the host's /proc.
void write_oom_score_adj(pid_t pid, const spec::Process& p);

// PR_SET_NO_NEW_PRIVS when asked.
void apply_no_new_privs(const spec::Process& p);

// Close every fd from `first` on except those in `keep` (-1 entries are
// ignored): a child of husk holds only what it needs, nothing that leads to
// the host (a cgroup or state directory, a lock) while container processes
// may reach it through /proc/<pid>/fd.
void close_fds_except(int first, std::vector<int> keep);

// Mark every fd >= 3 + preserve close-on-exec, and clear it on 3..3+preserve-1.
void prepare_fds_for_exec(int preserve_fds);

// chdir to process.cwd and refuse a cwd that is not inside the container's
// root (CVE-2024-21626). A missing cwd is an error: the init creates it
// (make_cwd) before the root may become read-only; exec does not.
void enter_cwd(const std::string& cwd);
void make_cwd(const std::string& cwd);

// process.env plus HOME from the current root's /etc/passwd entry of
// process.user.uid when env has none ("/" without an entry), as runc.
std::vector<std::string> process_env(const spec::Process& p);

// Without a terminal, hand stdio pipes, sockets and files to process.user
// (runc does) so a non-root process can reopen them as /dev/stdout.
// Character devices (/dev/null, a caller's tty) are left alone.
void chown_stdio(const spec::Process& p);

// execve; returns only by throwing.
[[noreturn]] void exec_process(const std::string& path, const spec::Process& p,
                               const std::vector<std::string>& env);

}  // namespace husk::rt
