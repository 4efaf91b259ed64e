// The glob matcher (glob.h): pure, over path components.
#include "sandbox/glob.h"

#include <fnmatch.h>

#include <algorithm>

#include "base/error.h"
#include "base/path.h"

namespace husk::rt {

namespace {

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  for (size_t at = 0; at < path.size();) {
    size_t slash = path.find('/', at);
    if (slash == std::string::npos) slash = path.size();
    if (slash > at) out.push_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  return out;
}

// parts[pi...] against rel[ri...]: whether it matches, and (below) whether
// some longer path starting with rel could.
bool match_from(const std::vector<std::string>& parts, size_t pi, const std::vector<std::string>& rel, size_t ri,
                bool& below) {
  if (ri == rel.size()) {
    for (size_t i = pi; i < parts.size(); ++i)
      if (parts[i] != "**") {
        below = true;
        return false;
      }
    // Only "**" left: this path matches, and so would any below it.
    below |= pi < parts.size();
    return true;
  }
  if (pi == parts.size()) return false;
  if (parts[pi] == "**") return match_from(parts, pi + 1, rel, ri, below) || match_from(parts, pi, rel, ri + 1, below);
  return ::fnmatch(parts[pi].c_str(), rel[ri].c_str(), 0) == 0 && match_from(parts, pi + 1, rel, ri + 1, below);
}

}  // namespace

bool is_glob(const std::string& text) { return text.find_first_of("*?[") != std::string::npos; }

Glob parse_glob(const std::string& typed, const std::string& absolute) {
  Glob g;
  g.text = typed;
  std::vector<std::string> comps = split(absolute);
  if (comps.size() > 1 && comps.back() == "**") {
    comps.pop_back();
    g.dirs_only = true;
  }
  size_t first = 0;
  while (first < comps.size() && !is_glob(comps[first])) ++first;
  g.root = "/";
  for (size_t i = 0; i < first; ++i) g.root += (i ? "/" : "") + comps[i];
  g.parts.assign(comps.begin() + static_cast<std::ptrdiff_t>(first), comps.end());
  for (const auto& p : g.parts)
    if (p.find("**") != std::string::npos && p != "**")
      throw Error(typed + ": '**' is a whole component (a/**/b), not part of a name");
  return g;
}

GlobHit glob_hit(const Glob& g, const std::vector<std::string>& rel) {
  bool below = false;
  if (match_from(g.parts, 0, rel, 0, below)) return GlobHit::match;
  return below ? GlobHit::below : GlobHit::none;
}

std::vector<std::string> glob_walk_roots(const Glob& g, const std::vector<std::string>& shown) {
  std::vector<std::string> inside;
  for (const auto& s : shown) {
    if (base::is_within(g.root, s)) return {g.root};
    if (base::is_within(s, g.root)) inside.push_back(s);
  }
  if (inside.empty()) return {g.root};
  // A shown tree inside another is walked with it.
  std::vector<std::string> out;
  for (const auto& s : inside) {
    bool nested = false;
    for (const auto& t : inside) nested |= t != s && base::is_within(s, t);
    if (!nested && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

std::vector<std::string> glob_matches(const std::string& flag, const std::string& typed, const std::string& absolute,
                                      const std::vector<std::string>& shown,
                                      const std::function<GlobFound(const Glob&, const std::string&)>& walk) {
  const Glob g = parse_glob(typed, absolute);
  std::vector<std::string> out;
  for (const auto& root : glob_walk_roots(g, shown)) {
    GlobFound found = walk(g, root);
    // Matches past the bound would be shown: the command can fill a tree to get there.
    if (found.stopped)
      throw Error(flag + " " + typed + ": the walk of " + root + " stopped at its bound (" +
                  std::to_string(kGlobMaxNames) + " names, " + std::to_string(kGlobMaxDepth) +
                  " levels), so matches past it would be " + (flag == "--hide" ? "shown" : "writable") +
                  ": narrow the pattern (a directory before its first '*') or the tree");
    out.insert(out.end(), found.paths.begin(), found.paths.end());
  }
  return out;
}

}  // namespace husk::rt
