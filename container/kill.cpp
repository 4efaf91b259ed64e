#include "container/internal.h"

#include <signal.h>
#include <sys/syscall.h>

#include "base/error.h"
#include "base/fd.h"
#include "cgroups/cgroups.h"
#include "container/state.h"
#include "launch/signals.h"

namespace husk::rt {

using base::Fd;

int cmd_kill(const Context& g, const std::string& id, const std::string& signal, bool all) {
  int sig = parse_signal(signal);
  Handle h = Handle::open(Store(g.root), id, false);
  Record rec = h.load();
  const Status st = live_status(rec);
  if (st == Status::creating) require(Verb::kill, st, id);
  // As runc does, a paused container is thawed after it is killed.
  const bool thaw_after = sig == SIGKILL && st == Status::paused;
  if (all) {
    // Without a pid namespace processes outlive the init: --all still reaches
    // them (containerd's shim relies on it), and is a no-op once the cgroup is gone.
    if (st == Status::stopped && (rec.cgroup_path.empty() || !cgroups::exists(rec.cgroup_path))) return 0;
    if (auto cg = open_cgroup(rec)) {
      cg->kill_all(sig);
      if (thaw_after) thaw_killed(*cg);
      return 0;
    }
  }
  require(Verb::kill, st, id);
  // A pidfd pins the process: checking it and signalling through it cannot
  // hit a recycled pid, nor one a planted state.json names.
  Fd pidfd = open_init(rec);
  if (!pidfd) throw Error("container not running");
  if (::syscall(SYS_pidfd_send_signal, pidfd.get(), sig, nullptr, 0) != 0) throw sys_error("kill container init");
  if (thaw_after)
    if (auto cg = open_cgroup(rec)) thaw_killed(*cg);
  return 0;
}

}  // namespace husk::rt
