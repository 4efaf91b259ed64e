// A foreground husk (run, exec without -d) stays the parent of the
// container process: it forwards signals, proxies a terminal, and exits with
// the process's status.
#pragma once

#include <sys/types.h>

namespace husk::rt {

// Block the forwardable signals and return a signalfd for them. Call before
// cloning so no signal is lost; children unblock them for themselves.
int forwarding_signalfd();

// Until `pid` exits: forward signals from `sigfd`, copy between our stdio and
// the pty `master` (-1: no terminal). Returns the exit status, 128+signal when killed.
int wait_foreground(pid_t pid, int sigfd, int master);

}  // namespace husk::rt
