// Cloning the container init and driving it through setup. The init is a
// clone of husk itself (no re-exec); parent and init talk over a socketpair
// (launch/protocol.h) until the init reports ready and blocks on
// <state dir>/exec.fifo.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

#include "landlock/landlock.h"
#include "launch/host_objects.h"
#include "launch/launch.h"
#include "spec/spec.h"

namespace husk::rt {

struct InitRequest {
  const spec::Spec* spec = nullptr;
  // What the bundle names, opened and judged on the host: the init joins
  // these namespace fds and finds root.path and bind sources again by identity.
  const HostObjects* host = nullptr;
  const spec::State* state = nullptr;  // state.json as hooks get it, but for pid and status
  int fifo_fd = -1;            // O_PATH fd of <state dir>/exec.fifo
  int console_fd = -1;         // connected console socket, or -1 (no terminal)
  int preserve_fds = 0;
  bool no_pivot = false;
  std::string session_keyring;  // name of a new session keyring; empty: keep the caller's
  std::string seccomp_cache_dir;       // compiled filters, keyed by profile
  // Called with the init's pid once its maps are written, before it goes on:
  // it is still dumpable, so a caller without privileges may open its
  // namespaces (husk sandbox makes its proxy's listener there).
  std::function<void(pid_t)> on_init_open;
  // A Landlock ruleset made in the container's mount view once it is set
  // up, enforced after exec.fifo is opened (which is the host's) and before
  // any startContainer hook or the command; null: none.
  const landlock::Plan* landlock = nullptr;
  // husk sandbox: the init forks the command and stays pid 1 in front of it
  // (launch/reaper.h).
  bool reaper = false;
  // With the reaper: the write end of a pipe (close-on-exec: the command
  // drops it at its exec), on which pid 1 writes one byte once the command
  // is reaped and nothing else is left in its pid namespace (reaper.cpp).
  // Said before pid 1's own exit, whose namespaces' teardown takes a while.
  int emptied_fd = -1;
  // husk sandbox: a command that cannot be run fails after start, on
  // exec.fifo as a failed execve does, in a shell's words, and the init
  // exits 127 or 126 (shell_exec_status). Else create fails, in runc's.
  bool shell_words = false;
};

// The launcher of create: clone3 of the init (with every new namespace, or
// through a stage-1 helper that joins a user or pid namespace first), then
// the init's setup, running prestart and createRuntime hooks when it asks and
// passing its seccomp listener to the agent at linux.seccomp.listenerPath.
// launch() returns the init's pid once it is blocked waiting for `start`. On
// failure the init is killed and reaped and an Error with the init's own
// message is thrown.
class InitLauncher final : public Launcher {
 public:
  explicit InitLauncher(const InitRequest& req) : req_(req) {}
  pid_t launch(Pipeline& p) override;

 private:
  const InitRequest& req_;
};

// What the init reported after it was released (it then exits with status
// 1); no error once it exec'd.
struct LateFailure {
  std::string error;
  // The exec itself failed (a script's missing interpreter): start has done
  // its part, as runc's does. Else a startContainer hook: start fails
  // (runtime.md: the runtime MUST generate an error).
  bool in_exec = false;
};
// The init's first byte on exec.fifo after it was released, when it failed.
constexpr char kFailedHook = 'H', kFailedExec = 'X';

// `start`: release the init blocked on exec.fifo, call `released`, then wait
// until the user process was exec'd. Fails if the init died before it was
// released; what failed after that is returned.
LateFailure release_init(int state_dir_fd, pid_t pid, uint64_t start_time, const std::function<void()>& released);

}  // namespace husk::rt
