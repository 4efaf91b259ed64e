// Shared inside husk_policy only.
#pragma once

#include <string>

namespace husk::policy {

// "/a//b/./" -> "/a/b"; "" for a path that is not absolute or has "..": a
// host path is judged as written, and ".." through a symlink is not lexical
// (ns::clean_path, for paths inside a container, collapses ".." instead).
std::string plain_path(const std::string& path);

}  // namespace husk::policy
