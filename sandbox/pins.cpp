// The parents of what is mounted inside a writable tree, pinned: a mount
// goes with its directory when a parent is renamed, so the command could
// move a hidden file's or a --deny-write file's directory aside and rebuild
// it (the next sandbox hides or protects the decoy, the real file shows
// under the new name). A directory bound on itself is a mount point, which
// rename(2) and rmdir(2) refuse (EBUSY). Pure.
#include <algorithm>
#include <map>
#include <set>

#include "base/path.h"
#include "sandbox/persist.h"

namespace husk::rt {
namespace {

using ojson = nlohmann::ordered_json;

bool has_option(const ojson& m, const char* option) {
  if (!m.contains("options")) return false;
  return std::find(m["options"].begin(), m["options"].end(), option) != m["options"].end();
}

// A writable bind of a host tree (the working directory, --rw, a pinned
// directory): a rename in it is the host's. Not a hidden file's bind (no
// rbind), nor an overlay (its renames stay in the upper layer).
bool host_tree(const ojson& m) {
  return m["type"] == "bind" && has_option(m, "rbind") && !has_option(m, "rro") && !has_option(m, "ro");
}

std::string parent(const std::string& path) { return path.substr(0, path.rfind('/')); }

size_t depth(const std::string& path) { return std::count(path.begin(), path.end(), '/'); }

// The mount on top at `path` or above it: the deepest destination, the last of those.
std::optional<size_t> innermost(const ojson& mounts, const std::string& path) {
  std::optional<size_t> best;
  for (size_t i = 0; i < mounts.size(); ++i) {
    const std::string dest = mounts[i]["destination"];
    if (base::is_within(path, dest) && (!best || dest.size() >= mounts[*best]["destination"].get<std::string>().size()))
      best = i;
  }
  return best;
}

struct Pin {
  std::string dest, source, tree;  // tree: the destination of the writable bind it is in
};

}  // namespace

void pin_parents(ojson& mounts, const std::function<std::optional<std::string>(const std::string&)>& real) {
  std::map<std::string, Pin> pins;
  std::set<std::string> looked;
  for (const auto& m : mounts) {
    const std::string up = parent(m["destination"].get<std::string>());
    if (up.empty() || !looked.insert(up).second) continue;
    // The directory the mount lands in, a symlink on the way followed as
    // the runtime follows it (--hide link/secret).
    const std::optional<std::string> dir = real(up);
    if (!dir) continue;
    const std::optional<size_t> tree = innermost(mounts, *dir);
    if (!tree || !host_tree(mounts[*tree])) continue;
    // Between the tree's top (a mount point already) and `dir`, nothing is mounted.
    const std::string top = mounts[*tree]["destination"], source = mounts[*tree]["source"];
    for (std::string d = *dir; d.size() > top.size(); d = parent(d))
      pins.emplace(d, Pin{d, source + d.substr(top.size()), top});
  }
  std::vector<Pin> order;
  for (auto& [dest, pin] : pins) order.push_back(std::move(pin));
  std::stable_sort(order.begin(), order.end(), [](const Pin& a, const Pin& b) { return depth(a.dest) < depth(b.dest); });
  // Each just before the first mount inside it after its tree's (parents
  // first, so a child's goes after its parent's): bound before them, it
  // carries nothing covered twice.
  for (const auto& p : order) {
    size_t at = 0;
    for (size_t i = 0; i < mounts.size(); ++i)
      if (mounts[i]["destination"] == p.tree && host_tree(mounts[i])) at = i + 1;
    while (at < mounts.size() && !base::is_within(mounts[at]["destination"].get<std::string>(), p.dest)) ++at;
    mounts.insert(mounts.begin() + static_cast<std::ptrdiff_t>(at),
                  ojson{{"destination", p.dest},
                        {"type", "bind"},
                        {"source", p.source},
                        {"options", {"rbind", "nosuid", "nodev"}}});
  }
}

}  // namespace husk::rt
