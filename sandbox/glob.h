// Glob patterns in --hide and the settings' deny lists ("**/.env",
// "*.pem", "**/secrets/**"): a pure matcher over path components, and the
// bounded walk that finds the matches on the host (glob_walk.cpp).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace husk::rt {

// Whether a --hide names a pattern rather than a path: '*', '?' or '['
// (unless a path so named exists: that path is meant, as it is written).
bool is_glob(const std::string& text);

// An absolute, lexically clean pattern split at its first component that
// is a pattern: `root` is the literal directory before it, `parts` the
// components from there ("**" any number of components, else fnmatch(3)
// without FNM_PATHNAME or FNM_PERIOD: '*' takes dot-names too). A trailing
// "/**" is dropped and `dirs_only` set: what it names is a directory, hidden
// whole.
struct Glob {
  std::string text;  // as typed, for messages
  std::string root;
  std::vector<std::string> parts;
  bool dirs_only = false;
};
Glob parse_glob(const std::string& typed, const std::string& absolute);

// What a path below g.root (its components) is to the pattern: a match,
// or not yet one but a path below it may be (a directory worth entering).
enum class GlobHit { none, below, match };
GlobHit glob_hit(const Glob& g, const std::vector<std::string>& rel);

// Where the walk for `g` starts: its root, unless that is above some of the
// trees the sandbox shows (`shown`, absolute and clean: the working
// directory, --rw, --ro), which are then walked instead ("/**/*.pem" walks
// them, never the whole host).
std::vector<std::string> glob_walk_roots(const Glob& g, const std::vector<std::string>& shown);

// The walk's bounds, per root: directories at most kGlobMaxDepth below it,
// at most kGlobMaxNames names read. Past them it stops and says so (the
// start fails: what it did not reach would be shown).
constexpr size_t kGlobMaxDepth = 16;
constexpr size_t kGlobMaxNames = 20000;

struct GlobFound {
  std::vector<std::string> paths;  // absolute, in the order found
  bool stopped = false;            // a bound was reached: deeper matches are missed
};
// The matches of `g` below `root` (breadth first), no symlink followed: a
// symlink is a match as itself (hidden as --hide hides it, what it names;
// "dir/**" takes a link named dir too), never entered.
// root itself matches a pattern of no parts ("/dir/**").
GlobFound walk_glob(const Glob& g, const std::string& root);

// The matches of the pattern `typed` (`absolute` once made absolute) that
// `walk` (walk_glob, as the user) finds from glob_walk_roots(g, shown); a
// walk stopped at its bound is an Error naming `flag`, the pattern and the tree.
std::vector<std::string> glob_matches(const std::string& flag, const std::string& typed, const std::string& absolute,
                                      const std::vector<std::string>& shown,
                                      const std::function<GlobFound(const Glob&, const std::string&)>& walk);

}  // namespace husk::rt
