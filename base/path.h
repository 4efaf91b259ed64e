// Lexical path relations, shared by every library that compares paths.
#pragma once

#include <string>

namespace husk::base {

// Whether the clean absolute `path` is `dir` or below it ("/a/bc" is not
// below "/a/b"; everything is below "/").
bool is_within(const std::string& path, const std::string& dir);

}  // namespace husk::base
