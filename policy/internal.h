// Shared inside husk_policy only.
#pragma once

#include <string>

namespace husk::policy {

// "/a//b/./" -> "/a/b"; "" for a path that is not absolute or has "..": a
// host path is judged as written, and ".." through a symlink is not lexical.
std::string clean_path(const std::string& path);

}  // namespace husk::policy
