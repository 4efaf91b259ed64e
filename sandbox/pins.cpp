// The parents of what is mounted inside a writable tree, pinned: a mount
// goes with its directory when a parent is renamed, so the command could
// move a hidden file's or a --deny-write file's directory aside and rebuild
// it (the next sandbox hides or protects the decoy, the real file shows
// under the new name). A directory bound on itself is a mount point, which
// rename(2) and rmdir(2) refuse (EBUSY). Pure.
#include <algorithm>
#include <map>

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
std::optional<size_t> innermost(const std::vector<std::string>& dests, const std::string& path) {
  std::optional<size_t> best;
  for (size_t i = 0; i < dests.size(); ++i)
    if (base::is_within(path, dests[i]) && (!best || dests[i].size() >= dests[*best].size())) best = i;
  return best;
}

struct Pin {
  std::string dest, source;
  size_t slot;  // the first mount it goes before (its index in the config's list)
};

}  // namespace

void pin_parents(ojson& mounts, const std::function<std::optional<std::string>(const std::string&)>& real) {
  // Read once: a config holds a hundred mounts, each looked at per parent.
  std::vector<std::string> dests;
  for (const auto& m : mounts) dests.push_back(m["destination"]);
  std::map<std::string, Pin> pins;
  std::map<std::string, std::optional<std::string>> dirs;  // each parent looked up once
  for (size_t i = 0; i < dests.size(); ++i) {
    const std::string up = parent(dests[i]);
    if (up.empty()) continue;
    // The directory the mount lands in, a symlink on the way followed as
    // the runtime follows it (--hide link/secret).
    auto dir = dirs.find(up);
    if (dir == dirs.end()) dir = dirs.emplace(up, real(up)).first;
    if (!dir->second) continue;
    const std::optional<size_t> tree = innermost(dests, *dir->second);
    if (!tree || !host_tree(mounts[*tree])) continue;
    // Between the tree's top (a mount point already) and the directory, nothing is mounted.
    const std::string& top = dests[*tree];
    const std::string source = mounts[*tree]["source"];
    for (std::string d = *dir->second; d.size() > top.size(); d = parent(d)) {
      // Bound before the first mount inside it (it carries nothing covered
      // twice), or before this one, which lands there through a symlink.
      size_t slot = i;
      for (size_t j = *tree + 1; j < i; ++j)
        if (base::is_within(dests[j], d)) {
          slot = j;
          break;
        }
      auto [it, made] = pins.emplace(d, Pin{d, source + d.substr(top.size()), slot});
      if (!made) it->second.slot = std::min(it->second.slot, slot);
    }
  }
  if (pins.empty()) return;
  std::vector<Pin> order;
  for (auto& [dest, pin] : pins) order.push_back(std::move(pin));
  // Parents first: a child's slot is never before its parent's.
  std::stable_sort(order.begin(), order.end(), [](const Pin& a, const Pin& b) {
    return a.slot != b.slot ? a.slot < b.slot : depth(a.dest) < depth(b.dest);
  });
  ojson out = ojson::array();
  auto next = order.begin();
  for (size_t i = 0; i < mounts.size(); ++i) {
    for (; next != order.end() && next->slot == i; ++next)
      out.push_back({{"destination", next->dest},
                     {"type", "bind"},
                     {"source", next->source},
                     {"options", {"rbind", "nosuid", "nodev"}}});
    out.push_back(std::move(mounts[i]));
  }
  mounts = std::move(out);
}

}  // namespace husk::rt
