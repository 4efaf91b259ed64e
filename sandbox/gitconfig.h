// git's config syntax (git-config(1) "CONFIGURATION FILE"), read to find
// the paths a repository's config names: what git runs from there, or reads
// more config from, must be as read-only as the config itself.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace husk::rt {

// One variable: section and key lower-cased (git ignores their case), the
// subsection as written. `value` unquoted and unescaped; `bare`: no "=".
struct GitConfigEntry {
  std::string section, subsection, key, value;
  bool bare = false;
};

// The variables of a config file, in order, up to its first syntax error
// (where git stops with "bad config line").
std::vector<GitConfigEntry> parse_git_config(std::string_view text);

// core.hooksPath values, and include.path / includeIf.*.path values (every
// condition: which one holds is decided at git's run, not here).
struct GitConfigPaths {
  std::vector<std::string> hooks, includes;
};
GitConfigPaths git_config_paths(std::string_view text);

}  // namespace husk::rt
