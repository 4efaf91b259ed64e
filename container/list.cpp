#include "container/internal.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

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

int cmd_state(const Context& g, const std::string& id) {
  Handle h = Handle::open(Store(g.root), id, false);
  std::cout << spec::state_to_json(visible_state(h, h.load()), true) << std::endl;
  return 0;
}


int cmd_list(const Context& g, const std::string& format, bool quiet) {
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
  if (quiet) {
    for (const auto& s : states) std::cout << s.id << "\n";
    return 0;
  }
  if (format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& s : states) arr.push_back(nlohmann::json::parse(spec::state_to_json(s, false)));
    std::cout << arr.dump() << std::endl;
    return 0;
  }
  if (format != "table") throw Error("invalid format option \"" + format + "\"");
  std::vector<std::vector<std::string>> rows{{"ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"}};
  for (const auto& s : states)
    rows.push_back({s.id, std::to_string(s.pid), s.status, s.bundle, s.created, s.owner});
  std::vector<size_t> width(6, 0);
  for (const auto& r : rows)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(width[i] - r[i].size() + 3, ' ');
    }
    std::cout << line << "\n";
  }
  return 0;
}

}  // namespace husk::rt
