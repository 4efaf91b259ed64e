// Container records under --root: <root>/<id>/{state.json,config.json,exec.fifo}.
// Every command that changes a container holds an flock on its directory, so
// commands on one container serialize and different containers never block.
// The root and each container directory must belong to the caller and be
// writable by nobody else; everything below the root is opened through
// directory fds without following symlinks, so a planted link cannot make
// husk read, write or delete anything outside.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/fd.h"
#include "cgroups/cgroups.h"
#include "container/status.h"
#include "spec/spec.h"

namespace husk::rt {

using base::Fd;

struct Record {
  spec::State oci;             // status as last written: creating|created|running|stopped
  uint64_t start_time = 0;     // of oci.pid, to detect pid reuse
  std::string cgroup_path;     // resolved cgroupsPath, empty when none was made
  std::vector<std::string> cgroup_created;  // cgroups prepare() made, for destroy()
  std::string cgroup_handle;   // the cgroup driver's, from prepare() ("" before it)
  bool cgroup_rootless = false;  // in a subtree delegated to the caller (cgroups::Config::rootless)
  std::string no_cgroup;       // why the container has no cgroup ("" when it has one)
};

// state.json text as Handle::save wrote it -> Record. Anything else (wrong
// types, a cgroup path resolve_path would not give) throws an Error.
Record parse_record(const std::string& text);

class Store {
 public:
  explicit Store(std::string root);
  const std::string& root() const { return root_; }
  std::string dir(const std::string& id) const { return root_ + "/" + id; }

  // ID rules as runc ([A-Za-z0-9_+.-]+) without a leading dot.
  static void check_id(const std::string& id);

  std::vector<std::string> ids() const;
  // The root, checked (owned by the caller, not writable by group or others);
  // made 0700 when missing and `create`, else an invalid Fd when missing.
  Fd open_root(bool create) const;

 private:
  std::string root_;
};

// A locked container directory.
class Handle {
 public:
  // Make <root>/<id> exclusively (error if the id exists) and lock it.
  static Handle create(const Store& store, const std::string& id);
  // Open an existing container, locked unless `lock` is false (readers and
  // kill: state.json is replaced atomically, kill goes through a pidfd).
  // Error `container "X" does not exist`.
  static Handle open(const Store& store, const std::string& id, bool lock = true);
  // For delete --force: the locked directory, with or without state.json;
  // nullopt when <root>/<id> does not exist. Anything there that is not a
  // directory (a planted symlink) is unlinked, not followed.
  static std::optional<Handle> open_dir(const Store& store, const std::string& id);
  // Let other commands in while this one waits (start waiting for the exec).
  void unlock() const;
  // On a handle opened without the lock: true while another command holds it
  // (a create still making the container). Never on a locked handle: the
  // probe would drop its own lock.
  bool held_elsewhere() const;

  const std::string& id() const { return id_; }
  const std::string& dir() const { return dir_; }
  int dir_fd() const { return fd_.get(); }

  // Errors (naming the runtime) for a state.json another runtime wrote.
  Record load() const;
  // Only that check, for delete --force, which recovers from a broken state.json.
  void check_ours() const;
  void save(const Record& r) const;
  // The config.json the container was created from.
  spec::Spec config() const;
  void save_config(const std::string& json_text) const;
  // Processes other than husk itself holding exec.fifo open: a waiting init,
  // found without state.json.
  std::vector<pid_t> fifo_holders() const;
  // Remove the directory and everything in it.
  void remove();

 private:
  static Handle open_locked(const Store& store, const std::string& id, bool lock, bool require_state);
  std::string id_, dir_;
  Fd root_fd_, fd_;
};

// What the cgroup driver needs to manage this container's cgroup.
cgroups::Config cgroup_config(const Record& rec);

// The container's cgroup, never one holding husk
// itself: a planted cgroupPath naming the caller's own cgroup or an ancestor
// of it must not get husk and its neighbours frozen, killed or removed.
// A container created without one (no_cgroup) gets Driver::none, whose
// operations fail saying why; null when the record names no cgroup at all.
std::unique_ptr<cgroups::Manager> open_cgroup(const Record& rec);

// Status as callers see it: stopped when the init is gone (or its pid was
// reused), paused when its cgroup is frozen, else the recorded status.
Status live_status(const Record& r);

// A pidfd of the init husk recorded, or an invalid Fd when that process is
// gone: it must still have the recorded start time and sit in the recorded
// cgroup, which must not hold husk itself. A stale or planted state.json can
// never get another process signalled.
Fd open_init(const Record& r);

}  // namespace husk::rt
