// Cloning the container init and driving it through setup. The init is a
// clone of husk itself (no re-exec); parent and init talk over a socketpair
// until the init reports ready and blocks on <state dir>/exec.fifo.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "cgroups/cgroups.h"
#include "spec/spec.h"

namespace husk::rt {

struct InitRequest {
  const spec::Spec* spec = nullptr;
  std::string rootfs;          // absolute
  const spec::State* state = nullptr;  // state.json as hooks get it, but for pid and status
  int fifo_fd = -1;            // O_PATH fd of <state dir>/exec.fifo
  int console_fd = -1;         // connected console socket, or -1 (no terminal)
  int preserve_fds = 0;
  bool no_pivot = false;
  std::string session_keyring;  // name of a new session keyring; empty: keep the caller's
  cgroups::Manager* cgroup = nullptr;  // null: no cgroup
  std::string seccomp_cache_dir;       // compiled filters, keyed by profile
  // Called once the init pid is known, before any hook runs: writes state.json
  // (status creating) and returns the state JSON hooks receive.
  std::function<std::string(pid_t)> on_pid;
};

// Clone the init and take it through setup, running prestart and
// createRuntime hooks when it asks and passing its seccomp listener to the
// agent at linux.seccomp.listenerPath. Returns the init's pid once it is blocked
// waiting for `start`. On failure the init is killed and reaped and an Error
// with the init's own message is thrown.
pid_t spawn_init(const InitRequest& req);

// `start`: release the init blocked on exec.fifo, call `released`, then wait
// until the user process was exec'd. Fails if the init died first or reports
// an error (a startContainer hook, the exec itself).
void release_init(int state_dir_fd, pid_t pid, uint64_t start_time, const std::function<void()>& released);

}  // namespace husk::rt
