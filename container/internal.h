// What the verbs of container/ share among their files; not part of the
// library's interface (that is commands.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"
#include "base/log.h"
#include "cgroups/cgroups.h"
#include "container/commands.h"
#include "container/state.h"
#include "launch/host_objects.h"
#include "spec/spec.h"

namespace husk::rt {

using base::Fd;

// ---------- bundle.cpp ----------

// `path` made absolute and checked to be a directory; errors name `what`.
std::string absolute_dir(const std::string& path, const char* what);

struct Bundle {
  std::string dir, config_text, rootfs;
  spec::Spec spec;
  HostObjects host;
};

// The bundle's config (`own`: the sandbox's, else config.json is read) and
// every host object it names, opened once: the policy judges those fds and
// create uses them.
Bundle open_bundle(const std::string& bundle_arg, const nlohmann::ordered_json* own = nullptr);

// ---------- delete.cpp ----------

// The record says husk made the cgroup it names.
bool recorded_made(const Record& rec);
// Only a cgroup husk made for this container may be emptied and removed: the
// record says husk made it, the mark that it really did.
bool owns_leaf(const Record& rec, const cgroups::Manager& cg);
// Thaws a paused cgroup after its processes got SIGKILL.
void thaw_killed(cgroups::Manager& cg);
// SIGKILL through pidfds, then wait (bounded) until each is gone.
void kill_and_wait(const std::vector<Fd>& pidfds);
// Kill what is left, remove the cgroup husk made and the state; poststop
// hooks from `spec`, the config when the caller still has it (run), else
// read back. Refused for a running container without `force`.
void destroy_container(Handle& h, Record& rec, bool force, const spec::Spec* spec = nullptr);

// ---------- create.cpp ----------

// A container being made: undone unless commit() is called.
struct Creation {
  Handle handle;
  Record rec;
  spec::Spec spec;
  std::unique_ptr<cgroups::Manager> cgroup;
  bool committed = false;

  Creation(Handle h, spec::Spec s) : handle(std::move(h)), spec(std::move(s)) {}
  void commit() { committed = true; }
  // Kills what the cgroup holds and removes it and the state, unless committed.
  ~Creation();
};


void check_console_flags(const spec::Process& p, const CreateOptions& o, bool detached);
// create, with the console fd already decided (-1: no terminal).
std::unique_ptr<Creation> create_container(const Context& g, const CreateOptions& o, Bundle&& b, int console_fd,
                                           const CreateExtras& extras = {});

// ---------- start.cpp ----------

// Release a created container's init; `spec`: the config when the caller
// still has it (run), else read back. Returns the error of an exec that
// failed after the release (see start()), else "".
std::string start_container(Handle& h, const spec::Spec* spec = nullptr);

}  // namespace husk::rt
