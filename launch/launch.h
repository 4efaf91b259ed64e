// Starting a container process, for create/run (the init) and exec alike.
// A Pipeline holds the strategies — how uid/gid maps are written, which
// cgroup the process enters, how the process is launched — and the steps
// every launcher takes the new process through once its pid is known: maps,
// cgroup, oom score, state, then go.
#pragma once

#include <sys/types.h>

#include <functional>

#include "base/fd.h"
#include "cgroups/cgroups.h"
#include "launch/sync.h"
#include "namespaces/id_maps.h"
#include "spec/spec.h"

namespace husk::rt {

// Writes the uid and gid maps of a process that made a new user namespace.
class IdMapWriter {
 public:
  virtual ~IdMapWriter() = default;
  virtual void write(pid_t pid, const spec::Linux& lx) const = 0;
};

// The maps of the container's user namespace as ns::write_id_maps writes
// them: by husk itself where the kernel lets it, else by newuidmap/newgidmap.
class ProcIdMapWriter final : public IdMapWriter {
 public:
  // When `spec` makes a user namespace its mappings are checked here, before
  // any process exists: ranges the caller may not map, and
  // process.user.additionalGids where setgroups will be "deny".
  explicit ProcIdMapWriter(const spec::Spec& spec);
  void write(pid_t pid, const spec::Linux& lx) const override;

 private:
  ns::MapCaller caller_;
};

struct Pipeline;

// How the launch's first process got into the pipeline's cgroup.
struct Placement {
  bool cloned_into = false;  // by clone3 into Pipeline::cgroup_fd()
  bool by_itself = false;    // it moves itself the rest of the way (Manager::attach_self)
};

// Makes the container process and takes it through the pipeline's steps
// until it is ready. Returns its pid; on failure nothing of it is left running.
class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual pid_t launch(Pipeline& p) = 0;
};

struct Pipeline {
  const spec::Spec* spec = nullptr;
  const spec::Process* proc = nullptr;   // the process being started
  const IdMapWriter* id_maps = nullptr;  // null: nothing to map (exec joins the container's)
  cgroups::Manager* cgroup = nullptr;    // null: no cgroup, the process stays in husk's
  Launcher* launcher = nullptr;
  // Once the pid is known and the process placed, before it goes on: returns
  // the state hooks and the seccomp agent get (create saves it first).
  std::function<spec::State(pid_t)> on_pid;
  spec::State state;  // what on_pid returned

  pid_t run() { return launcher->launch(*this); }

  // ---- the steps, for launchers ----
  // A CLONE_INTO_CGROUP fd of the cgroup, or none (no cgroup, v1).
  base::Fd cgroup_fd() const;
  // clone3 of the launch's first process with `flags`, into the cgroup when
  // the kernel can (CLONE_INTO_CGROUP, Linux 5.7). `self_attach`: that
  // process can move itself (husk's privileges, no user namespace of its
  // own) and will, first thing, by attach_self(). Returns as clone3 does, in
  // both processes; `placed` says how the process gets into the cgroup.
  pid_t clone_first(uint64_t flags, bool self_attach, Placement& placed) const;
  // In that process: into the cgroup, when `placed` says it moves itself.
  void attach_self(const Placement& placed) const;
  // The maps of the user namespace the spec makes (none: nothing to do).
  void map_ids(pid_t pid) const;
  // Into the cgroup unless it is there already, oom score, on_pid.
  void place(pid_t pid, const Placement& placed);
};

// The parent's end of a cloned child: its socket, and the process (or the
// stage-1 helper that will report the real one), killed and reaped on every
// path out but done().
class ChildSession {
 public:
  // `stage1`: `first` is a helper that reports the real pid (Msg::kPid) and exits.
  ChildSession(base::Fd sock, pid_t first, bool stage1);
  ~ChildSession();
  ChildSession(const ChildSession&) = delete;
  ChildSession& operator=(const ChildSession&) = delete;

  int sock() const { return sock_.get(); }
  pid_t pid() const { return pid_; }        // the container process; -1 while a helper runs
  pid_t stage1() const { return stage1_; }  // the helper, -1 once reaped or when there was none

  // The next message. Msg::kError becomes an Error with the child's text;
  // Msg::kPid makes pid() known and reaps the helper (and is returned).
  // False at end-of-file: the child exec'd or died.
  bool next(Message& m);
  // At end-of-file before success: how the child that was talking died (it is reaped).
  Error exit_error();
  // Runs `send` (messages, fds to the child). A child that failed meanwhile
  // (its socket closed: EPIPE, ECONNRESET) left its error queued: that error
  // is thrown, not the failed send's.
  template <class Send>
  void sending(Send&& send) {
    try {
      send();
    } catch (const Error& e) {
      if (e.err() != EPIPE && e.err() != ECONNRESET) throw;
      throw_child_error();
    }
  }
  // Release the process: place it, then go. Its id maps are the caller's
  // step (the init's, before its namespaces are opened; exec has none).
  void release(Pipeline& p, const Placement& placed);
  // Msg::kSeccomp: hand the listener to the agent with the pipeline's state.
  void forward_listener(const Pipeline& p, Message& m);
  // Success: the process stays.
  pid_t done();

 private:
  // The error the child queued before its socket closed, else how it died.
  [[noreturn]] void throw_child_error();

  base::Fd sock_;
  pid_t pid_ = -1;
  pid_t stage1_ = -1;
};

}  // namespace husk::rt
