#include "container/internal.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>

#include <algorithm>
#include <memory>

#include "base/error.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/process.h"
#include "cgroups/cgroups.h"
#include "container/placement.h"
#include "container/state.h"
#include "launch/hooks.h"

namespace husk::rt {

using base::Fd;

namespace {

// Said where husk will not empty or remove a cgroup that is there.
void leave_alone(const std::string& path) {
  if (cgroups::exists(path))
    log::warn("cgroup " + path + " is not marked as made by husk for this container: left alone");
}

// The container's cgroup when owns_leaf(), else null.
std::unique_ptr<cgroups::Manager> open_owned(const Record& rec) {
  if (!recorded_made(rec)) return nullptr;
  auto cg = open_cgroup(rec);
  if (cg && !owns_leaf(rec, *cg)) cg.reset();
  return cg;
}

// Thaws a paused cgroup after its processes got SIGKILL: a frozen process acts
// on it only once thawed (v1's freezer).

// For a record whose cgroup is not this container's (a decoy written into
// state.json) while its init lives elsewhere: the cgroup the init is really
// in, when it carries this container's mark (which proves the init husk's,
// beyond pid and start time), with a pidfd pinning the init. Else null.
std::unique_ptr<cgroups::Manager> init_cgroup(const Record& rec, std::vector<Fd>& init) {
  if (rec.oci.pid <= 0 || rec.start_time == 0 || rec.cgroup_handle.rfind("systemd", 0) == 0) return nullptr;
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, rec.oci.pid, 0)));
  if (!pidfd || !base::process_alive(rec.oci.pid, rec.start_time)) return nullptr;
  Record real = rec;
  real.cgroup_path = cgroups::cgroup_of(rec.oci.pid);
  if (real.cgroup_path.empty() || real.cgroup_path == "/" || real.cgroup_path == rec.cgroup_path) return nullptr;
  real.cgroup_handle.clear();
  real.cgroup_created = {real.cgroup_path};
  auto cg = open_owned(real);
  if (cg) {
    log::warn("delete: the init " + std::to_string(rec.oci.pid) + " is in cgroup " + real.cgroup_path +
              ", not the recorded " + rec.cgroup_path + ": removing that one, marked as this container's");
    init.push_back(std::move(pidfd));
  }
  return cg;
}

// A container being made: undone unless commit() is called.

// delete --force without a usable state.json: the cgroup comes from the saved
// config.json, a waiting init also from the processes holding exec.fifo.
void recover_container(const Context& g, Handle& h) {
  std::unique_ptr<cgroups::Manager> cg;
  try {
    spec::Spec sp = h.config();
    Record rec;
    rec.oci.id = h.id();
    const auto& path = sp.linux_ ? sp.linux_->cgroups_path : std::nullopt;
    // Rootless: where create would have put it from here (a delete run from
    // another cgroup finds another place, which the mark then refuses).
    // With systemd: the system manager's place for it (a user manager's is
    // not known from here: the mark check then finds nothing, systemd collects it).
    const CgroupPlace place = place_cgroup(g, path, h.id(), "");
    rec.cgroup_rootless = g.rootless;
    rec.cgroup_path = place.path;
    if (place.unit) rec.cgroup_handle = std::string(g.rootless ? "systemd-user:" : "systemd:") + place.unit->unit;
    // No record says whether create made the leaf or took over an existing
    // one: only the mark tells.
    rec.cgroup_created = {rec.cgroup_path};
    if (!rec.cgroup_path.empty()) cg = open_owned(rec);
  } catch (const Error& e) {
    log::warn(std::string("delete: no cgroup to clean up: ") + e.what());
  }
  log::debug("delete " + h.id() + ": recovering" + (cg ? ", removing cgroup " + cg->path() : ""));
  if (cg) cg->kill_all(SIGKILL);
  std::vector<Fd> holders;
  for (pid_t p : h.fifo_holders())
    if (Fd fd{static_cast<int>(::syscall(SYS_pidfd_open, p, 0))}) holders.push_back(std::move(fd));
  kill_and_wait(holders);
  if (cg) cg->destroy();
  h.remove();
}

// `h` opened without the lock.

}  // namespace

bool recorded_made(const Record& rec) {
  return std::find(rec.cgroup_created.begin(), rec.cgroup_created.end(), rec.cgroup_path) !=
         rec.cgroup_created.end();
}

// Only a cgroup husk made for this container may be emptied and removed: a
// cgroupsPath naming someone else's cgroup must never get its processes
// killed. The record says husk made it, the mark that it really did (a
// planted or stale record can say anything).

// Only a cgroup husk made for this container may be emptied and removed: a
// cgroupsPath naming someone else's cgroup must never get its processes
// killed. The record says husk made it, the mark that it really did (a
// planted or stale record can say anything).
bool owns_leaf(const Record& rec, const cgroups::Manager& cg) {
  if (!recorded_made(rec)) return false;
  if (cg.owned()) return true;
  leave_alone(rec.cgroup_path);
  return false;
}

// The container's cgroup when owns_leaf(), else null.

// Thaws a paused cgroup after its processes got SIGKILL: a frozen process acts
// on it only once thawed (v1's freezer).
void thaw_killed(cgroups::Manager& cg) {
  try {
    cg.thaw();
  } catch (const Error&) {
    if (!cg.pids().empty()) throw;  // removed meanwhile (a systemd scope): nothing to thaw
  }
}

// For a record whose cgroup is not this container's (a decoy written into
// state.json) while its init lives elsewhere: the cgroup the init is really
// in, when it carries this container's mark (which proves the init husk's,
// beyond pid and start time), with a pidfd pinning the init. Else null.

// SIGKILL through pidfds, then wait (bounded) until each is gone.
void kill_and_wait(const std::vector<Fd>& pidfds) {
  for (const auto& fd : pidfds) ::syscall(SYS_pidfd_send_signal, fd.get(), SIGKILL, nullptr, 0);
  for (const auto& fd : pidfds) {
    pollfd p{fd.get(), POLLIN, 0};
    while (::poll(&p, 1, 1000) < 0 && errno == EINTR) {
    }
  }
}

// `spec` is the config when the caller has it already (run); start reads it.

// `spec`: the config when the caller still has it (run), else read back.
void destroy_container(Handle& h, Record& rec, bool force, const spec::Spec* spec) {
  const Status st = live_status(rec);
  if (!force) require(Verb::remove, st, rec.oci.id);
  std::unique_ptr<cgroups::Manager> cg;
  try {
    cg = open_owned(rec);
  } catch (const Error& e) {
    if (!force) throw;
    log::warn(std::string("delete: ") + e.what());
  }
  log::debug("delete " + rec.oci.id + ": status " + status_name(st) + (cg ? ", removing cgroup " + rec.cgroup_path : ""));
  // Opened first: the pidfd pins the init so we can wait for it.
  std::vector<Fd> init;
  if (Fd fd = open_init(rec)) init.push_back(std::move(fd));
  // No init where the record says: the record may name a decoy, even one
  // that passes as ours (an empty, unmarked leftover of a killed create).
  // The cgroup the init is really in, marked as this container's, wins.
  if (init.empty()) {
    try {
      if (auto real = init_cgroup(rec, init)) cg = std::move(real);
    } catch (const Error& e) {
      if (!force) throw;
      log::warn(std::string("delete: ") + e.what());
    }
  }
  // Processes may outlive the init (no pid namespace): empty our cgroup even
  // when the container counts as stopped.
  if (cg) {
    cg->kill_all(SIGKILL);
    if (st == Status::paused) thaw_killed(*cg);
  }
  kill_and_wait(init);
  if (cg) cg->destroy();
  // A create killed before its leaf existed may have made parents: the
  // record lists them, and destroy() removes only those carrying the mark
  // (systemd removes its own units). Nothing is left to kill: best effort.
  if (!cg && recorded_made(rec) && rec.cgroup_handle.rfind("systemd", 0) != 0 && !cgroups::exists(rec.cgroup_path)) {
    try {
      if (auto parents = open_cgroup(rec)) parents->destroy();
    } catch (const Error& e) {
      log::warn(std::string("delete: ") + e.what());
    }
  }
  spec::Spec loaded;
  bool have_config = true;
  if (!spec) {
    try {
      loaded = h.config();
    } catch (const Error& e) {
      have_config = false;
      log::warn(std::string("delete: ") + e.what());
    }
  }
  h.remove();
  if (have_config) {
    rec.oci.status = status_name(Status::stopped);
    run_hooks_logged((spec ? *spec : loaded).hooks.poststop, "poststop", spec::state_to_json(rec.oci, false));
  }
}

// delete --force without a usable state.json: the cgroup comes from the saved
// config.json, a waiting init also from the processes holding exec.fifo.

int cmd_delete(const Context& g, const std::string& id, bool force) {
  Store store(g.root);
  if (!force) {
    Handle h = Handle::open(store, id);
    Record rec = h.load();
    destroy_container(h, rec, false);
    return 0;
  }
  // A missing container is no error; a half-made or corrupt one is recovered.
  std::optional<Handle> h = Handle::open_dir(store, id);
  if (!h) return 0;
  h->check_ours();
  std::optional<Record> rec;
  try {
    rec = h->load();
  } catch (const Error& e) {
    log::warn(std::string("delete: ") + e.what());
  }
  if (rec) destroy_container(*h, *rec, true);
  else recover_container(g, *h);
  return 0;
}

}  // namespace husk::rt
