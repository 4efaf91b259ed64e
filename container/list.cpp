#include "container/internal.h"

#include <unistd.h>

#include <algorithm>

#include "base/error.h"
#include "base/file.h"
#include "base/log.h"
#include "container/state.h"
#include "namespaces/id_maps.h"
#include "namespaces/namespaces.h"

namespace husk::rt {

namespace {

// `h` opened without the lock.
spec::State visible_state(const Handle& h, const Record& rec) {
  spec::State s = rec.oci;
  Status live = live_status(rec);
  // Before the init's pid is recorded a create under way looks like one that
  // died: only its lock tells them apart (an engine polling state would
  // delete a container that was about to start).
  if (live == Status::stopped && parse_status(rec.oci.status) == Status::creating && h.held_elsewhere())
    live = Status::creating;
  if (live == Status::stopped) s.pid = 0;
  s.status = status_name(live);
  return s;
}

// runc's OWNER: the name of the uid owning the state, which is the caller
// (Store refuses anyone else's), "#<uid>" when /etc/passwd has none.
std::string state_owner() {
  const uid_t uid = ::geteuid();
  std::string name = ns::passwd_name(base::try_read_file("/etc/passwd").value_or(""), uid);
  return name.empty() ? "#" + std::to_string(uid) : name;
}

}  // namespace

spec::State container_state(const Context& g, const std::string& id) {
  Handle h = Handle::open(Store(g.root), id, false);
  return visible_state(h, h.load());
}

std::vector<spec::State> list_containers(const Context& g) {
  Store store(g.root);
  std::vector<spec::State> states;
  auto ids = store.ids();
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) {
    // A broken container is reported without hiding the others (as runc
    // does); one being created or deleted right now, or another runtime's in
    // a shared root, is passed over silently.
    try {
      Handle h = Handle::open(store, id, false);
      try {
        states.push_back(visible_state(h, h.load()));
      } catch (const Error& e) {
        try {
          h.check_ours();
        } catch (const Error&) {
          continue;
        }
        log::warn(e.what());
      }
    } catch (const Error& e) {
      if (e.err() != ENOENT) log::warn(e.what());
    }
  }
  const std::string owner = state_owner();
  for (auto& s : states)
    if (s.owner.empty()) s.owner = owner;
  return states;
}

}  // namespace husk::rt
